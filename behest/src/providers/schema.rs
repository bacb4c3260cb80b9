//! Normalising passes over a canonical (draft 2020-12) schema, one small
//! function each. A pass that cannot express part of a schema adds a
//! [`Lint`] with the JSON path and the reason.

use serde_json::{json, Map, Value};

use super::lint::Lint;
use crate::validation::required_of;

/// The `format` values JSON Schema defines; others are not sent.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Formats schemars gives Rust numbers: their range is already in
/// `minimum`/`maximum`, so dropping them loses nothing.
const NUMBER_FORMATS: &[&str] = &[
    "int8", "int16", "int32", "int64", "int", "uint8", "uint16", "uint32", "uint64", "uint",
    "float", "double",
];

/// Keywords that hold one subschema.
const SINGLE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords that hold a list of subschemas.
const LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];
/// Keywords that hold a map of subschemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Calls `visit` on every subschema (the root included), depth first, with
/// its JSON Pointer.
pub(crate) fn visit_mut(schema: &mut Value, path: &str, visit: &mut dyn FnMut(&mut Value, &str)) {
    visit(schema, path);
    let Value::Object(object) = schema else {
        return;
    };
    for (key, child) in object.iter_mut() {
        let key_path = format!("{path}/{}", escape(key));
        if SINGLE.contains(&key.as_str()) {
            visit_mut(child, &key_path, visit);
        } else if LISTS.contains(&key.as_str()) {
            if let Value::Array(items) = child {
                for (index, item) in items.iter_mut().enumerate() {
                    visit_mut(item, &format!("{key_path}/{index}"), visit);
                }
            }
        } else if MAPS.contains(&key.as_str()) {
            if let Value::Object(members) = child {
                for (name, member) in members.iter_mut() {
                    visit_mut(member, &format!("{key_path}/{}", escape(name)), visit);
                }
            }
        }
    }
}

fn escape(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Common clean-up for every provider: no root `$schema` or `title`, and no
/// `format` a provider does not know (a Rust number format goes silently:
/// its range is in `minimum`/`maximum`; others move to the description).
pub fn common(schema: &mut Value, lints: &mut Vec<Lint>) {
    if let Value::Object(root) = schema {
        root.remove("$schema");
        root.remove("title");
        match root.get("type") {
            Some(Value::String(kind)) if kind == "object" => {}
            _ => lints.push(Lint::error(
                "",
                "the root of a tool's input schema must be an object",
            )),
        }
    }
    visit_mut(schema, "", &mut |node, path| {
        let Value::Object(object) = node else { return };
        let Some(Value::String(format)) = object.get("format").cloned() else {
            return;
        };
        if STANDARD_FORMATS.contains(&format.as_str()) {
            return;
        }
        object.remove("format");
        if NUMBER_FORMATS.contains(&format.as_str()) {
            return;
        }
        let note = format!("Format: {format}.");
        let description = match object.get("description").and_then(Value::as_str) {
            Some(text) => format!("{text} {note}"),
            None => note,
        };
        object.insert("description".to_owned(), Value::String(description));
        lints.push(Lint::warning(
            format!("{path}/format"),
            format!("non-standard format `{format}` moved into the description"),
        ));
    });
}

/// Replaces every local `$ref` by what it points to, so that the schema
/// needs no `$defs`. Meaning-preserving: a `$ref` with sibling keywords
/// becomes an `allOf` of the target, which is what `$ref` means in draft
/// 2020-12. Refuses, with an error lint, what cannot be inlined faithfully:
/// recursion, references outside the document, `$id`, `$anchor` and
/// `$dynamicRef`.
pub fn inline_refs(schema: &mut Value, lints: &mut Vec<Lint>) {
    let root = schema.clone();
    let before = lints.len();
    let mut scan = |node: &mut Value, path: &str| {
        let Value::Object(object) = node else { return };
        for keyword in ["$dynamicRef", "$dynamicAnchor", "$anchor", "$recursiveRef"] {
            if object.contains_key(keyword) {
                lints.push(Lint::error(path, format!("`{keyword}` cannot be inlined")));
            }
        }
        if !path.is_empty() && object.contains_key("$id") {
            lints.push(Lint::error(
                path,
                "a nested `$id` changes how references resolve; it cannot be inlined",
            ));
        }
    };
    visit_mut(schema, "", &mut scan);
    if lints.len() > before {
        return;
    }
    let mut stack = Vec::new();
    inline_node(schema, "", &root, &mut stack, lints);
    if lints.len() == before {
        if let Value::Object(object) = schema {
            object.remove("$defs");
            object.remove("definitions");
        }
    }
}

fn inline_node(
    node: &mut Value,
    path: &str,
    root: &Value,
    stack: &mut Vec<String>,
    lints: &mut Vec<Lint>,
) {
    if let Value::Object(object) = node {
        if let Some(Value::String(reference)) = object.get("$ref").cloned() {
            let Some(target) = resolve(root, &reference) else {
                lints.push(Lint::error(
                    format!("{path}/$ref"),
                    format!("`{reference}` is not a reference inside this schema"),
                ));
                return;
            };
            if stack.contains(&reference) {
                lints.push(Lint::error(
                    format!("{path}/$ref"),
                    format!("`{reference}` is recursive; a recursive type cannot be inlined"),
                ));
                return;
            }
            stack.push(reference);
            let mut target = target.clone();
            inline_node(&mut target, path, root, stack, lints);
            stack.pop();
            object.remove("$ref");
            if object.is_empty() {
                *node = target;
                return;
            }
            match object.get_mut("allOf") {
                Some(Value::Array(all)) => all.push(target),
                _ => {
                    object.insert("allOf".to_owned(), Value::Array(vec![target]));
                }
            }
        }
    }
    // Recurse into the subschemas (not into `$defs`: they are inlined where used).
    let Value::Object(object) = node else { return };
    for (key, child) in object.iter_mut() {
        let key_path = format!("{path}/{}", escape(key));
        if key == "$defs" || key == "definitions" {
            continue;
        }
        if SINGLE.contains(&key.as_str()) {
            inline_node(child, &key_path, root, stack, lints);
        } else if LISTS.contains(&key.as_str()) {
            if let Value::Array(items) = child {
                for (index, item) in items.iter_mut().enumerate() {
                    inline_node(item, &format!("{key_path}/{index}"), root, stack, lints);
                }
            }
        } else if MAPS.contains(&key.as_str()) {
            if let Value::Object(members) = child {
                for (name, member) in members.iter_mut() {
                    inline_node(
                        member,
                        &format!("{key_path}/{}", escape(name)),
                        root,
                        stack,
                        lints,
                    );
                }
            }
        }
    }
}

/// The target of a local reference: `#`, or `#/json/pointer` with JSON
/// Pointer and percent escapes.
fn resolve<'r>(root: &'r Value, reference: &str) -> Option<&'r Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.starts_with('/') {
        return None;
    }
    root.pointer(&percent_decode(pointer)?)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The string formats OpenAI's strict mode documents.
const OPENAI_STRICT_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Validation keywords strict mode does not take; left out of the export
/// with a warning, since the runtime still enforces them.
const OPENAI_STRICT_UNCHECKED: &[&str] = &[
    "uniqueItems",
    "minLength",
    "maxLength",
    "contains",
    "minContains",
    "maxContains",
    "minProperties",
    "maxProperties",
    "propertyNames",
    "unevaluatedItems",
];

/// OpenAI strict mode: every object closed and every property required,
/// optional properties nullable, no `default`, `oneOf` as `anyOf`, a single
/// `allOf` merged. Structure strict mode cannot express (tuples, arrays
/// without `items`, schemas without a type, composition) is an error lint;
/// validation keywords and formats it does not document are left out with
/// a warning, the runtime still enforcing them.
pub fn openai_strict(schema: &mut Value, lints: &mut Vec<Lint>) {
    inline_refs_with_siblings(schema, lints);
    if schema.get("anyOf").is_some() || schema.get("oneOf").is_some() {
        lints.push(Lint::error(
            "",
            "strict mode needs an object at the root, not `anyOf`",
        ));
    }
    let mut properties = 0usize;
    let mut enum_values = 0usize;
    visit_mut(schema, "", &mut |node, path| {
        let Value::Object(object) = node else {
            if !path.ends_with("/additionalProperties") {
                lints.push(Lint::error(
                    path,
                    "strict mode takes no boolean schemas (`true`/`false`)",
                ));
            }
            return;
        };
        object.remove("default");
        merge_single_all_of(object);
        one_of_as_any_of(object, path, lints);
        for keyword in [
            "allOf",
            "not",
            "if",
            "then",
            "else",
            "dependentRequired",
            "dependentSchemas",
            "patternProperties",
            "unevaluatedProperties",
        ] {
            if object.contains_key(keyword) {
                lints.push(Lint::error(
                    format!("{path}/{keyword}"),
                    format!("`{keyword}` is not allowed in strict mode"),
                ));
            }
        }
        openai_strict_shape(object, path, lints);
        for keyword in OPENAI_STRICT_UNCHECKED {
            if object.remove(*keyword).is_some() {
                lints.push(Lint::warning(
                    format!("{path}/{keyword}"),
                    format!("`{keyword}` is not supported in strict mode and was left out (the runtime still checks it)"),
                ));
            }
        }
        if let Some(Value::String(format)) = object.get("format").cloned() {
            if !OPENAI_STRICT_FORMATS.contains(&format.as_str()) {
                object.remove("format");
                append_description(object, &format!("Format: {format}."));
                lints.push(Lint::warning(
                    format!("{path}/format"),
                    format!("strict mode does not take the format `{format}`: moved into the description"),
                ));
            }
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            enum_values += values.len();
        }
        if is_object_schema(object) {
            match object.get("additionalProperties") {
                Some(Value::Object(_)) => lints.push(Lint::error(
                    format!("{path}/additionalProperties"),
                    "map type is not allowed in strict mode",
                )),
                Some(Value::Bool(false)) => {}
                other => {
                    if other.is_some() {
                        lints.push(Lint::warning(
                            format!("{path}/additionalProperties"),
                            "strict mode closes every object: the model cannot send the unknown properties this schema allows",
                        ));
                    }
                    object.insert("additionalProperties".to_owned(), Value::Bool(false));
                }
            }
            let required: Vec<String> = required_of(object).map(str::to_owned).collect();
            let mut all = Vec::new();
            if let Some(Value::Object(members)) = object.get_mut("properties") {
                properties += members.len();
                for (name, member) in members.iter_mut() {
                    if !required.contains(name) {
                        make_nullable(member);
                    }
                    all.push(Value::String(name.clone()));
                }
            }
            object.insert("required".to_owned(), Value::Array(all));
        }
    });
    if properties > 5000 {
        lints.push(Lint::error(
            "",
            format!("{properties} properties; strict mode allows 5000"),
        ));
    }
    if enum_values > 1000 {
        lints.push(Lint::error(
            "",
            format!("{enum_values} enum values; strict mode allows 1000"),
        ));
    }
    let depth = object_depth(schema);
    if depth > 10 {
        lints.push(Lint::error(
            "",
            format!("objects nested {depth} levels deep; strict mode allows 10"),
        ));
    }
}

/// Strict mode takes a `$ref` only alone: one with sibling keywords (a
/// field's description, say) becomes its target with the siblings merged in.
fn inline_refs_with_siblings(schema: &mut Value, lints: &mut Vec<Lint>) {
    let root = schema.clone();
    visit_mut(schema, "", &mut |node, path| {
        let Value::Object(object) = node else { return };
        if object.len() < 2 {
            return;
        }
        let Some(Value::String(reference)) = object.get("$ref").cloned() else {
            return;
        };
        let Some(Value::Object(target)) = resolve(&root, &reference) else {
            lints.push(Lint::error(
                format!("{path}/$ref"),
                format!("`{reference}` cannot be resolved"),
            ));
            return;
        };
        if is_recursive(&root, &reference) {
            // Inlining would never end: the `$ref` stays, alone, as strict
            // mode takes it; a description next to it is dropped.
            let siblings: Vec<String> = object.keys().filter(|k| *k != "$ref").cloned().collect();
            for key in siblings {
                if !ANNOTATIONS.contains(&key.as_str()) {
                    lints.push(Lint::error(
                        format!("{path}/{key}"),
                        format!("`{key}` next to the recursive `{reference}` cannot be expressed in strict mode"),
                    ));
                }
                object.remove(&key);
            }
            return;
        }
        object.remove("$ref");
        for (key, value) in target {
            match object.get(key) {
                None => {
                    object.insert(key.clone(), value.clone());
                }
                Some(existing) if existing == value || ANNOTATIONS.contains(&key.as_str()) => {}
                Some(_) => lints.push(Lint::error(
                    format!("{path}/{key}"),
                    format!("`{key}` is given both next to `$ref` and in `{reference}`"),
                )),
            }
        }
    });
}

/// Whether the schema `reference` points to refers back to it, directly or
/// through other references.
fn is_recursive(root: &Value, reference: &str) -> bool {
    let mut pending = vec![reference.to_owned()];
    let mut seen: Vec<String> = Vec::new();
    while let Some(current) = pending.pop() {
        if seen.contains(&current) {
            continue;
        }
        let Some(target) = resolve(root, &current) else {
            continue;
        };
        seen.push(current);
        let mut stack = vec![target];
        while let Some(node) = stack.pop() {
            match node {
                Value::Object(object) => {
                    if let Some(Value::String(inner)) = object.get("$ref") {
                        if inner == reference {
                            return true;
                        }
                        pending.push(inner.clone());
                    }
                    stack.extend(object.values());
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }
    false
}

/// Keywords that describe and do not validate.
pub(crate) const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

fn is_object_schema(object: &Map<String, Value>) -> bool {
    admits_type(object, "object") || object.contains_key("properties")
}

/// Whether the schema's `type` (one, or a list) names `kind`.
fn admits_type(object: &Map<String, Value>, kind: &str) -> bool {
    match object.get("type") {
        Some(Value::String(one)) => one == kind,
        Some(Value::Array(kinds)) => kinds.iter().any(|one| one == kind),
        _ => false,
    }
}

/// Whether the schema has one of `keywords`.
fn has_any(object: &Map<String, Value>, keywords: &[&str]) -> bool {
    keywords.iter().any(|keyword| object.contains_key(*keyword))
}

/// What strict mode needs of every schema's structure: a type (or a
/// combinator, an enum, a constant or a reference), `items` on arrays, no
/// tuples.
fn openai_strict_shape(object: &Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    if !has_any(object, &["type", "anyOf", "enum", "const", "$ref"]) {
        lints.push(Lint::error(
            path,
            "strict mode needs a type for every schema; any JSON value (`serde_json::Value`) cannot be expressed",
        ));
    }
    if object.contains_key("prefixItems") {
        lints.push(Lint::error(
            format!("{path}/prefixItems"),
            "strict mode has no tuples (`prefixItems`); use a struct",
        ));
    }
    if admits_type(object, "array")
        && !object.get("items").is_some_and(Value::is_object)
        && !object.contains_key("prefixItems")
    {
        lints.push(Lint::error(
            path,
            "strict mode needs `items` on every array",
        ));
    }
}

/// `oneOf` as `anyOf`, which the providers take. The same when the branches
/// cannot overlap, as for tagged enums (each branch has its own `const` or
/// `enum` tag); otherwise a warning: the runtime still checks `oneOf`.
fn one_of_as_any_of(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    let Some(one_of) = object.remove("oneOf") else {
        return;
    };
    if !branches_are_tagged(&one_of) && !branches_differ_in_type(&one_of) {
        lints.push(Lint::warning(
            format!("{path}/oneOf"),
            "`oneOf` sent as `anyOf`: a value matching several branches is no longer refused by the schema (the runtime still refuses it)",
        ));
    }
    object.insert("anyOf".to_owned(), one_of);
}

/// Whether every branch has one `type`, all different (`integer` and
/// `number` overlap, so they count as one).
fn branches_differ_in_type(branches: &Value) -> bool {
    let Some(branches) = branches.as_array() else {
        return false;
    };
    let mut seen = Vec::new();
    branches.iter().all(|branch| {
        let Some(kind) = branch.get("type").and_then(Value::as_str) else {
            return false;
        };
        let kind = if kind == "integer" { "number" } else { kind };
        let fresh = !seen.contains(&kind);
        seen.push(kind);
        fresh
    })
}

/// Whether some property holds a distinct `const` (or one-value `enum`) in
/// every branch, so that no value matches two branches.
fn branches_are_tagged(branches: &Value) -> bool {
    let Some(branches) = branches.as_array() else {
        return false;
    };
    let tag_of = |branch: &Value, name: &str| -> Option<Value> {
        let property = branch.get("properties")?.get(name)?;
        let required = branch
            .get("required")?
            .as_array()?
            .iter()
            .any(|n| n == name);
        let tag = property.get("const").cloned().or_else(|| {
            property
                .get("enum")?
                .as_array()
                .filter(|values| values.len() == 1)?
                .first()
                .cloned()
        })?;
        required.then_some(tag)
    };
    let Some(first) = branches
        .first()
        .and_then(|b| b.get("properties"))
        .and_then(Value::as_object)
    else {
        // Unit variants of an enum: `oneOf` of `const`s (or of one-value enums).
        let constants: Vec<Option<&Value>> = branches.iter().map(|b| b.get("const")).collect();
        return constants.iter().all(Option::is_some) && {
            let mut seen = Vec::new();
            constants.into_iter().flatten().all(|c| {
                let fresh = !seen.contains(&c);
                seen.push(c);
                fresh
            })
        };
    };
    first.keys().any(|name| {
        let tags: Vec<Option<Value>> = branches.iter().map(|b| tag_of(b, name)).collect();
        tags.iter().all(Option::is_some) && {
            let mut seen = Vec::new();
            tags.into_iter().flatten().all(|tag| {
                let fresh = !seen.contains(&tag);
                seen.push(tag);
                fresh
            })
        }
    })
}

/// `allOf: [one]` folded into its parent when their keywords do not clash.
fn merge_single_all_of(object: &mut Map<String, Value>) {
    let Some(Value::Array(all)) = object.get("allOf") else {
        return;
    };
    let [Value::Object(only)] = all.as_slice() else {
        return;
    };
    // An annotation such as `description` may be on both: the parent's wins.
    let clash = |key: &String| object.contains_key(key) && !ANNOTATIONS.contains(&key.as_str());
    if only.keys().any(clash) {
        return;
    }
    let only = only.clone();
    object.remove("allOf");
    for (key, value) in only {
        object.entry(key).or_insert(value);
    }
}

/// Lets a schema also accept `null`.
fn make_nullable(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    match object.get_mut("type") {
        Some(Value::String(kind)) if kind != "null" => {
            let kind = std::mem::take(kind);
            object.insert("type".to_owned(), json!([kind, "null"]));
        }
        Some(Value::Array(kinds)) if !kinds.contains(&json!("null")) => kinds.push(json!("null")),
        Some(_) => {}
        None => {
            if let Some(Value::Array(branches)) = object.get_mut("anyOf") {
                if !branches
                    .iter()
                    .any(|b| b.get("type") == Some(&json!("null")))
                {
                    branches.push(json!({"type": "null"}));
                }
                return;
            }
            let inner = std::mem::take(object);
            object.insert(
                "anyOf".to_owned(),
                json!([Value::Object(inner), {"type": "null"}]),
            );
            return;
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        if !values.contains(&Value::Null) {
            values.push(Value::Null);
        }
    }
}

/// How deeply objects nest (the root object is 1).
fn object_depth(schema: &Value) -> usize {
    let Value::Object(object) = schema else {
        return 0;
    };
    let own = usize::from(is_object_schema(object));
    let mut deepest = 0;
    for (key, child) in object {
        let children: Vec<&Value> = if SINGLE.contains(&key.as_str()) {
            vec![child]
        } else if LISTS.contains(&key.as_str()) {
            child
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default()
        } else if MAPS.contains(&key.as_str()) {
            child
                .as_object()
                .map(|m| m.values().collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for child in children {
            deepest = deepest.max(object_depth(child));
        }
    }
    own + deepest
}

/// Anthropic: the schema nearly as is, but no combinator at the root, and
/// property names that match `^[a-zA-Z0-9_.-]{1,64}$` (the API refuses
/// others at the root; nested ones, in `$defs` too, are checked as well,
/// since a later tightening would break the tool without notice).
pub fn anthropic(schema: &mut Value, lints: &mut Vec<Lint>) {
    if let Value::Object(root) = schema {
        for keyword in ["anyOf", "oneOf", "allOf"] {
            if root.contains_key(keyword) {
                lints.push(Lint::error(
                    format!("/{keyword}"),
                    format!("`{keyword}` is not allowed at the root of an Anthropic tool schema"),
                ));
            }
        }
    }
    visit_mut(schema, "", &mut |node, path| {
        let Some(Value::Object(properties)) = node.get("properties") else {
            return;
        };
        for name in properties
            .keys()
            .filter(|name| !anthropic_property_name(name))
        {
            let at = format!("{path}/properties/{}", escape(name));
            let reason = format!("Anthropic takes property names that match `^[a-zA-Z0-9_.-]{{1,64}}$`; rename `{name}` (e.g. `#[serde(rename = \"...\")]` or `#[arg(rename = \"...\")]`)");
            lints.push(if path.is_empty() {
                Lint::error(at, reason)
            } else {
                Lint::warning(at, reason)
            });
        }
    });
}

fn anthropic_property_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
}

/// The fields of Gemini's `Schema` (a function declaration's
/// `parameters`) that behest sends; Gemini refuses every other one.
const GEMINI_FIELDS: &[&str] = &[
    "type",
    "format",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "anyOf",
    "propertyOrdering",
    "items",
    "minimum",
    "maximum",
];

/// The string formats Gemini takes.
const GEMINI_STRING_FORMATS: &[&str] = &["enum", "date-time"];

/// Keywords that only describe: left out without a word.
const DROPPED_QUIETLY: &[&str] = &[
    "title",
    "$schema",
    "$comment",
    "examples",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Gemini's OpenAPI subset: references inlined, one type plus `nullable`,
/// `anyOf` for `oneOf`, `enum` (of strings, with `"type": "string"`) for
/// `const`, integer exclusive bounds as inclusive ones, tuples as arrays of
/// their item types, and then an allow-list: every field Gemini's `Schema`
/// does not have is left out, with a warning when it validates (the
/// runtime still checks it). Objects need properties; every schema needs a
/// type.
pub fn gemini(schema: &mut Value, lints: &mut Vec<Lint>) {
    inline_refs(schema, lints);
    visit_mut(schema, "", &mut |node, path| {
        let Value::Object(object) = node else {
            lints.push(Lint::error(
                path,
                "Gemini needs a typed schema here, not `true`/`false`; any JSON value (`serde_json::Value`) cannot be expressed",
            ));
            return;
        };
        for keyword in DROPPED_QUIETLY {
            object.remove(*keyword);
        }
        // Merged and folded first: an inlined `$ref` with a sibling
        // description is an `allOf`, an `Option` an `anyOf` with `null`,
        // whose target may hold `oneOf` or `const` to rewrite below.
        merge_single_all_of(object);
        fold_nullable_any_of(object);
        merge_single_all_of(object);
        one_of_as_any_of(object, path, lints);
        if let Some(constant) = object.remove("const") {
            object.insert("enum".to_owned(), Value::Array(vec![constant]));
        }
        gemini_one_type(object, path, lints);
        gemini_enum(object, path, lints);
        inclusive_integer_bounds(object);
        tuple_as_array(object, path, lints);
        gemini_format(object, path, lints);
        let empty_object = object.get("type") == Some(&json!("object"))
            && object
                .get("properties")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
        if empty_object && !path.is_empty() {
            lints.push(Lint::error(
                path,
                "Gemini objects need declared properties; a map type cannot be expressed",
            ));
        }
        // A `$ref` left here could not be inlined, which is reported already.
        if !has_any(object, &["type", "anyOf", "enum", "$ref"]) {
            lints.push(Lint::error(
                path,
                "Gemini needs a type for every schema; any JSON value (`serde_json::Value`) cannot be expressed",
            ));
        }
        keep_gemini_fields(object, path, lints);
    });
}

/// A type array as one type plus `nullable`.
fn gemini_one_type(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    let Some(Value::Array(kinds)) = object.get("type").cloned() else {
        return;
    };
    let non_null: Vec<&Value> = kinds.iter().filter(|k| *k != "null").collect();
    match non_null.as_slice() {
        [single] => {
            object.insert("type".to_owned(), (*single).clone());
            if non_null.len() < kinds.len() {
                object.insert("nullable".to_owned(), Value::Bool(true));
            }
        }
        _ => lints.push(Lint::error(
            format!("{path}/type"),
            "Gemini takes one type per schema",
        )),
    }
}

/// Enums hold strings, under `"type": "string"`; `null` among them is
/// `nullable`.
fn gemini_enum(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    let Some(Value::Array(values)) = object.get_mut("enum") else {
        return;
    };
    if values.contains(&Value::Null) {
        values.retain(|v| !v.is_null());
        object.insert("nullable".to_owned(), Value::Bool(true));
    }
    let Some(Value::Array(values)) = object.get("enum") else {
        return;
    };
    if values.iter().any(|v| !v.is_string()) {
        lints.push(Lint::error(
            format!("{path}/enum"),
            "Gemini enums hold strings only",
        ));
        return;
    }
    match object.get("type") {
        None => {
            object.insert("type".to_owned(), json!("string"));
        }
        Some(kind) if kind == "string" => {}
        Some(_) => lints.push(Lint::error(
            format!("{path}/enum"),
            "Gemini takes `enum` on strings only",
        )),
    }
}

/// `exclusiveMinimum: n` on an integer is `minimum: n + 1` (and likewise
/// for the maximum): the same integers, in a keyword Gemini has.
fn inclusive_integer_bounds(object: &mut Map<String, Value>) {
    if object.get("type") != Some(&json!("integer")) {
        return;
    }
    for (exclusive, inclusive, step) in [
        ("exclusiveMinimum", "minimum", 1i64),
        ("exclusiveMaximum", "maximum", -1),
    ] {
        let Some(bound) = object.get(exclusive).and_then(Value::as_i64) else {
            continue;
        };
        let Some(moved) = bound.checked_add(step) else {
            continue;
        };
        let tighter = match object.get(inclusive).and_then(Value::as_f64) {
            Some(current) if step > 0 => (moved as f64) > current,
            Some(current) => (moved as f64) < current,
            None => true,
        };
        object.remove(exclusive);
        if tighter {
            object.insert(inclusive.to_owned(), json!(moved));
        }
    }
}

/// A tuple (`prefixItems`) as an array of its item types, of its length:
/// looser than the tuple, which the runtime still checks.
fn tuple_as_array(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    let Some(Value::Array(prefix)) = object.remove("prefixItems") else {
        return;
    };
    let closed = matches!(object.get("items"), Some(Value::Bool(false)));
    let mut branches: Vec<Value> = Vec::new();
    for item in prefix
        .iter()
        .chain(object.get("items").filter(|i| i.is_object()))
    {
        if !branches.contains(item) {
            branches.push(item.clone());
        }
    }
    let items = match branches.as_slice() {
        [only] => only.clone(),
        _ => json!({"anyOf": branches}),
    };
    object.insert("items".to_owned(), items);
    object.insert("minItems".to_owned(), json!(prefix.len()));
    if closed {
        object.insert("maxItems".to_owned(), json!(prefix.len()));
    }
    lints.push(Lint::warning(
        format!("{path}/prefixItems"),
        "Gemini has no tuples: sent as an array of the tuple's item types (the runtime still checks each position)",
    ));
}

/// Gemini takes `enum` and `date-time` as string formats; another goes
/// into the description.
fn gemini_format(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    let Some(Value::String(format)) = object.get("format").cloned() else {
        return;
    };
    if GEMINI_STRING_FORMATS.contains(&format.as_str()) {
        return;
    }
    object.remove("format");
    append_description(object, &format!("Format: {format}."));
    lints.push(Lint::warning(
        format!("{path}/format"),
        format!("Gemini does not take the format `{format}`: moved into the description"),
    ));
}

fn append_description(object: &mut Map<String, Value>, note: &str) {
    let description = match object.get("description").and_then(Value::as_str) {
        Some(text) => format!("{text} {note}"),
        None => note.to_owned(),
    };
    object.insert("description".to_owned(), Value::String(description));
}

/// Leaves out every field Gemini's `Schema` does not have.
fn keep_gemini_fields(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
    let unknown: Vec<String> = object
        .keys()
        .filter(|key| !GEMINI_FIELDS.contains(&key.as_str()))
        .cloned()
        .collect();
    for keyword in unknown {
        let value = object.remove(&keyword);
        // A closed object is what Gemini sends anyway; a map's value
        // schema or any other validation keyword is still checked by the
        // runtime.
        let declared = object
            .get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| !properties.is_empty());
        if keyword == "additionalProperties" && (value == Some(Value::Bool(false)) || !declared) {
            // A map without properties is already refused above.
            continue;
        }
        lints.push(Lint::warning(
            format!("{path}/{}", escape(&keyword)),
            format!("`{keyword}` is not supported by Gemini and was left out (the runtime still checks it)"),
        ));
    }
}

/// `anyOf: [X, {type: null}]` as `X` with `nullable: true`.
fn fold_nullable_any_of(object: &mut Map<String, Value>) {
    let Some(Value::Array(branches)) = object.get("anyOf") else {
        return;
    };
    let is_null = |b: &Value| b.get("type") == Some(&json!("null"));
    if branches.len() != 2 || branches.iter().filter(|b| is_null(b)).count() != 1 {
        return;
    }
    let Some(Value::Object(other)) = branches.iter().find(|b| !is_null(b)).cloned() else {
        return;
    };
    // An annotation such as `description` may be on both: the parent's wins.
    let clash = |key: &String| {
        object.contains_key(key) && key != "anyOf" && !ANNOTATIONS.contains(&key.as_str())
    };
    if other.keys().any(clash) {
        return;
    }
    object.remove("anyOf");
    for (key, value) in other {
        object.entry(key).or_insert(value);
    }
    object.insert("nullable".to_owned(), Value::Bool(true));
}

/// MCP: an output schema must describe an object, and a result's
/// `structuredContent` must be an object that validates against it.
/// [`mcp::call_result`](super::mcp::call_result) sends an object value as
/// it is and wraps any other value as `{"result": ..}`; this schema says
/// the same, whatever the output type:
///
/// - a schema of objects only (`"type": "object"`) is kept;
/// - a schema of no objects (`"type": "integer"`, `"array"`, …) is wrapped:
///   `{"type": "object", "properties": {"result": S}, "required": ["result"]}`;
/// - a schema that admits objects and other values (`Option<Struct>`, an
///   enum whose variants are objects or strings, a schema with no `type`)
///   takes both forms: `{"type": "object", "anyOf": [S, wrapped S]}`.
///
/// Returns the schema and whether it changed.
pub fn mcp_output_schema(schema: &Value) -> (Value, bool) {
    let objects = match schema.get("type") {
        Some(Value::String(kind)) => Some(kind == "object"),
        Some(Value::Array(kinds)) if !kinds.iter().any(|kind| kind == "object") => Some(false),
        _ => None,
    };
    if objects == Some(true) {
        return (schema.clone(), false);
    }
    let mut inner = schema.clone();
    let mut defs = None;
    if let Value::Object(object) = &mut inner {
        object.remove("$schema");
        object.remove("$id");
        defs = object.remove("$defs");
    }
    let result = json!({
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    });
    let mut wrapped = if objects == Some(false) {
        result
    } else {
        json!({"type": "object", "anyOf": [inner, result]})
    };
    if let Some(defs) = defs {
        wrapped["$defs"] = defs;
    }
    (wrapped, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(pass: fn(&mut Value, &mut Vec<Lint>), mut schema: Value) -> (Value, Vec<String>) {
        let mut lints = Vec::new();
        pass(&mut schema, &mut lints);
        (schema, lints.iter().map(ToString::to_string).collect())
    }

    #[test]
    fn common_drops_root_noise_and_unknown_formats() {
        let (schema, lints) = run(
            common,
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "title": "Args",
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "format": "uint32", "minimum": 0},
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "format": "snowflake", "description": "The id."}
                }
            }),
        );
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0},
                    "when": {"type": "string", "format": "date-time"},
                    "id": {"type": "string", "description": "The id. Format: snowflake."}
                }
            })
        );
        assert_eq!(lints, ["non-standard format `snowflake` moved into the description at /properties/id/format"]);
        let (_, lints) = run(common, json!({"type": "string"}));
        assert_eq!(
            lints,
            ["the root of a tool's input schema must be an object at /"]
        );
    }

    #[test]
    fn inlining_replaces_references_and_keeps_siblings_as_all_of() {
        let (schema, lints) = run(
            inline_refs,
            json!({
                "type": "object",
                "properties": {
                    "a": {"$ref": "#/$defs/A"},
                    "b": {"$ref": "#/$defs/A", "description": "B."}
                },
                "$defs": {"A": {"type": "string"}}
            }),
        );
        assert!(lints.is_empty(), "{lints:?}");
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string"},
                    "b": {"description": "B.", "allOf": [{"type": "string"}]}
                }
            })
        );
    }

    #[test]
    fn inlining_refuses_recursion_and_outside_references() {
        let (_, lints) = run(
            inline_refs,
            json!({"type": "object", "properties": {"n": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"type": "object", "properties": {"next": {"$ref": "#/$defs/N"}}}}}),
        );
        assert_eq!(lints, ["`#/$defs/N` is recursive; a recursive type cannot be inlined at /properties/n/properties/next/$ref"]);
        let (_, lints) = run(inline_refs, json!({"$ref": "https://example.com/s.json"}));
        assert_eq!(
            lints,
            ["`https://example.com/s.json` is not a reference inside this schema at /$ref"]
        );
    }

    #[test]
    fn strict_mode_closes_objects_and_makes_optional_fields_nullable() {
        let (schema, lints) = run(
            openai_strict,
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": "integer", "default": 3},
                    "mode": {"enum": ["car", "train"], "type": "string"},
                    "shape": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
                },
                "required": ["city", "shape"]
            }),
        );
        assert!(lints.is_empty(), "{lints:?}");
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "city": {"type": "string"},
                    "days": {"type": ["integer", "null"]},
                    "mode": {"enum": ["car", "train", null], "type": ["string", "null"]},
                    "shape": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
                },
                "required": ["city", "days", "mode", "shape"]
            })
        );
    }

    #[test]
    fn strict_mode_reports_what_it_cannot_express() {
        let (_, lints) = run(
            openai_strict,
            json!({
                "type": "object",
                "properties": {
                    "tags": {"type": "object", "additionalProperties": {"type": "string"}},
                    "odd": {"not": {"type": "null"}}
                },
                "required": ["tags", "odd"]
            }),
        );
        assert_eq!(
            lints,
            [
                "`not` is not allowed in strict mode at /properties/odd/not",
                "strict mode needs a type for every schema; any JSON value (`serde_json::Value`) cannot be expressed at /properties/odd",
                "map type is not allowed in strict mode at /properties/tags/additionalProperties",
            ]
        );
        let deep = (0..11).fold(
            json!({"type": "string"}),
            |inner, _| json!({"type": "object", "properties": {"x": inner}, "required": ["x"]}),
        );
        let (_, lints) = run(openai_strict, deep);
        assert_eq!(
            lints,
            ["objects nested 11 levels deep; strict mode allows 10 at /"]
        );
    }

    #[test]
    fn one_of_becomes_any_of_with_a_warning_only_when_branches_can_overlap() {
        let tagged = json!({"type": "object", "properties": {"to": {"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "email"}}, "required": ["kind"]},
            {"type": "object", "properties": {"kind": {"const": "team"}}, "required": ["kind"]}
        ]}}, "required": ["to"]});
        let (schema, lints) = run(openai_strict, tagged);
        assert!(lints.is_empty(), "{lints:?}");
        assert!(schema.pointer("/properties/to/anyOf").is_some());
        let overlapping = json!({"type": "object", "properties": {"n": {"oneOf": [
            {"type": "integer", "minimum": 0}, {"type": "number", "maximum": 10}
        ]}}, "required": ["n"]});
        let (_, lints) = run(openai_strict, overlapping);
        assert_eq!(lints.len(), 1);
        assert!(lints[0].starts_with("`oneOf` sent as `anyOf`"), "{lints:?}");
    }

    #[test]
    fn anthropic_refuses_root_combinators() {
        let (_, lints) = run(
            anthropic,
            json!({"type": "object", "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}),
        );
        assert_eq!(
            lints,
            ["`anyOf` is not allowed at the root of an Anthropic tool schema at /anyOf"]
        );
    }

    #[test]
    fn strict_mode_keeps_a_recursive_ref_with_a_description_alone() {
        let schema = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Expr", "description": "The root."}},
            "required": ["root"],
            "$defs": {"Expr": {
                "type": "object",
                "properties": {"left": {"$ref": "#/$defs/Expr", "description": "Left."}, "value": {"type": "integer"}},
                "required": ["value"]
            }}
        });
        let (schema, lints) = run(openai_strict, schema);
        assert!(lints.is_empty(), "{lints:?}");
        assert_eq!(
            schema["properties"]["root"],
            json!({"$ref": "#/$defs/Expr"})
        );
        assert_eq!(
            schema["$defs"]["Expr"]["properties"]["left"]["anyOf"][0],
            json!({"$ref": "#/$defs/Expr"})
        );
    }

    #[test]
    fn gemini_folds_an_option_of_a_tagged_enum() {
        let (schema, lints) = run(
            gemini,
            json!({
                "type": "object",
                "properties": {"filter": {"anyOf": [{"$ref": "#/$defs/F"}, {"type": "null"}]}},
                "$defs": {"F": {"oneOf": [
                    {"type": "object", "properties": {"op": {"type": "string", "const": "eq"}}, "required": ["op"]},
                    {"type": "object", "properties": {"op": {"type": "string", "const": "gt"}}, "required": ["op"]}
                ]}}
            }),
        );
        assert!(lints.is_empty(), "{lints:?}");
        assert_eq!(schema["properties"]["filter"]["nullable"], json!(true));
        assert_eq!(
            schema["properties"]["filter"]["anyOf"][1]["properties"]["op"]["enum"],
            json!(["gt"])
        );
    }

    #[test]
    fn gemini_takes_one_type_and_string_enums() {
        let (schema, lints) = run(
            gemini,
            json!({
                "type": "object",
                "title": "Args",
                "properties": {
                    "name": {"type": ["string", "null"]},
                    "unit": {"anyOf": [{"$ref": "#/$defs/Unit"}, {"type": "null"}]},
                    "kind": {"const": "fixed"},
                    "level": {"type": "integer", "exclusiveMinimum": 0}
                },
                "$defs": {"Unit": {"type": "string", "enum": ["c", "f"]}}
            }),
        );
        assert_eq!(
            schema,
            json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string", "nullable": true},
                    "unit": {"type": "string", "enum": ["c", "f"], "nullable": true},
                    "kind": {"type": "string", "enum": ["fixed"]},
                    "level": {"type": "integer", "minimum": 1}
                }
            })
        );
        assert!(lints.is_empty(), "{lints:?}");
        let (_, lints) = run(
            gemini,
            json!({"type": "object", "properties": {"n": {"enum": [1, 2]}, "m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
        );
        assert_eq!(
            lints,
            [
                "Gemini objects need declared properties; a map type cannot be expressed at /properties/m",
                "Gemini enums hold strings only at /properties/n/enum",
            ]
        );
    }

    #[test]
    fn mcp_wraps_scalar_output_schemas() {
        let (wrapped, changed) = mcp_output_schema(&json!({"$schema": "x", "type": "integer"}));
        assert!(changed);
        assert_eq!(
            wrapped,
            json!({"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]})
        );
        let object = json!({"type": "object", "properties": {}});
        assert_eq!(mcp_output_schema(&object), (object, false));
    }

    #[test]
    fn mcp_output_schemas_admitting_objects_and_more_take_both_forms() {
        let optional = json!({
            "anyOf": [{"$ref": "#/$defs/W"}, {"type": "null"}],
            "$defs": {"W": {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]}}
        });
        let (wrapped, changed) = mcp_output_schema(&optional);
        assert!(changed);
        assert_eq!(wrapped["type"], "object");
        assert_eq!(wrapped["anyOf"][1]["required"], json!(["result"]));
        assert!(wrapped["$defs"]["W"].is_object());
        assert!(wrapped["anyOf"][0].get("$defs").is_none());
    }
}

//! OpenAI's strict mode, as a pass over the canonical schema.

use serde_json::{json, Map, Value};

use crate::providers::schema::{
    admits_type, append_description, has_any, is_object_schema, is_recursive, merge_single_all_of,
    one_of_as_any_of, resolve, visit_mut, ANNOTATIONS, LISTS, MAPS, SINGLE,
};
use crate::providers::Lint;
use crate::validation::required_of;

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

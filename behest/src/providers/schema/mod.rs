//! Normalising passes over a canonical (draft 2020-12) schema, one small
//! function each. A pass that cannot express part of a schema adds a
//! [`Lint`] with the JSON path and the reason.
//!
//! The passes every format shares are here ([`common`], [`inline_refs`]);
//! each format's own pass sits beside its format and is re-exported here:
//! [`openai_strict`], [`anthropic`], [`gemini`], [`mcp_output_schema`].

mod drafts;
mod refs;
#[cfg(test)]
mod tests;

use serde_json::{Map, Value};

use super::lint::Lint;

pub use super::anthropic::schema::anthropic;
pub use super::gemini::schema::gemini;
pub use super::mcp::mcp_output_schema;
pub use super::openai::strict::openai_strict;
pub(crate) use drafts::to_2020_12;
pub use refs::inline_refs;
pub(crate) use refs::{is_recursive, resolve};

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
pub(crate) const SINGLE: &[&str] = &[
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
pub(crate) const LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// Keywords that hold a map of subschemas.
pub(crate) const MAPS: &[&str] = &[
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

pub(crate) fn escape(segment: &str) -> String {
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

pub(crate) fn is_object_schema(object: &Map<String, Value>) -> bool {
    admits_type(object, "object") || object.contains_key("properties")
}

/// Whether the schema's `type` (one, or a list) names `kind`.
pub(crate) fn admits_type(object: &Map<String, Value>, kind: &str) -> bool {
    match object.get("type") {
        Some(Value::String(one)) => one == kind,
        Some(Value::Array(kinds)) => kinds.iter().any(|one| one == kind),
        _ => false,
    }
}

/// Whether the schema has one of `keywords`.
pub(crate) fn has_any(object: &Map<String, Value>, keywords: &[&str]) -> bool {
    keywords.iter().any(|keyword| object.contains_key(*keyword))
}

/// `oneOf` as `anyOf`, which the providers take. The same when the branches
/// cannot overlap, as for tagged enums (each branch has its own `const` or
/// `enum` tag); otherwise a warning: the runtime still checks `oneOf`.
pub(crate) fn one_of_as_any_of(object: &mut Map<String, Value>, path: &str, lints: &mut Vec<Lint>) {
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
pub(crate) fn merge_single_all_of(object: &mut Map<String, Value>) {
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

pub(crate) fn append_description(object: &mut Map<String, Value>, note: &str) {
    let description = match object.get("description").and_then(Value::as_str) {
        Some(text) => format!("{text} {note}"),
        None => note.to_owned(),
    };
    object.insert("description".to_owned(), Value::String(description));
}

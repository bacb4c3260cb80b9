//! Gemini's OpenAPI subset, as a pass over the canonical schema.

use serde_json::{json, Map, Value};

use crate::providers::schema::{
    append_description, escape, has_any, inline_refs, merge_single_all_of, one_of_as_any_of,
    visit_mut, ANNOTATIONS,
};
use crate::providers::Lint;

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

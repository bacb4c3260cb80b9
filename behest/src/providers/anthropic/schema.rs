//! Anthropic's rules, as a pass over the canonical schema.

use serde_json::Value;

use crate::providers::schema::{escape, is_object_schema, is_recursive, visit_mut};
use crate::providers::Lint;

/// Anthropic: the schema nearly as is, but no combinator at the root, and
/// property names that match `^[a-zA-Z0-9_.-]{1,64}$` at every depth, in
/// `$defs` too: a tool with another name anywhere is refused, with the
/// path of each, rather than sent with keys the API does not take (it
/// refuses them at the root, and a nested one would reach the model's
/// arguments under a name the runtime could not map back).
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
            lints.push(Lint::error(at, reason));
        }
    });
}

fn anthropic_property_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
}

/// Constraints Anthropic's strict mode does not take: moved into the
/// description, where the model still reads them (the runtime checks them
/// against the tool's own schema).
const UNSUPPORTED_STRICT: [&str; 9] = [
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "maxItems",
    "uniqueItems",
];

/// Anthropic's strict mode (structured outputs, `strict: true` tools):
/// every object closed (`additionalProperties: false`), the constraints it
/// does not take moved into the description (as is `minItems` above 1),
/// and no recursion, which it refuses.
pub fn anthropic_strict(schema: &mut Value, lints: &mut Vec<Lint>) {
    if let Some(cycle) = recursion(schema) {
        lints.push(Lint::error(
            format!("/$defs/{}", escape(&cycle)),
            format!(
                "`{cycle}` refers to itself; Anthropic's strict mode takes no recursive schema"
            ),
        ));
    }
    visit_mut(schema, "", &mut |node, path| {
        let Value::Object(object) = node else {
            return;
        };
        // A branch of `allOf` (a flattened struct) is not closed: closed
        // apart, no value would match them all.
        let in_all_of = path.rsplit('/').nth(1) == Some("allOf");
        if is_object_schema(object) && !in_all_of {
            match object.get("additionalProperties") {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) | Some(Value::Object(_)) | Some(_) => lints.push(Lint::error(
                    format!("{path}/additionalProperties"),
                    "Anthropic's strict mode takes only closed objects (`additionalProperties: false`)",
                )),
            }
            object.insert("additionalProperties".into(), Value::Bool(false));
        }
        let mut moved = Vec::new();
        for keyword in UNSUPPORTED_STRICT {
            if let Some(value) = object.remove(keyword) {
                moved.push(format!("{keyword}: {value}"));
            }
        }
        if let Some(least) = object.get("minItems").and_then(Value::as_u64) {
            if least > 1 {
                object.remove("minItems");
                moved.push(format!("minItems: {least}"));
            }
        }
        if !moved.is_empty() {
            let note = format!("({})", moved.join(", "));
            let description = match object.get("description").and_then(Value::as_str) {
                Some(text) => format!("{text} {note}"),
                None => note,
            };
            object.insert("description".into(), Value::String(description));
            lints.push(Lint::warning(
                path.to_owned(),
                format!(
                    "moved into the description for Anthropic's strict mode: {}",
                    moved.join(", ")
                ),
            ));
        }
    });
}

/// A reference that leads back to itself, through others or not (`#`,
/// `#/$defs/…`, `#/definitions/…`).
fn recursion(schema: &Value) -> Option<String> {
    let mut references = Vec::new();
    collect_refs(schema, &mut references);
    references
        .into_iter()
        .find(|reference| is_recursive(schema, reference))
}

/// Every `$ref` of a schema.
fn collect_refs(value: &Value, found: &mut Vec<String>) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get("$ref") {
                if !found.contains(reference) {
                    found.push(reference.clone());
                }
            }
            for child in object.values() {
                collect_refs(child, found);
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_refs(item, found);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::anthropic_strict;

    #[test]
    fn strict_closes_objects_and_moves_what_it_does_not_take() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many."},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "minItems": 2},
                "place": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
            "required": ["count"],
        });
        let mut lints = Vec::new();
        anthropic_strict(&mut schema, &mut lints);
        assert!(lints.iter().all(|lint| !lint.is_error()), "{lints:?}");
        assert_eq!(schema["additionalProperties"], false);
        assert_eq!(schema["properties"]["place"]["additionalProperties"], false);
        let count = &schema["properties"]["count"];
        assert!(count.get("minimum").is_none() && count.get("maximum").is_none());
        assert_eq!(count["description"], "How many. (minimum: 1, maximum: 10)");
        assert_eq!(schema["properties"]["tags"]["description"], "(minItems: 2)");
        assert_eq!(
            schema["properties"]["tags"]["items"]["description"],
            "(maxLength: 20)"
        );
        // Optional fields stay optional: only `count` is required.
        assert_eq!(schema["required"], json!(["count"]));
    }

    #[test]
    fn recursion_and_open_objects_cannot_be_strict() {
        let mut tree = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}}},
        });
        let mut lints = Vec::new();
        anthropic_strict(&mut tree, &mut lints);
        assert!(
            lints
                .iter()
                .any(|lint| lint.is_error() && lint.reason.contains("refers to itself")),
            "{lints:?}"
        );

        let mut open = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let mut lints = Vec::new();
        anthropic_strict(&mut open, &mut lints);
        assert!(
            lints
                .iter()
                .any(|lint| lint.is_error() && lint.path == "/additionalProperties"),
            "{lints:?}"
        );
    }
}

//! Older JSON Schema drafts rewritten as 2020-12, the draft every export
//! pass reads. Tools imported from MCP servers often declare draft 7 (or
//! 4, 6, 2019-09) in `$schema`; the registry validates them in their own
//! draft, and a provider must be sent the same constraints in the shape
//! its schema subset knows.

use jsonschema::Draft;
use serde_json::{Map, Value};

/// Keywords that only annotate: kept beside a `$ref`, which in drafts up
/// to 7 makes every other sibling ignored.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "definitions",
    "$defs",
];

/// Rewrites `schema` as 2020-12 when its `$schema` names an older draft:
///
/// - `items: [..]` (a tuple) becomes `prefixItems`, and `additionalItems`
///   the `items` for the rest; `additionalItems` beside a single `items`
///   schema, which it never applied to, goes;
/// - `dependencies` becomes `dependentRequired` (lists of names) and
///   `dependentSchemas` (schemas);
/// - draft 4's boolean `exclusiveMinimum`/`exclusiveMaximum` become the
///   bound itself, and `id` becomes `$id` (or `$anchor` for `#name`);
/// - up to draft 7, the siblings of a `$ref` that are not annotations go,
///   since those drafts ignore them (but the root keeps its `type`).
///
/// Not rewritten: 2019-09's `$recursiveRef`, and `$ref` pointers into the
/// places that move (`#/items/0`), which no tool schema seen uses.
///
/// A schema without `$schema`, in 2020-12 or in a draft behest does not
/// know is left as it is.
pub(crate) fn to_2020_12(schema: &mut Value) {
    let draft = match schema
        .get("$schema")
        .and_then(Value::as_str)
        .map(Draft::from_schema_uri)
    {
        Some(draft @ (Draft::Draft4 | Draft::Draft6 | Draft::Draft7 | Draft::Draft201909)) => draft,
        _ => return,
    };
    rewrite(schema, draft, true);
    if let Value::Object(root) = schema {
        root.insert(
            "$schema".into(),
            Value::from("https://json-schema.org/draft/2020-12/schema"),
        );
    }
}

/// Rewrites one subschema (`root`: the whole schema), then those it holds.
/// Depth is bounded by what registration accepts (`MAX_SCHEMA_DEPTH`).
fn rewrite(schema: &mut Value, draft: Draft, root: bool) {
    let Value::Object(node) = schema else {
        return;
    };
    if draft != Draft::Draft201909 && node.contains_key("$ref") {
        // The root's `type` stays: every export pass needs the root to
        // say `object` (registration checked that it is one).
        node.retain(|key, _| {
            key == "$ref" || ANNOTATIONS.contains(&key.as_str()) || (root && key == "type")
        });
    }
    if draft == Draft::Draft4 {
        // A plain-name fragment is an anchor in 2020-12, where `$id` may
        // not hold one.
        match node.remove("id") {
            Some(Value::String(id)) => match id.strip_prefix('#') {
                Some(anchor) => {
                    node.insert("$anchor".into(), Value::String(anchor.to_owned()));
                }
                None => {
                    node.insert("$id".into(), Value::String(id));
                }
            },
            Some(other) => {
                node.insert("id".into(), other);
            }
            None => {}
        }
        exclusive_bound(node, "exclusiveMinimum", "minimum");
        exclusive_bound(node, "exclusiveMaximum", "maximum");
    }
    match node.remove("items") {
        Some(Value::Array(tuple)) => {
            node.insert("prefixItems".into(), Value::Array(tuple));
            if let Some(rest) = node.remove("additionalItems") {
                node.insert("items".into(), rest);
            }
        }
        Some(items) => {
            node.remove("additionalItems");
            node.insert("items".into(), items);
        }
        None => {
            node.remove("additionalItems");
        }
    }
    if let Some(Value::Object(dependencies)) = node.remove("dependencies") {
        let (required, schemas): (Map<String, Value>, Map<String, Value>) = dependencies
            .into_iter()
            .partition(|(_, dependency)| dependency.is_array());
        merge_into(node, "dependentRequired", required);
        merge_into(node, "dependentSchemas", schemas);
    }
    for (key, child) in node.iter_mut() {
        match key.as_str() {
            "items"
            | "additionalProperties"
            | "not"
            | "if"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties" => rewrite(child, draft, false),
            "anyOf" | "oneOf" | "allOf" | "prefixItems" => {
                if let Value::Array(items) = child {
                    items
                        .iter_mut()
                        .for_each(|item| rewrite(item, draft, false));
                }
            }
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                if let Value::Object(members) = child {
                    members
                        .values_mut()
                        .for_each(|member| rewrite(member, draft, false));
                }
            }
            _ => {}
        }
    }
}

/// Draft 4's `"exclusiveMaximum": true` beside `"maximum": m` is
/// `"exclusiveMaximum": m`; `false` means nothing.
fn exclusive_bound(node: &mut Map<String, Value>, exclusive: &str, bound: &str) {
    match node.get(exclusive) {
        Some(Value::Bool(true)) => match node.remove(bound) {
            Some(limit) => {
                node.insert(exclusive.into(), limit);
            }
            None => {
                node.remove(exclusive);
            }
        },
        Some(Value::Bool(false)) => {
            node.remove(exclusive);
        }
        _ => {}
    }
}

fn merge_into(node: &mut Map<String, Value>, key: &str, members: Map<String, Value>) {
    if members.is_empty() {
        return;
    }
    match node.get_mut(key) {
        Some(Value::Object(existing)) => existing.extend(members),
        _ => {
            node.insert(key.into(), Value::Object(members));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::ArgumentValidator;
    use serde_json::json;

    /// Each rewrite keeps the verdicts of the old draft's validator on
    /// instances that tell the difference.
    #[test]
    fn older_drafts_read_the_same_as_2020_12() {
        let cases = [
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                    "properties": {"point": {"type": "array",
                        "items": [{"type": "number"}, {"type": "string"}],
                        "additionalItems": false}}}),
                vec![
                    (json!({"point": [1, "a"]}), true),
                    (json!({"point": [1, "a", 2]}), false),
                    (json!({"point": ["a"]}), false),
                ],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                    "properties": {"card": {"type": "string"}, "billing": {"type": "string"},
                        "kind": {"type": "string"}},
                    "dependencies": {"card": ["billing"],
                        "kind": {"properties": {"billing": {"const": "x"}}}}}),
                vec![
                    (json!({"card": "1", "billing": "a"}), true),
                    (json!({"card": "1"}), false),
                    (json!({"kind": "k", "billing": "y"}), false),
                    (json!({"kind": "k", "billing": "x"}), true),
                ],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
                    "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true,
                        "maximum": 10, "exclusiveMaximum": false}}}),
                vec![
                    (json!({"n": 0}), false),
                    (json!({"n": 0.5}), true),
                    (json!({"n": 10}), true),
                    (json!({"n": 10.5}), false),
                ],
            ),
            (
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                    "definitions": {"name": {"type": "string"}},
                    "properties": {"who": {"$ref": "#/definitions/name", "type": "integer",
                        "description": "A name."}}}),
                vec![(json!({"who": "ann"}), true), (json!({"who": 3}), false)],
            ),
        ];
        for (old, instances) in cases {
            let before = ArgumentValidator::compile(&old).unwrap();
            let mut new = old.clone();
            to_2020_12(&mut new);
            assert_eq!(
                new["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{new}"
            );
            let after = ArgumentValidator::compile(&new).unwrap();
            for (instance, valid) in instances {
                assert_eq!(before.is_valid(&instance), valid, "{old} on {instance}");
                assert_eq!(after.is_valid(&instance), valid, "{new} on {instance}");
            }
        }
    }

    /// A registered draft-07 tool goes to a provider in 2020-12 terms.
    #[test]
    fn exports_read_a_draft_7_tool_in_2020_12_terms() {
        let tool = crate::ExternalTool::new(
            "pay",
            "Pay.",
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                "properties": {"card": {"type": "string"}, "billing": {"type": "string"},
                    "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}},
                "dependencies": {"card": ["billing"]}}),
        );
        let registry = crate::ToolRegistry::new().with(tool).unwrap();
        let export = crate::providers::anthropic::tools(&registry).unwrap();
        let schema = &export.tools[0]["input_schema"];
        assert_eq!(schema["dependentRequired"], json!({"card": ["billing"]}));
        assert!(schema.get("dependencies").is_none());
        assert_eq!(
            schema["properties"]["pair"]["prefixItems"][1]["type"],
            "integer"
        );
    }

    #[test]
    fn draft_4_anchors_and_a_root_ref_keep_their_meaning() {
        let mut schema = json!({"$schema": "http://json-schema.org/draft-04/schema#",
            "type": "object", "$ref": "#/definitions/args",
            "definitions": {"args": {"id": "#args", "type": "object",
                "properties": {"n": {"type": "integer"}}}}});
        to_2020_12(&mut schema);
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["definitions"]["args"]["$anchor"], "args");
        assert!(schema["definitions"]["args"].get("id").is_none());
        let validator = ArgumentValidator::compile(&schema).unwrap();
        assert!(validator.is_valid(&json!({"n": 1})));
        assert!(!validator.is_valid(&json!({"n": "x"})));
    }

    #[test]
    fn schemas_in_2020_12_or_without_a_draft_are_left_alone() {
        for schema in [
            json!({"type": "object", "properties": {"a": {"items": [{"type": "string"}]}}}),
            json!({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                "dependencies": {"a": ["b"]}}),
        ] {
            let mut same = schema.clone();
            to_2020_12(&mut same);
            assert_eq!(same, schema);
        }
    }
}

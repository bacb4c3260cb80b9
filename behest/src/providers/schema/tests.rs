use serde_json::json;

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
    assert_eq!(
        lints,
        ["non-standard format `snowflake` moved into the description at /properties/id/format"]
    );
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

//! Registration is strict and leaves the registry as it was on error.

use crate::support;

use std::sync::Arc;

use behest::{ExternalTool, RegistryError, ToolRegistry};
use serde_json::{json, Value};
use support::{Add, Now};

fn external(name: &str, schema: Value) -> Arc<ExternalTool> {
    Arc::new(ExternalTool::new(name, format!("The {name} tool."), schema))
}

fn object() -> Value {
    json!({"type": "object", "properties": {}})
}

#[test]
fn a_duplicate_name_is_refused_naming_the_tool_and_the_first_stays() {
    let mut registry = ToolRegistry::new();
    registry
        .register("search", external("search", object()))
        .unwrap();
    let second = Arc::new(ExternalTool::new(
        "search",
        "Another search.",
        json!({"type": "object"}),
    ));
    let error = registry.register("search", second).unwrap_err();
    assert!(matches!(&error, RegistryError::DuplicateName { name, .. } if name == "search"));
    assert_eq!(
        error.to_string(),
        "a tool named `search` is already registered (first: \"The search tool.\"; second: \"Another search.\"); the second was not registered: rename one of them"
    );
    assert_eq!(registry.len(), 1);
    assert_eq!(
        registry.spec("search").unwrap().description,
        "The search tool."
    );
}

#[test]
fn names_follow_the_rule_every_provider_accepts() {
    let cases = [
        ("", "cannot be empty"),
        ("get weather", "' ' is not allowed"),
        ("get.weather", "'.' is not allowed"),
        ("météo", "'é' is not allowed"),
        ("a/b", "'/' is not allowed"),
    ];
    for (name, reason) in cases {
        let error = ToolRegistry::new()
            .register(name, external("x", object()))
            .unwrap_err();
        let RegistryError::InvalidName { reason: got, .. } = &error else {
            panic!("{name:?}: expected InvalidName, got {error:?}");
        };
        assert!(got.contains(reason), "{name:?}: {got}");
    }
    let long = "a".repeat(65);
    let error = ToolRegistry::new()
        .register(long.clone(), external("x", object()))
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("invalid tool name `{long}`: it is 65 characters long; the limit is 64")
    );
    let longest = "a".repeat(64);
    assert!(ToolRegistry::new()
        .register(longest, external("x", object()))
        .is_ok());
    assert!(ToolRegistry::new()
        .register("Get-Weather_2", external("x", object()))
        .is_ok());
}

#[test]
fn schemas_must_be_valid_2020_12() {
    let cases = [
        json!({"type": "object", "properties": {"a": {"type": "strnig"}}}),
        json!({"type": "object", "required": "a"}),
        json!({"type": "object", "properties": {"a": {"minLength": -1}}}),
    ];
    for schema in cases {
        let error = ToolRegistry::new()
            .register("t", external("t", schema.clone()))
            .unwrap_err();
        assert!(
            matches!(&error, RegistryError::InvalidSchema { name, .. } if name == "t"),
            "{schema}: {error:?}"
        );
        assert!(
            error
                .to_string()
                .contains("not a valid JSON Schema (draft 2020-12)"),
            "{error}"
        );
    }
}

#[test]
fn references_that_cannot_be_resolved_are_refused() {
    let schema = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/Missing"}}});
    let error = ToolRegistry::new()
        .register("t", external("t", schema))
        .unwrap_err();
    assert!(
        matches!(error, RegistryError::InvalidSchema { .. }),
        "{error:?}"
    );
}

#[test]
fn the_schema_root_must_be_an_object() {
    let cases = [
        (json!({"type": "string"}), "its `type` is \"string\""),
        (
            json!({"type": ["object", "null"]}),
            "its `type` is [\"object\",\"null\"]",
        ),
        (json!({}), "it has no `type`"),
        (json!(true), "it is true"),
    ];
    for (schema, found) in cases {
        let error = ToolRegistry::new()
            .register("t", external("t", schema))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("the input schema of tool `t` must describe an object (`\"type\": \"object\"` at the root), but {found}")
        );
    }
}

#[test]
fn tools_are_listed_in_registration_order() {
    let mut registry = ToolRegistry::new();
    for name in ["zeta", "alpha", "mid"] {
        registry.register(name, external(name, object())).unwrap();
    }
    registry.register_tool(Arc::new(Add)).unwrap();
    let _ = registry.register("alpha", external("alpha", object()));
    assert_eq!(
        registry.names().collect::<Vec<_>>(),
        ["zeta", "alpha", "mid", "add"]
    );
    let specs: Vec<&str> = registry.specs().map(|spec| spec.name.as_str()).collect();
    assert_eq!(specs, ["zeta", "alpha", "mid", "add"]);
}

#[test]
fn register_uses_the_given_name_and_register_tool_the_tool_s_own() {
    let mut registry = ToolRegistry::new();
    registry.register("clock", Arc::new(Now)).unwrap();
    registry.register_tool(Arc::new(Now)).unwrap();
    assert_eq!(registry.spec("clock").unwrap().name, "clock");
    assert_eq!(registry.spec("now").unwrap().name, "now");
    assert!(registry.get("clock").is_some() && registry.validator("now").is_some());
    assert!(!registry.contains("time"));
}

/// Remote servers send older drafts: each schema is read in the draft its
/// `$schema` names, and refused when it names one behest does not know.
#[tokio::test]
async fn schemas_are_read_in_the_draft_they_name() {
    use behest::{ToolCall, ToolRuntime};

    let draft7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "point": {"type": "array", "items": [{"type": "number"}, {"type": "number"}],
                "additionalItems": false},
            "card": {"type": "string"},
            "billing": {"type": "string"},
        },
        "dependencies": {"card": ["billing"]},
        "definitions": {"unused": {"type": "string"}},
    });
    let draft4 = json!({
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "maximum": 10, "exclusiveMaximum": true}},
    });
    let registry = ToolRegistry::new()
        .with(external("pay", draft7))
        .unwrap()
        .with(external("limit", draft4))
        .unwrap();
    let runtime = ToolRuntime::new(registry);
    let check = |name: &'static str, arguments: Value| {
        let runtime = runtime.clone();
        async move {
            let result = runtime.call(ToolCall::new("c", name, arguments)).await;
            // External tools answer NotImplemented once the arguments pass.
            match result.outcome {
                Err(behest::ToolError::InvalidArguments { issues, .. }) => Err(issues),
                _ => Ok(()),
            }
        }
    };
    assert!(check("pay", json!({"point": [1, 2]})).await.is_ok());
    // Draft 7 tuples: a third item is refused.
    assert!(check("pay", json!({"point": [1, 2, 3]})).await.is_err());
    // `dependencies`: a card needs billing.
    let issues = check("pay", json!({"card": "4242"})).await.unwrap_err();
    assert!(format!("{issues:?}").contains("billing"), "{issues:?}");
    assert!(check("pay", json!({"card": "4242", "billing": "x"}))
        .await
        .is_ok());
    // Draft 4's boolean `exclusiveMaximum`.
    assert!(check("limit", json!({"n": 9})).await.is_ok());
    assert!(check("limit", json!({"n": 10})).await.is_err());

    // Invalid under its own draft (draft 7 wants a boolean-free
    // `exclusiveMaximum`), and an unknown meta-schema.
    let bad7 = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
        "properties": {"n": {"exclusiveMaximum": true}}});
    let error = ToolRegistry::new().with(external("t", bad7)).unwrap_err();
    assert!(error.to_string().contains("(draft 7)"), "{error}");
    let custom = json!({"$schema": "https://example.com/my-meta", "type": "object"});
    let error = ToolRegistry::new().with(external("t", custom)).unwrap_err();
    assert!(
        error.to_string().contains("https://example.com/my-meta"),
        "{error}"
    );
}

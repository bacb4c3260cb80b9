//! Input written to cost: schemas from remote servers and spec files, and
//! calls from a model, that would make behest's work grow without bound.
//! Each is refused with a clear error or handled in bounded work; the
//! worst cases are timed in `benches/hostile_input.rs`, not here.

use behest::validation::{ArgumentValidator, MAX_PATTERN_BYTES, MAX_SCHEMA_DEPTH};
use behest::{ExternalTool, RegistryError, ToolCall, ToolError, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

fn runtime_with(parameters: Value) -> ToolRuntime {
    let tool = ExternalTool::new("probe", "Probe.", parameters);
    ToolRuntime::new(ToolRegistry::new().with(tool).unwrap())
}

async fn outcome(runtime: &ToolRuntime, arguments: Value) -> Result<(), ToolError> {
    let call = ToolCall::new("c", "probe", arguments);
    match runtime.call(call).await.outcome {
        // Validated, then left for a handler.
        Err(ToolError::NotImplemented) => Ok(()),
        Ok(output) => panic!("an external tool ran: {output:?}"),
        Err(error) => Err(error),
    }
}

/// `{"a": {"a": ... {"type": "object"}}}` as a schema `levels` deep, built
/// without recursion (`json!` would copy the inner value recursively).
fn nested(levels: usize) -> Value {
    let mut schema = json!({"type": "object"});
    for _ in 0..levels {
        let mut properties = serde_json::Map::new();
        properties.insert("a".to_owned(), schema);
        let mut level = serde_json::Map::new();
        level.insert("type".to_owned(), "object".into());
        level.insert("properties".to_owned(), Value::Object(properties));
        schema = Value::Object(level);
    }
    schema
}

#[tokio::test]
async fn a_catastrophic_pattern_is_matched_in_linear_time() {
    let runtime = runtime_with(json!({
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+$"}}
    }));
    let text = format!("{}!", "a".repeat(50_000));
    let refused = outcome(&runtime, json!({ "s": text })).await.unwrap_err();
    assert!(
        refused.to_string().contains("must match the pattern"),
        "{refused}"
    );
    outcome(&runtime, json!({"s": "a".repeat(50_000)}))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_backtracking_pattern_stops_at_its_limit_with_a_verdict() {
    // A backreference needs the backtracking engine; its steps are capped.
    let runtime = runtime_with(json!({
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": "^(a+)+\\1$"}}
    }));
    let text = format!("{}!", "a".repeat(10_000));
    let verdict = outcome(&runtime, json!({ "s": text })).await;
    assert!(
        matches!(verdict, Err(ToolError::InvalidArguments { .. })),
        "{verdict:?}"
    );
}

#[test]
fn a_schema_nested_too_deeply_is_refused_without_recursing() {
    // A small stack: the check walks the schema without recursion and
    // refuses it before anything that recurses (the meta-schema check,
    // the compiler) sees it.
    let refused = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            let schema = nested(20_000);
            let refused = ArgumentValidator::compile(&schema).err();
            // Dropping a deep `Value` recurses too: leak it on this thread.
            std::mem::forget(schema);
            refused
        })
        .unwrap()
        .join()
        .unwrap();
    let error = refused.expect("refused");
    assert!(error.message.contains("nested too deeply"), "{error:?}");
    assert!(
        error.path.starts_with("/properties/a/properties/a"),
        "{error:?}"
    );
    // Through the registry, named.
    let refused = ToolRegistry::new()
        .with(ExternalTool::new("deep", "Deep.", nested(MAX_SCHEMA_DEPTH)))
        .err();
    let Some(RegistryError::InvalidSchema { name, error }) = refused else {
        panic!("{refused:?}");
    };
    assert_eq!(name, "deep");
    assert!(error.message.contains("more than 160 levels"), "{error:?}");
}

#[tokio::test]
async fn a_schema_as_deep_as_the_limit_registers_and_validates() {
    // Each level is `properties` then a name: half the limit in levels.
    let levels = MAX_SCHEMA_DEPTH / 2 - 1;
    let schema = nested(levels);
    ArgumentValidator::compile(&schema).unwrap();
    assert!(ArgumentValidator::compile(&nested(MAX_SCHEMA_DEPTH)).is_err());
    let runtime = runtime_with(nested(30));
    let mut arguments = json!({});
    for _ in 0..30 {
        arguments = json!({ "a": arguments });
    }
    outcome(&runtime, arguments).await.unwrap();
}

#[test]
fn a_very_large_schema_is_refused() {
    let properties: serde_json::Map<String, Value> = (0..120_000)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let schema = json!({"type": "object", "properties": properties});
    let error = ArgumentValidator::compile(&schema).unwrap_err();
    assert!(error.message.contains("too large"), "{error:?}");
}

#[test]
fn an_overlong_pattern_is_refused_where_it_is() {
    let long = "a".repeat(MAX_PATTERN_BYTES + 1);
    let schema = json!({
        "type": "object",
        "properties": {"s": {"type": "string", "pattern": long}}
    });
    let error = ArgumentValidator::compile(&schema).unwrap_err();
    assert_eq!(error.path, "/properties/s/pattern");
    assert!(error.message.contains("pattern is too long"), "{error:?}");
    let keyed = json!({"type": "object", "patternProperties": {long: true}});
    let error = ArgumentValidator::compile(&keyed).unwrap_err();
    assert!(error.message.contains("pattern is too long"), "{error:?}");
}

#[tokio::test]
async fn reference_cycles_are_refused_or_validate_in_bounded_work() {
    let cycles = [
        json!({
            "type": "object",
            "properties": {"x": {"$ref": "#/$defs/a"}},
            "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}
        }),
        json!({"type": "object", "properties": {"x": {"$ref": "#/properties/x"}}}),
        json!({"type": "object", "$ref": "#"}),
    ];
    for schema in cycles {
        let Ok(validator) = ArgumentValidator::compile(&schema) else {
            continue;
        };
        // Whatever the verdict, it comes.
        let _ = validator.validate(&json!({"x": {"x": 1}}));
    }
    // Recursion that consumes the instance is ordinary (a tree).
    let tree = runtime_with(json!({
        "type": "object",
        "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}
    }));
    outcome(&tree, json!({"children": [{"children": []}]}))
        .await
        .unwrap();
}

#[tokio::test]
async fn formats_on_huge_strings_cost_nothing_more() {
    // `format` is an annotation: a 1 MiB string is not parsed as a date.
    let runtime = runtime_with(json!({
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date-time"}}
    }));
    let huge = "9".repeat(1024 * 1024 - 64);
    outcome(&runtime, json!({ "when": huge })).await.unwrap();
}

#[tokio::test]
async fn a_huge_unknown_tool_name_is_answered_short() {
    let runtime = runtime_with(json!({"type": "object"}));
    let name = format!("probe{}", "x".repeat(1024 * 1024));
    let result = runtime
        .call(ToolCall::new("c", name.as_str(), json!({})))
        .await;
    let Err(error @ ToolError::NotFound { .. }) = result.outcome else {
        panic!("{:?}", result.outcome);
    };
    let text = error.to_string();
    assert!(text.len() < 300, "{} bytes", text.len());
    assert!(text.contains(&format!("({} bytes)", name.len())), "{text}");
    // No suggestion for a name that long, the tools listed instead.
    assert!(text.contains("the tools are `probe`"), "{text}");
}

#[tokio::test]
async fn a_huge_unknown_argument_name_is_answered_short() {
    let runtime = runtime_with(json!({
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "additionalProperties": false
    }));
    let name = format!("query{}", "q".repeat(512 * 1024));
    let refused = outcome(&runtime, json!({ name: "x" })).await.unwrap_err();
    let text = refused.to_string();
    assert!(text.len() < 400, "{} bytes: {}", text.len(), &text[..200]);
    assert!(text.contains("is not an accepted field"), "{text}");
}

#[test]
fn pattern_limits_count_keywords_not_data_and_add_up() {
    // `pattern` inside `enum`, `const` or `default` values is data.
    let long = "a".repeat(MAX_PATTERN_BYTES + 1);
    let data = json!({
        "type": "object",
        "properties": {"p": {"enum": [{"pattern": long}], "default": {"pattern": long}}}
    });
    ArgumentValidator::compile(&data).unwrap();
    // Many patterns, each short enough, are capped together.
    let properties: serde_json::Map<String, Value> = (0..20)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"type": "string", "pattern": "b".repeat(4000)}),
            )
        })
        .collect();
    let many = json!({"type": "object", "properties": properties});
    let error = ArgumentValidator::compile(&many).unwrap_err();
    assert!(
        error.message.contains("for all of the schema's patterns"),
        "{error:?}"
    );
}

#[tokio::test]
async fn formats_asserted_by_older_drafts_stay_bounded_on_huge_strings() {
    // Draft 7 checks `format`; a 1 MiB string is refused or accepted, once.
    let runtime = runtime_with(json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "mail": {"type": "string", "format": "email"}
        }
    }));
    let huge = "9".repeat(1024 * 1024 - 64);
    let refused = outcome(&runtime, json!({ "when": huge }))
        .await
        .unwrap_err();
    assert!(
        matches!(refused, ToolError::InvalidArguments { .. }),
        "{refused:?}"
    );
    let mail = format!("{}@example.com", "a".repeat(512 * 1024));
    let _ = outcome(&runtime, json!({ "mail": mail })).await;
}

#[tokio::test]
async fn the_deepest_schema_a_parser_gives_compiles_validates_and_exports() {
    // serde_json stops at 128 levels: a `not` chain as deep as it reads,
    // on a test thread's 2 MiB stack, in whatever build runs the tests.
    let mut text = String::from(r#"{"type": "string"}"#);
    for _ in 0..62 {
        text = format!(r#"{{"not": {{"not": {text}}}}}"#);
    }
    let text = format!(r#"{{"type": "object", "properties": {{"v": {text}}}}}"#);
    let schema: Value = serde_json::from_str(&text).expect("within the parser's depth");
    let runtime = runtime_with(schema.clone());
    outcome(&runtime, json!({"v": "text"})).await.unwrap();
    assert!(outcome(&runtime, json!({"v": 1})).await.is_err());
    let registry = ToolRegistry::new()
        .with(ExternalTool::new("deep", "Deep.", schema))
        .unwrap();
    for provider in [
        behest::providers::WireFormat::OpenAiChat,
        behest::providers::WireFormat::Anthropic,
        behest::providers::WireFormat::Gemini,
        behest::providers::WireFormat::Mcp,
    ] {
        let _ = behest::providers::export(&registry, provider, &Default::default());
    }
}

//! Each provider's export of the representative tools, as snapshots, and
//! the OpenAI strict rules checked independently of the pass that applies
//! them.

use crate::representative;

use std::sync::Arc;

use behest::providers::{self, ExportOptions, Strictness, WireFormat};
use behest::{Tool, ToolCall, ToolOutput, ToolRegistry, ToolRuntime, ToolSpec};
use serde_json::{json, Value};

fn registry() -> ToolRegistry {
    registry_of(representative::all())
}

fn registry_of(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    registry.register_all(tools).unwrap();
    registry
}

/// One export as a snapshot value: the declarations, or the lints.
fn snapshot(provider: WireFormat, options: &ExportOptions) -> Value {
    match providers::export(&registry(), provider, options) {
        Ok(export) => json!({"tools": export.tools, "lints": export.lints}),
        Err(error) => json!({"error": error.lints}),
    }
}

#[test]
fn exports_of_representative_tools() {
    let default = ExportOptions::default();
    for (name, provider) in [
        ("openai_chat", WireFormat::OpenAiChat),
        ("openai_responses", WireFormat::OpenAiResponses),
        ("anthropic", WireFormat::Anthropic),
        ("gemini", WireFormat::Gemini),
        ("mcp", WireFormat::Mcp),
    ] {
        insta::assert_json_snapshot!(name, snapshot(provider, &default));
    }
}

#[test]
fn gemini_export_of_the_tools_it_can_express() {
    let registry = registry_of(vec![
        Arc::new(representative::PlanTrip),
        Arc::new(representative::SearchDocs),
        Arc::new(representative::Now),
    ]);
    let export =
        providers::export(&registry, WireFormat::Gemini, &ExportOptions::default()).unwrap();
    insta::assert_json_snapshot!(
        "gemini_expressible",
        json!({"tools": export.tools, "lints": export.lints})
    );
}

#[test]
fn strict_export_fails_on_map_types_unless_the_tool_may_fall_back() {
    let all_strict = ExportOptions::new().strict(Strictness::All);
    let error = providers::export(&registry(), WireFormat::OpenAiChat, &all_strict).unwrap_err();
    let messages: Vec<String> = error.lints.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        ["send_message: map type is not allowed in strict mode at /properties/headers/additionalProperties"]
    );
    let mut fallback = all_strict.clone();
    fallback.allow_non_strict.insert("send_message".to_owned());
    insta::assert_json_snapshot!(
        "openai_chat_strict",
        snapshot(WireFormat::OpenAiChat, &fallback)
    );
}

/// The strict rules of PROVIDERS.md, checked on an exported schema.
fn strict_violations(schema: &Value, path: &str, depth: usize, found: &mut Vec<String>) {
    let Value::Object(object) = schema else {
        return;
    };
    for keyword in [
        "allOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentRequired",
        "dependentSchemas",
        "default",
    ] {
        if object.contains_key(keyword) {
            found.push(format!("{path}: `{keyword}`"));
        }
    }
    if object.contains_key("$ref") && object.len() > 1 {
        found.push(format!("{path}: `$ref` with siblings"));
    }
    let is_object =
        object.get("type") == Some(&json!("object")) || object.contains_key("properties");
    let depth = depth + usize::from(is_object);
    if depth > 10 {
        found.push(format!("{path}: nested deeper than 10"));
    }
    if is_object {
        if object.get("additionalProperties") != Some(&json!(false)) {
            found.push(format!("{path}: `additionalProperties` is not false"));
        }
        let properties: Vec<&String> = object
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().collect())
            .unwrap_or_default();
        let required: Vec<&str> = object
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for name in properties {
            if !required.contains(&name.as_str()) {
                found.push(format!("{path}: `{name}` is not required"));
            }
        }
    }
    for (key, child) in object {
        match child {
            Value::Object(members) if key == "properties" || key == "$defs" => {
                for (name, member) in members {
                    strict_violations(member, &format!("{path}/{key}/{name}"), depth, found);
                }
            }
            Value::Array(items) if key == "anyOf" || key == "prefixItems" => {
                for (index, item) in items.iter().enumerate() {
                    strict_violations(item, &format!("{path}/{key}/{index}"), depth, found);
                }
            }
            Value::Object(_) if key == "items" || key == "additionalProperties" => {
                strict_violations(child, &format!("{path}/{key}"), depth, found);
            }
            _ => {}
        }
    }
}

#[test]
fn every_strict_export_meets_the_strict_rules_or_is_reported() {
    let all_strict = ExportOptions::new()
        .strict(Strictness::All)
        .allow_non_strict("send_message");
    let export = providers::export(&registry(), WireFormat::OpenAiChat, &all_strict).unwrap();
    for tool in &export.tools {
        let name = tool["function"]["name"].as_str().unwrap();
        let strict = tool["function"]["strict"] == json!(true);
        let mut found = Vec::new();
        strict_violations(&tool["function"]["parameters"], "", 0, &mut found);
        if strict {
            assert!(
                found.is_empty(),
                "{name} is sent strict but breaks the rules: {found:?}"
            );
        } else {
            assert!(
                export
                    .lints
                    .iter()
                    .any(|lint| lint.tool.as_deref() == Some(name)),
                "{name} is sent non-strict without a lint saying why"
            );
        }
    }
}

#[test]
fn null_for_an_optional_field_means_left_out_for_strict_tools() {
    /// Strict plan.
    #[behest::tool(strict)]
    fn plan(city: String, #[arg(default = 3)] days: u8, note: Option<String>) -> String {
        format!("{city} {days} {note:?}")
    }
    let runtime = ToolRuntime::new(registry_of(vec![Arc::new(Plan)]));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = rt.block_on(runtime.call(ToolCall::new(
        "c",
        "plan",
        json!({"city": "Oslo", "days": null, "note": null}),
    )));
    assert_eq!(result.outcome.unwrap(), ToolOutput::text("Oslo 3 None"));
    let result = rt.block_on(runtime.call(ToolCall::new(
        "c",
        "plan",
        json!({"city": null, "days": 2, "note": null}),
    )));
    assert!(result.is_error(), "a required field stays required");
}

#[test]
fn names_follow_each_provider_s_rule() {
    let long = "a".repeat(100);
    let cases = [
        // Chat, Responses, Anthropic, Gemini, Bedrock, MCP.
        ("get.weather", [false, false, false, true, false, true]),
        (long.as_str(), [false, false, false, true, false, true]),
        ("1tool", [true, true, true, false, true, true]),
        ("ns:tool", [false, false, false, true, false, false]),
        ("get_weather-2", [true, true, true, true, true, true]),
    ];
    for (name, expected) in cases {
        let got: Vec<bool> = WireFormat::ALL
            .iter()
            .map(|p| p.check_name(name).is_ok())
            .collect();
        assert_eq!(got, expected, "{name}");
    }
}

#[test]
fn one_line_check_for_user_test_suites() {
    let registry = registry_of(vec![
        Arc::new(representative::SearchDocs),
        Arc::new(representative::Now),
    ]);
    providers::assert_exports_cleanly(&registry, &WireFormat::ALL);

    let result = std::panic::catch_unwind(|| {
        providers::assert_exports_cleanly(&self::registry(), &[WireFormat::Gemini])
    });
    let message = *result.unwrap_err().downcast::<String>().unwrap();
    assert!(
        message.contains("Gemini: count_nodes: `#/$defs/Node` is recursive"),
        "{message}"
    );
}

/// Specs exported without a registry are refused as a registry would
/// refuse them: two tools of one name, a root that is not an object.
#[test]
fn specs_without_a_registry_are_checked_like_a_registry() {
    let search = ToolSpec::new("search", "Search.", json!({"type": "object"}));
    let twice = [&search, &search];
    for format in WireFormat::ALL {
        let error =
            providers::export_specs(&twice, &|_| false, format, &ExportOptions::new()).unwrap_err();
        assert_eq!(error.lints.len(), 1, "{format:?}: {error}");
        assert_eq!(error.lints[0].tool.as_deref(), Some("search"));
        assert!(
            error
                .to_string()
                .contains("a second tool is named `search`"),
            "{error}"
        );
    }
    let list = ToolSpec::new("list", "List.", json!({"type": "array"}));
    let error = providers::export_specs(
        &[&list],
        &|_| false,
        WireFormat::Anthropic,
        &ExportOptions::new(),
    )
    .unwrap_err();
    assert!(
        error.to_string().contains("must describe an object"),
        "{error}"
    );
    // The same specs, one each, export.
    let fine = providers::export_specs(
        &[&search],
        &|_| true,
        WireFormat::OpenAiChat,
        &ExportOptions::new(),
    )
    .unwrap();
    assert_eq!(fine.tools[0]["function"]["strict"], true);
}

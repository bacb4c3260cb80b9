//! The main example: tools called through the validating runtime.
//!
//! Run: `cargo run --example quickstart`

use std::sync::Arc;

use behest::prelude::*;
use serde_json::{json, Value};

/// A tool written by hand: name, spec and `execute`.
struct GetWeather;

impl Tool for GetWeather {
    fn name(&self) -> &str {
        "get_weather"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "get_weather",
            "Get the current weather for a city.",
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. \"Paris\"."},
                    "units": {"enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"],
                "additionalProperties": false
            }),
        )
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let city = arguments["city"].as_str().unwrap_or_default();
        let celsius = arguments["units"] != "fahrenheit";
        let temperature = if celsius { 21 } else { 70 };
        Ok(ToolOutput::json(
            json!({"city": city, "temperature": temperature}),
        ))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(GetWeather))?;
    registry.register(
        "web_search",
        Arc::new(ExternalTool::new(
            "web_search",
            "Search the web.",
            json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
        )),
    )?;
    let runtime = ToolRuntime::new(registry);

    println!("tools the model sees:");
    for spec in runtime.registry().specs() {
        println!("  {}: {}", spec.name, spec.description);
    }

    // What a model might send, mistakes included: arguments as JSON text,
    // a misspelt field, a misspelt tool, and a call of a tool that runs
    // elsewhere.
    let calls = vec![
        ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#),
        ToolCall::new(
            "call_2",
            "get_weather",
            r#"{"cty": "Paris", "units": "kelvin"}"#,
        ),
        ToolCall::new("call_3", "get_wether", r#"{"city": "Paris"}"#),
        ToolCall::new("call_4", "web_search", r#"{"query": "rust"}"#),
    ];
    for result in runtime.call_batch(calls).await {
        let status = if result.is_error() { "error" } else { "ok" };
        println!("\n{} {} -> {status}", result.call_id, result.tool_name);
        println!("{}", result.to_model_text());
    }
    Ok(())
}

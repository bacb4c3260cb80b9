//! Tool search: a registry of three hundred tools, all deferred. The model
//! first sees only `search_tools`; it finds the tool it needs by what it
//! does, calls it from the next step on, and every request stays small.
//!
//! Run: `cargo run --example tool_search`.

use behest::prelude::*;
use behest::run::{ScriptedTurn, ToolSearch};
use behest::{Tool, ToolResult};
use serde_json::{json, Value};

/// One of many report tools, each for its own department.
struct Report(usize);

const DEPARTMENTS: [&str; 6] = [
    "sales", "billing", "shipping", "support", "payroll", "legal",
];

impl Tool for Report {
    fn name(&self) -> &str {
        // One name per tool, kept for the program's life.
        Box::leak(self.spec().name.into_boxed_str())
    }

    fn spec(&self) -> ToolSpec {
        let department = DEPARTMENTS[self.0 % DEPARTMENTS.len()];
        ToolSpec::new(
            format!("{department}_report_{}", self.0),
            format!("The {department} department's report number {}.", self.0),
            json!({"type": "object", "properties": {"month": {"type": "string"}}, "required": ["month"]}),
        )
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(format!(
            "report {} for {}",
            self.0, arguments["month"]
        )))
    }
}

/// Get the current weather for a city.
#[tool(read_only)]
fn get_weather(
    /// The city, e.g. "Paris".
    city: String,
) -> String {
    format!("Sunny in {city}, 21 °C.")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = ToolRegistry::new().with(GetWeather)?;
    for n in 0..300 {
        registry = registry.with(Report(n))?;
    }
    // Every tool deferred; a search finds up to five.
    let search = ToolSearch::new(&registry, |_| true).limit(5);
    let registry = registry.with(search.tool())?;
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new(
            "s1",
            "search_tools",
            r#"{"query": "weather"}"#,
        )])
        .expect_tools(["search_tools"]),
        ScriptedTurn::tool_calls([ToolCall::new("w1", "get_weather", r#"{"city": "Paris"}"#)]),
        ScriptedTurn::text("It is sunny in Paris."),
    ]);
    let agent = Agent::new(model, ToolRuntime::new(registry)).prepare_tools(search.prepare());
    let run = agent.invoke([Message::user("What's the weather in Paris?")]);
    run.on(|envelope, _| {
        if let EventKind::ModelMessage(message) = &envelope.kind {
            for call in &message.tool_calls {
                println!("the model calls {}({})", call.tool_name, call.arguments);
            }
        }
        if let EventKind::Tool(behest::run::ToolStreamEvent::Result { result }) = &envelope.kind {
            println!("  -> {}", result.to_model_text());
        }
    });
    let outcome = run.await;
    println!("answer: {}", outcome.text().unwrap_or("(none)"));
    Ok(())
}

//! The main example: a scripted model calls tools made with `#[tool]` and
//! one `#[external_tool]` that a handler answers, while the run's events are
//! printed as they happen.
//!
//! Run: `cargo run --example quickstart`

use std::sync::Arc;

use behest::prelude::*;
use behest::run::ScriptedTurn;
use behest::{external_tool, tool, ScriptedModel};

/// Get the current weather for a city.
#[tool(read_only)]
async fn get_weather(
    /// City name, e.g. "Paris".
    city: String,
) -> String {
    format!("Sunny and 21 °C in {city}.")
}

/// Convert an amount of euros to US dollars.
#[tool]
fn euros_to_dollars(amount: f64) -> f64 {
    (amount * 1.08 * 100.0).round() / 100.0
}

/// Search the web. Answered by a handler, as a service elsewhere would.
#[external_tool]
struct WebSearch {
    /// What to search for.
    query: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(GetWeather))?;
    registry.register_tool(Arc::new(EurosToDollars))?;
    registry.register_tool(Arc::new(WebSearch::external_tool()))?;

    // What a model would do, scripted so that this runs with no network: a
    // first turn with three calls (one with a misspelt argument), then a
    // correction, then the answer.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#),
            ToolCall::new("call_2", "euros_to_dollars", r#"{"amout": 40}"#),
            ToolCall::new(
                "call_3",
                "web_search",
                r#"{"query": "Paris museums open on Monday"}"#,
            ),
        ]),
        ScriptedTurn::tool_calls([ToolCall::new(
            "call_4",
            "euros_to_dollars",
            r#"{"amount": 40}"#,
        )])
        .expect_error("call_2", "did you mean `amount`?"),
        ScriptedTurn::text(
            "Sunny and 21 °C in Paris; 40 € is $43.20; the Louvre is open on Monday.",
        )
        .expect_ok("call_4", "43.2")
        .expect_ok("call_3", "Louvre"),
    ]);

    let agent = Agent::new(model, ToolRuntime::new(registry));
    let invocation = agent.invoke([Message::user("Plan my Monday in Paris with 40 euros.")]);

    // Print every event; answer `web_search` calls.
    invocation.on(|envelope, control| {
        println!("{:>2} {}", envelope.sequence, describe(&envelope.kind));
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            if let Ok(search) = WebSearch::from_call(&call) {
                let answer = format!(
                    "Top result for {:?}: the Louvre is open on Monday.",
                    search.query
                );
                if let Err(error) = control.resolve(&call.call_id, Ok(ToolOutput::text(answer))) {
                    eprintln!("could not answer {}: {error}", call.call_id);
                }
            }
        }
    });

    match invocation.await {
        RunOutcome::Completed { text, .. } => println!("\nanswer: {text}"),
        other => return Err(format!("the run did not complete: {other:?}").into()),
    }
    Ok(())
}

fn describe(kind: &EventKind) -> String {
    match kind {
        EventKind::State(state) => format!("state    {state:?}"),
        EventKind::ModelMessage(message) => match &message.text {
            Some(text) => format!("model    {text}"),
            None => format!("model    calls {} tool(s)", message.tool_calls.len()),
        },
        EventKind::Tool(ToolStreamEvent::Call { call, external }) => {
            let place = if *external { "external" } else { "local" };
            format!(
                "call     {} {} ({place}) {}",
                call.call_id, call.tool_name, call.arguments
            )
        }
        EventKind::Tool(ToolStreamEvent::Result { result }) => {
            let status = if result.is_error() { "error" } else { "ok" };
            format!(
                "result   {} {status}: {}",
                result.call_id,
                result.to_model_text().replace('\n', " ")
            )
        }
        EventKind::Tool(other) => format!("tool     {other:?}"),
        other => format!("{other:?}"),
    }
}

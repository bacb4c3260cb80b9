//! A run's telemetry exported over OTLP by the OpenTelemetry GenAI
//! conventions: `invoke_agent support` holding `chat {model}` for each
//! model request and `execute_tool {name}` for each call, the agent
//! `poet` inside its call, and the `gen_ai.client.*` metrics.
//!
//! Run a collector (an OpenTelemetry Collector, Jaeger, Grafana's LGTM
//! image, Logfire…) taking OTLP/HTTP on `localhost:4318`, then:
//! `cargo run --example telemetry --features otel`. The standard
//! `OTEL_EXPORTER_OTLP_ENDPOINT` names another collector. Without
//! `OPENAI_API_KEY` the model is scripted (its turns have no `chat` span:
//! only a request to a provider does); with it, `gpt-4.1-mini` answers.
//! Without a collector the run still runs; what could not be sent is lost.

use behest::models::openai::Chat;
use behest::prelude::*;
use behest::run::ScriptedTurn;
use behest::telemetry::Otlp;

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
    let telemetry = Otlp::new("behest-example").install()?;
    let real = std::env::var_os("OPENAI_API_KEY").is_some();
    let model = |turns: Vec<ScriptedTurn>| -> std::sync::Arc<dyn behest::Model> {
        if real {
            std::sync::Arc::new(Chat::new("gpt-4.1-mini"))
        } else {
            std::sync::Arc::new(ScriptedModel::new(turns))
        }
    };
    let poet = Agent::from_arc(
        model(vec![ScriptedTurn::text(
            "The sun sits warm on Paris' stones.",
        )]),
        ToolRuntime::new(ToolRegistry::new()),
    )
    .name("poet")
    .instructions("Write one line of verse.");
    let tools = ToolRegistry::new()
        .with(GetWeather)?
        .with(poet.as_tool("poet", "Writes a line of verse about a subject."))?;
    let support = Agent::from_arc(
        model(vec![
            ScriptedTurn::tool_calls([
                ToolCall::new("w1", "get_weather", r#"{"city": "Paris"}"#),
                ToolCall::new("p1", "poet", r#"{"input": "the sun in Paris"}"#),
            ]),
            ScriptedTurn::text("Sunny in Paris, 21 °C. The sun sits warm on Paris' stones."),
        ]),
        ToolRuntime::new(tools),
    )
    .name("support");
    let outcome = support
        .invoke([Message::user(
            "What's the weather in Paris? And a line of verse.",
        )])
        .await;
    println!("{}", outcome.text().unwrap_or("(the run did not complete)"));
    // Sends the spans and metrics that are left before the process ends.
    telemetry.shutdown()?;
    Ok(())
}

//! Agents as tools: a lead agent asks two specialist agents, each with
//! its own model, tools and instructions, and writes the answer. The
//! specialists' events arrive in the lead's stream, nested under the calls
//! that ran them, as a UI would draw a tree; their tokens count in the
//! lead's usage.
//!
//! Offline, every model is scripted. To use real ones, swap the three
//! lines that make the models (for example
//! `behest::models::openai::Chat::new("gpt-4.1-mini")`, with the `models`
//! feature and `OPENAI_API_KEY`).
//!
//! Run: `cargo run --example agents_as_tools`

use behest::prelude::*;
use behest::run::{AgentEvent, ScriptedTurn};
use behest::{AssistantMessage, Usage};
use futures::StreamExt;

/// Today's exchange rate from euros to a currency.
#[tool(read_only)]
fn exchange_rate(currency: String) -> f64 {
    match currency.as_str() {
        "USD" => 1.08,
        "GBP" => 0.85,
        _ => 1.0,
    }
}

fn turn(reply: AssistantMessage, tokens: u64) -> ScriptedTurn {
    ScriptedTurn::reply(reply.with_usage(Usage {
        input_tokens: tokens,
        output_tokens: tokens / 10,
        ..Usage::default()
    }))
}

/// Draws one event of the tree, indented by how deep it is; a nested
/// agent's name once, at its first event.
fn draw(kind: &EventKind, depth: usize, started: &mut Vec<String>) {
    let indent = "  ".repeat(depth);
    match kind {
        EventKind::Agent(AgentEvent {
            agent,
            call_id,
            kind,
            ..
        }) => {
            let key = format!("{depth}/{call_id}");
            if !started.contains(&key) {
                println!("{indent}[{agent}, for call {call_id}]");
                started.push(key);
            }
            draw(kind, depth + 1, started);
        }
        EventKind::ModelMessage(reply) => {
            for call in &reply.tool_calls {
                println!("{indent}calls {}({})", call.tool_name, call.arguments);
            }
            if let Some(text) = &reply.text {
                println!("{indent}says {text:?}");
            }
        }
        _ => {}
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let rates_model = ScriptedModel::new([
        turn(
            AssistantMessage::tool_calls([ToolCall::new(
                "r1",
                "exchange_rate",
                r#"{"currency": "USD"}"#,
            )]),
            300,
        ),
        turn(AssistantMessage::text("1 EUR is 1.08 USD."), 400),
    ]);
    let rates = Agent::new(
        rates_model,
        ToolRuntime::new(ToolRegistry::new().with(ExchangeRate)?),
    )
    .instructions("You know exchange rates. Use the tool.");

    let writer_model = ScriptedModel::new([turn(
        AssistantMessage::text("Good news: your 100 EUR come to 108 USD."),
        200,
    )]);
    let writer = Agent::new(writer_model, ToolRuntime::new(ToolRegistry::new()))
        .instructions("You write short, friendly messages.");

    let lead_model = ScriptedModel::new([
        turn(
            AssistantMessage::tool_calls([ToolCall::new(
                "c1",
                "rates",
                r#"{"input": "How many USD is 1 EUR today?"}"#,
            )]),
            100,
        ),
        turn(
            AssistantMessage::tool_calls([ToolCall::new(
                "c2",
                "writer",
                r#"{"input": "Tell the customer their 100 EUR are 108 USD."}"#,
            )]),
            150,
        ),
        turn(
            AssistantMessage::text("Good news: your 100 EUR come to 108 USD."),
            200,
        ),
    ]);
    let specialists = ToolRegistry::new()
        .with(rates.as_tool("rates", "Answers questions about exchange rates."))?
        .with(writer.as_tool("writer", "Writes a message for the customer."))?;
    let lead = Agent::new(lead_model, ToolRuntime::new(specialists))
        .instructions("You answer customers, asking your specialists.");

    let run = lead.invoke([Message::user("What are my 100 EUR in dollars?")]);
    let events = run.events();
    let outcome = run.await;
    let events: Vec<EventKind> = events.map(|envelope| envelope.kind).collect().await;
    let mut started = Vec::new();
    for kind in &events {
        draw(kind, 0, &mut started);
    }
    let usage = outcome.usage();
    println!("answer: {}", outcome.text().unwrap_or("none"));
    println!(
        "tokens, the specialists' included: {} in, {} out",
        usage.input_tokens, usage.output_tokens
    );
    Ok(())
}

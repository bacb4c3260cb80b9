//! Usage and cost limits: a run that may spend at most 10 model requests,
//! 2 calls of the tool that moves money, 100 000 tokens and 1 cent, priced
//! from the built-in table of list prices.
//!
//! The model here is scripted (offline, no key): it looks order 42 up,
//! then refunds orders 42, 43 and 44 one by one, and the run stops at the
//! refund limit before the third refund runs. To run it against a real model,
//! swap the one line that makes `model` (for example
//! `behest::models::openai::Chat::new("gpt-4o-mini")`, with the `models`
//! feature and `OPENAI_API_KEY`).
//!
//! Run: `cargo run --example usage_limits`

use behest::prelude::*;
use behest::run::{Prices, ScriptedTurn, UsageLimits, PRICES_AS_OF};
use behest::{AssistantMessage, Usage};

/// Look an order up.
#[tool(read_only)]
fn look_up(order: u32) -> String {
    format!("order {order}: 59 EUR, paid")
}

/// Refund an order.
#[tool]
fn refund(order: u32) -> String {
    format!("order {order} refunded")
}

/// A scripted turn calling `tool` on `order`, having used 1 200 input
/// and 80 output tokens.
fn calls(id: &str, tool: &str, order: u32) -> ScriptedTurn {
    let mut reply = AssistantMessage::default();
    let arguments = format!(r#"{{"order": {order}}}"#);
    reply.tool_calls = vec![ToolCall::new(id, tool, arguments)];
    ScriptedTurn::reply(reply.with_usage(Usage {
        input_tokens: 1_200,
        output_tokens: 80,
        ..Usage::default()
    }))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        calls("c1", "look_up", 42),
        calls("c2", "refund", 42),
        calls("c3", "refund", 43),
        calls("c4", "refund", 44),
        ScriptedTurn::text("Refunded."),
    ]);
    let price = Prices::builtin()
        .get("gpt-4o-mini")
        .ok_or("no price for gpt-4o-mini")?;
    let limits = UsageLimits::new()
        .requests(10)
        .tool_calls_of("refund", 2)
        .cost(0.01, price)
        .total_tokens(100_000);
    let registry = ToolRegistry::new().with(LookUp)?.with(Refund)?;
    let agent = Agent::new(model, ToolRuntime::new(registry)).usage_limits(limits);
    let outcome = agent
        .invoke([Message::user("Refund orders 42, 43 and 44.")])
        .await;

    let usage = outcome.usage();
    println!(
        "{} requests, {} input and {} output tokens: ${:.6} at gpt-4o-mini's list price of {PRICES_AS_OF}",
        outcome
            .transcript()
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count(),
        usage.input_tokens,
        usage.output_tokens,
        price.cost(&usage),
    );
    match &outcome {
        RunOutcome::Failed { error, .. } => println!("stopped: {error}"),
        other => println!("ended: {:?}", other.state()),
    }
    for message in outcome.transcript() {
        if let Message::ToolResult(result) = message {
            println!("  {}: {}", result.call_id, result.content);
        }
    }
    Ok(())
}

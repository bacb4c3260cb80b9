//! Handoffs: a triage agent hands the conversation to the billing agent,
//! which has its own instructions and the refund tool; the run goes on
//! there and ends with its answer. The triage agent's tool-calling
//! history is filtered out of what billing sees.
//!
//! Offline, the models are scripted. To use real ones, swap the two lines
//! that make them (for example
//! `behest::models::anthropic::Messages::new("claude-haiku-4-5")`, with the
//! `models` feature and `ANTHROPIC_API_KEY`).
//!
//! Run: `cargo run --example handoffs`

use behest::prelude::*;
use behest::run::ScriptedTurn;

/// Refund an order.
#[tool]
fn refund(order: u32) -> String {
    format!("order {order} refunded")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let billing_model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("b1", "refund", r#"{"order": 42}"#)]),
        ScriptedTurn::text("I have refunded order 42; the money is back in 3 to 5 days."),
    ]);
    let billing = Agent::new(
        billing_model,
        ToolRuntime::new(ToolRegistry::new().with(Refund)?),
    )
    .instructions("You handle refunds and invoices. Refund when the customer asks.");

    let triage_model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
        "t1",
        "transfer_to_billing",
        "{}",
    )])]);
    let triage = Agent::new(triage_model, ToolRuntime::new(ToolRegistry::new()))
        .instructions("You route each question to the agent for it.")
        .handoff_filtered(
            "billing",
            "refunds, invoices and payments",
            billing,
            // Billing sees what the user said, not the triage's calls.
            |conversation| {
                conversation
                    .into_iter()
                    .filter(|message| {
                        matches!(message, Message::User { .. } | Message::System { .. })
                    })
                    .collect()
            },
        );

    let run = triage.invoke([Message::user("Please refund order 42.")]);
    run.on(|envelope, _control| {
        if let EventKind::Handoff { to } = &envelope.kind {
            println!("→ handed to {to}");
        }
    });
    let outcome = run.await;
    for message in outcome.transcript() {
        match message {
            Message::System { text } => println!("system: {text}"),
            Message::User { text } => println!("user: {text}"),
            Message::ToolResult(result) => println!("  {}: {}", result.tool_name, result.content),
            Message::Assistant(reply) if reply.text.is_some() => {
                println!("assistant: {}", reply.text.as_deref().unwrap_or_default());
            }
            _ => {}
        }
    }
    Ok(())
}

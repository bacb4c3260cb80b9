//! A run that stops where it waits for a person and goes on later: the
//! first "request" runs the support agent until a refund needs an
//! approval, writes the run's state to a file and ends; the second, as
//! another process would, reads the state, approves the refund and goes
//! on to the answer.
//!
//! Offline, the model is scripted. To use a real one, swap the line that
//! makes it (for example `behest::models::openai::Chat::new("gpt-4.1-mini")`,
//! with the `models` feature and `OPENAI_API_KEY`).
//!
//! Run: `cargo run --example pause_resume`

use behest::prelude::*;
use behest::run::{RunState, ScriptedTurn, WaitKind};

/// Look an order up.
#[tool]
fn look_up(order: u32) -> String {
    format!("order {order}: paid 42.00 EUR, arrived damaged")
}

/// Refund an order; a person approves each refund.
#[tool(needs_approval)]
fn refund(order: u32) -> String {
    format!("order {order} refunded")
}

/// The agent, as every process of the service builds it.
fn support() -> Result<Agent, Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 42}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c2", "refund", r#"{"order": 42}"#)]),
        ScriptedTurn::text("Order 42 arrived damaged, so I have refunded it."),
    ]);
    let tools = ToolRegistry::new().with(LookUp)?.with(Refund)?;
    Ok(Agent::new(model, ToolRuntime::new(tools))
        .instructions("You help customers with their orders."))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let agent = support()?;
    let saved = std::env::temp_dir().join(format!("behest-run-{}.json", std::process::id()));

    // The customer's request: the run stops where the refund waits.
    let outcome = agent
        .invoke([Message::user("My order 42 arrived broken.")])
        .pause_at_waits()
        .await;
    let Some(state) = outcome.paused() else {
        return Err(format!("the run did not stop: {outcome:?}").into());
    };
    for wait in state.waits() {
        let what = match wait.kind {
            WaitKind::Approval => "an approval",
            _ => "an answer",
        };
        println!(
            "waiting for {what}: {} {}",
            wait.call.tool_name, wait.call.arguments
        );
    }
    std::fs::write(&saved, serde_json::to_vec(state)?)?;
    println!(
        "state saved ({} bytes, {} messages, {} requests so far)",
        std::fs::metadata(&saved)?.len(),
        state.transcript().len(),
        state.spent().requests
    );

    // The approval, in another request: read the state, answer, go on. (A
    // service builds the same agent in every process; here it is the one
    // above, whose scripted model goes on with its script.)
    let mut state: RunState = serde_json::from_slice(&std::fs::read(&saved)?)?;
    std::fs::remove_file(&saved)?;
    state.approve("c2")?;
    let run = agent.resume(state);
    run.on(|envelope, _control| {
        if let EventKind::Tool(ToolStreamEvent::Result { result }) = envelope.kind {
            println!("<- {}", result.to_model_text());
        }
    });
    let outcome = run.await;
    match outcome.text() {
        Some(text) => {
            println!("answer: {text}");
            println!("requests in all: {}", outcome.spent().requests);
            Ok(())
        }
        None => Err(format!("the run did not complete: {outcome:?}").into()),
    }
}

//! The tools of each step: the refund tool is offered only once the model
//! has looked the order up, and each description says how many steps are
//! left. A refund called before that is not run; the model reads why.
//!
//! Offline, the model is scripted (it tries the refund too early). To use
//! a real one, swap the line that makes `model` (for example
//! `behest::models::openai::Chat::new("gpt-4.1-mini")`, with the `models`
//! feature and `OPENAI_API_KEY`).
//!
//! Run: `cargo run --example prepared_tools`

use behest::prelude::*;
use behest::run::ScriptedTurn;

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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "refund", r#"{"order": 42}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c2", "look_up", r#"{"order": 42}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c3", "refund", r#"{"order": 42}"#)]),
        ScriptedTurn::text("Order 42 is refunded."),
    ]);
    let max_steps = 8;
    let registry = ToolRegistry::new().with(LookUp)?.with(Refund)?;
    let agent = Agent::new(model, ToolRuntime::new(registry))
        .max_steps(max_steps)
        .prepare_tools(move |step, tools| {
            let looked_up = step.transcript.iter().any(|message| {
                matches!(message, Message::ToolResult(result)
                    if result.tool_name == "look_up" && !result.is_error)
            });
            let offered: Vec<ToolSpec> = tools
                .into_iter()
                .filter(|tool| looked_up || tool.name != "refund")
                .map(|mut tool| {
                    let left = max_steps.saturating_sub(step.turn);
                    tool.description = format!("{} ({left} steps left)", tool.description);
                    tool
                })
                .collect();
            let names: Vec<&str> = offered.iter().map(|tool| tool.name.as_str()).collect();
            println!("step {}: offers {names:?}", step.turn);
            offered
        });
    let outcome = agent.invoke([Message::user("Refund order 42.")]).await;
    for message in outcome.transcript() {
        if let Message::ToolResult(result) = message {
            println!(
                "  {} {}: {}",
                result.call_id, result.tool_name, result.content
            );
        }
    }
    println!("answer: {}", outcome.text().unwrap_or("none"));
    Ok(())
}

//! A typed answer that streams: partial values of the output type while
//! the model writes it, then the validated answer, as a UI would show a
//! form filling in.
//!
//! Offline, the model is scripted and streams its answer a few characters
//! at a time, as a provider's stream does. To use a real one, swap the line
//! that makes `model` (for example
//! `behest::models::openai::Chat::new("gpt-4.1-mini")`, with the `models`
//! feature and `OPENAI_API_KEY`): its stream gives the pieces.
//!
//! Run: `cargo run --example streamed_output`

use behest::prelude::*;
use behest::run::{OutputUpdate, ScriptedTurn};
use futures::StreamExt;

/// A trip plan.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct Plan {
    /// Where to.
    destination: String,
    /// One line per day.
    days: Vec<String>,
}

/// What is shown while the plan streams: every field may be missing yet.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default)]
struct Draft {
    destination: Option<String>,
    days: Vec<String>,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let answer =
        r#"{"destination": "Lisbon", "days": ["Alfama and the castle", "Belém", "Sintra"]}"#;
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
        "c1",
        "final_answer",
        answer,
    )])])
    .with_streaming(6);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new())).with_output::<Plan>();

    let run = agent.invoke([Message::user("Plan three days in Lisbon.")]);
    let mut updates = run.partial_output::<Draft>();
    let shown = tokio::spawn(async move {
        while let Some(update) = updates.next().await {
            match update {
                OutputUpdate::Partial(draft) => println!(
                    "… {} | {}",
                    draft.destination.as_deref().unwrap_or(""),
                    draft.days.join(" / ")
                ),
                OutputUpdate::Final(draft) => {
                    println!(
                        "✓ {} | {}",
                        draft.destination.unwrap_or_default(),
                        draft.days.join(" / ")
                    );
                }
            }
        }
    });
    let outcome = run.await;
    shown.await?;
    let plan: Plan = outcome.output()?;
    println!("{} days in {}", plan.days.len(), plan.destination);
    Ok(())
}

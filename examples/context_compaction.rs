//! Context management: an agent reads a long document page by page; as
//! the conversation nears the model's context window, the old pages are
//! summarised by a second model and dropped, keeping the latest turns and
//! every tool result beside its call. The table of contents, read first, is
//! kept through every compaction (`.keep_tool(..)`).
//!
//! Offline, both models are scripted (each turn reports the tokens the
//! conversation has grown to, as a provider does). To use real ones, swap
//! the lines that make `model` and `summariser` (for example
//! `behest::models::openai::Chat::new("gpt-4.1-mini")`, with the `models`
//! feature and `OPENAI_API_KEY`) and use `context_window_of` for its window.
//!
//! Run: `cargo run --example context_compaction`

use std::sync::Arc;

use behest::prelude::*;
use behest::run::{Compaction, ContextPolicy, ScriptedTurn};
use behest::{AssistantMessage, Usage};

/// A page of the document.
#[tool(read_only)]
fn read_page(page: u32) -> String {
    format!(
        "page {page}: {}",
        "The committee met and agreed. ".repeat(60)
    )
}

/// The document's table of contents.
#[tool(read_only)]
fn table_of_contents() -> String {
    "1. Minutes of the ten meetings, a page each.".to_owned()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let contents = AssistantMessage::tool_calls([ToolCall::new("t0", "table_of_contents", "{}")]);
    let mut turns = vec![ScriptedTurn::reply(contents.with_usage(Usage {
        input_tokens: 100,
        output_tokens: 10,
        ..Usage::default()
    }))];
    turns.extend((0..10u32).map(|page| {
        let reply = AssistantMessage::tool_calls([ToolCall::new(
            format!("c{page}"),
            "read_page",
            format!(r#"{{"page": {page}}}"#),
        )]);
        ScriptedTurn::reply(reply.with_usage(Usage {
            input_tokens: 120 + 460 * u64::from(page),
            output_tokens: 12,
            ..Usage::default()
        }))
    }));
    turns.push(ScriptedTurn::text(
        "The committee met ten times and agreed each time.",
    ));
    let model = ScriptedModel::new(turns);
    let summariser =
        Arc::new(ScriptedModel::new((0..10).map(|_| {
            ScriptedTurn::text("The first pages say the committee met and agreed.")
        })));

    let policy = ContextPolicy::new(3_000)
        .compact_at(0.8)
        .compaction(Compaction::Summarize {
            model: summariser,
            keep: 4,
        })
        .keep_tool("table_of_contents");
    let registry = ToolRegistry::new().with(ReadPage)?.with(TableOfContents)?;
    let agent = Agent::new(model, ToolRuntime::new(registry))
        .instructions("Read every page, then say what the document is about.")
        .max_steps(13)
        .context(policy);

    let run = agent.invoke([Message::user("What is the document about?")]);
    run.on(|envelope, _control| {
        if let EventKind::Compacted { before, after } = envelope.kind {
            println!("compacted: about {before} tokens → {after}");
        }
    });
    let outcome = run.await;
    println!(
        "{} messages kept; {} input tokens spent in all",
        outcome.transcript().len(),
        outcome.usage().input_tokens
    );
    if let Some(Message::User { text }) = outcome.transcript().get(1) {
        if let Some(at) = text.find("(Earlier") {
            println!("the user's first message now ends: {}", &text[at..]);
        }
    }
    let contents_kept = outcome.transcript().iter().any(|message| {
        matches!(message, Message::ToolResult(result) if result.tool_name == "table_of_contents")
    });
    println!("the table of contents is still there: {contents_kept}");
    println!("answer: {}", outcome.text().unwrap_or("none"));
    Ok(())
}

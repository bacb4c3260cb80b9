//! Context management.

use std::sync::Arc;

use behest::providers::{anthropic, gemini, openai};
use behest::run::{Compaction, ContextPolicy, RunError, ScriptedTurn};
use behest::{
    tool, Agent, AssistantMessage, EventKind, Message, RunOutcome, ScriptedModel, ToolCall,
    ToolRegistry, ToolRuntime, Usage,
};
use futures::StreamExt;
use serde_json::Value;

/// A page of a long document.
#[tool]
fn read_page(page: u32) -> String {
    format!("page {page}: {}", "lorem ipsum ".repeat(200))
}

/// Twelve rounds reading pages (each turn counted at the size the
/// conversation has grown to), then the answer.
fn reader() -> ScriptedModel {
    let mut turns: Vec<ScriptedTurn> = (0..12u32)
        .map(|page| {
            let reply = AssistantMessage::tool_calls([ToolCall::new(
                format!("c{page}"),
                "read_page",
                format!(r#"{{"page": {page}}}"#),
            )])
            .with_usage(Usage {
                input_tokens: 100 + 650 * u64::from(page),
                output_tokens: 10,
                ..Usage::default()
            });
            ScriptedTurn::reply(reply)
        })
        .collect();
    turns.push(ScriptedTurn::text("The document is about lorem ipsum."));
    ScriptedModel::new(turns)
}

fn agent(policy: ContextPolicy) -> Agent {
    Agent::new(
        reader(),
        ToolRuntime::new(ToolRegistry::new().with(ReadPage).unwrap()),
    )
    .instructions("Read the document, then say what it is about.")
    .context(policy)
}

/// Each provider's rule that a tool result follows its call, checked
/// on what behest would send it.
pub(crate) fn every_provider_takes(transcript: &[Message]) {
    // Chat: `tool` messages answer the calls of the assistant message
    // before them, and every call is answered before anything else.
    let mut open: Vec<String> = Vec::new();
    for message in openai::chat::messages(transcript) {
        match message["role"].as_str() {
            Some("tool") => {
                let id = message["tool_call_id"].as_str().unwrap().to_owned();
                assert!(open.contains(&id), "chat: {id} answers no call");
                open.retain(|open| *open != id);
            }
            role => {
                assert!(open.is_empty(), "chat: {open:?} unanswered before {role:?}");
                open = message["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|call| call["id"].as_str().unwrap().to_owned())
                    .collect();
            }
        }
    }
    // Responses: every `function_call_output` has its call before it.
    let mut called = Vec::new();
    for item in openai::responses::messages(transcript) {
        match item["type"].as_str() {
            Some("function_call") => called.push(item["call_id"].clone()),
            Some("function_call_output") => {
                assert!(called.contains(&item["call_id"]), "responses: {item}");
            }
            _ => {}
        }
    }
    // Anthropic: the first message is the user's; the `tool_result`s
    // of a user message answer the `tool_use`s of the message before.
    let (_, messages) = anthropic::messages(transcript);
    assert_eq!(messages[0]["role"], "user");
    let blocks = |message: &Value, kind: &str, key: &str| -> Vec<Value> {
        message["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|block| block["type"] == kind)
            .map(|block| block[key].clone())
            .collect()
    };
    for pair in messages.windows(2) {
        let uses = blocks(&pair[0], "tool_use", "id");
        let results = blocks(&pair[1], "tool_result", "tool_use_id");
        assert_eq!(uses, results, "anthropic: {pair:?}");
    }
    // Gemini: the function responses of a turn answer the calls of the
    // model turn before it, by name, one for one.
    let (_, contents) = gemini::messages(transcript);
    assert_eq!(contents[0]["role"], "user");
    let parts = |content: &Value, kind: &str| -> Vec<Value> {
        content["parts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|part| part.get(kind).map(|call| call["name"].clone()))
            .collect()
    };
    for pair in contents.windows(2) {
        let calls = parts(&pair[0], "functionCall");
        if !calls.is_empty() {
            assert_eq!(
                calls,
                parts(&pair[1], "functionResponse"),
                "gemini: {pair:?}"
            );
        }
    }
}

async fn run(agent: Agent) -> (RunOutcome, Vec<(u64, u64)>) {
    let run = agent.invoke([Message::user("What is the document about?")]);
    let events = run.events();
    let outcome = run.await;
    let compactions = events
        .filter_map(|envelope| async move {
            match envelope.kind {
                EventKind::Compacted { before, after } => Some((before, after)),
                _ => None,
            }
        })
        .collect()
        .await;
    (outcome, compactions)
}

/// Every turn's tokens, summed from the script: what the run's usage
/// must still count after compaction dropped turns.
const SPENT: u64 = 12 * 100 + 650 * 66;

#[tokio::test]
async fn old_tool_outputs_are_dropped_and_every_provider_takes_the_rest() {
    let (outcome, compactions) = run(agent(
        ContextPolicy::new(4_000).compaction(Compaction::DropToolOutputs { keep: 2 }),
    ))
    .await;
    assert_eq!(outcome.text(), Some("The document is about lorem ipsum."));
    assert!(!compactions.is_empty());
    assert!(
        compactions.iter().all(|(before, after)| after < before),
        "{compactions:?}"
    );
    let transcript = outcome.transcript();
    let kept = transcript
        .iter()
        .filter(|message| matches!(message, Message::ToolResult(result) if result.content.starts_with("page")))
        .count();
    assert_eq!(kept, 2);
    assert_eq!(outcome.usage().input_tokens, SPENT);
    every_provider_takes(transcript);
}

#[tokio::test]
async fn old_turns_are_dropped_and_every_provider_takes_the_rest() {
    let (outcome, compactions) = run(agent(
        ContextPolicy::new(4_000).compaction(Compaction::DropOldTurns { keep: 4 }),
    ))
    .await;
    assert_eq!(outcome.text(), Some("The document is about lorem ipsum."));
    assert!(!compactions.is_empty());
    let transcript = outcome.transcript();
    assert!(transcript.len() < 2 + 2 * 12 + 1, "{}", transcript.len());
    assert_eq!(
        transcript[0],
        Message::system("Read the document, then say what it is about.")
    );
    assert_eq!(transcript[1], Message::user("What is the document about?"));
    assert_eq!(
        outcome.usage().input_tokens,
        SPENT,
        "dropped turns still count"
    );
    every_provider_takes(transcript);
}

#[tokio::test]
async fn old_turns_are_summarised_by_a_model() {
    let summariser = Arc::new(ScriptedModel::new(
        (0..12).map(|_| ScriptedTurn::text("pages of lorem ipsum were read")),
    ));
    let (outcome, compactions) = run(agent(ContextPolicy::new(4_000).compaction(
        Compaction::Summarize {
            model: summariser.clone(),
            keep: 4,
        },
    )))
    .await;
    assert_eq!(outcome.text(), Some("The document is about lorem ipsum."));
    assert!(summariser.remaining() < 12, "the summariser was asked");
    assert!(!compactions.is_empty());
    let Message::User { text } = &outcome.transcript()[1] else {
        panic!("{outcome:?}");
    };
    assert!(
        text.contains("summarised: pages of lorem ipsum were read"),
        "{text}"
    );
    every_provider_takes(outcome.transcript());
}

/// The checks above fail on a result whose call was dropped.
#[test]
fn the_provider_checks_catch_a_result_without_its_call() {
    use behest::run::ToolResultMessage;
    let orphan = [
        Message::user("hi"),
        Message::ToolResult(ToolResultMessage::new("c9", "read_page", "page 9")),
        Message::Assistant(AssistantMessage::text("done")),
    ];
    let caught = std::panic::catch_unwind(|| every_provider_takes(&orphan));
    assert!(caught.is_err());
}

#[tokio::test]
async fn a_policy_of_your_own_that_orphans_a_result_fails_the_run_clearly() {
    let orphaning: behest::run::CompactFn = Arc::new(|mut conversation: Vec<Message>| {
        Box::pin(async move {
            // Drops the first model turn but not its result.
            if let Some(at) = conversation
                .iter()
                .position(|message| matches!(message, Message::Assistant(_)))
            {
                conversation.remove(at);
            }
            conversation
        })
    });
    let (outcome, _) = run(agent(
        ContextPolicy::new(4_000).compaction(Compaction::Custom(orphaning)),
    ))
    .await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(matches!(error, RunError::Context { .. }), "{error}");
    assert!(
        error.to_string().contains("has no call before it"),
        "{error}"
    );
}

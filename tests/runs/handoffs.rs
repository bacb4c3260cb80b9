//! Handoffs.

use behest::run::{RunError, ScriptedTurn, MAX_HANDOFFS};
use behest::{
    Agent, AssistantMessage, EventKind, Message, RunOutcome, ScriptedModel, ToolCall, ToolRegistry,
    ToolRuntime, Usage,
};
use futures::StreamExt;

fn empty() -> ToolRuntime {
    ToolRuntime::new(ToolRegistry::new())
}

fn handing_off(id: &str, to: &str) -> ScriptedTurn {
    let reply = AssistantMessage::tool_calls([
        ToolCall::new(id, format!("transfer_to_{to}"), "{}"),
        ToolCall::new(format!("{id}-other"), "look_up", "{}"),
    ])
    .with_usage(Usage {
        input_tokens: 10,
        ..Usage::default()
    });
    ScriptedTurn::reply(reply)
}

#[tokio::test]
async fn a_handoff_goes_on_with_the_next_agent_and_its_instructions() {
    let billing = Agent::new(
        ScriptedModel::new([ScriptedTurn::text("Refunded.")
            .expect_ok("h1", "Handed off to billing")
            .expect_error("h1-other", "handed off to billing")]),
        empty(),
    )
    .instructions("You handle billing.");
    let triage = Agent::new(
        ScriptedModel::new([handing_off("h1", "billing").expect_tools(["transfer_to_billing"])]),
        empty(),
    )
    .instructions("You route questions.")
    .handoff("billing", "refunds and invoices", billing);
    let run = triage.invoke([Message::user("Refund me")]);
    let events = run.events();
    let outcome = run.await;
    assert_eq!(outcome.text(), Some("Refunded."), "{outcome:?}");
    let transcript = outcome.transcript();
    assert_eq!(transcript[0], Message::system("You handle billing."));
    assert!(!transcript.contains(&Message::system("You route questions.")));
    assert_eq!(outcome.usage().input_tokens, 10);
    let handed: Vec<String> = events
        .filter_map(|envelope| async move {
            match envelope.kind {
                EventKind::Handoff { to } => Some(to),
                _ => None,
            }
        })
        .collect()
        .await;
    assert_eq!(handed, ["billing"]);
}

#[tokio::test]
async fn an_input_filter_decides_what_the_next_agent_sees() {
    let billing = Agent::new(ScriptedModel::new([ScriptedTurn::text("ok")]), empty());
    let triage = Agent::new(ScriptedModel::new([handing_off("h1", "billing")]), empty())
        .handoff_filtered("billing", "refunds", billing, |conversation| {
            // Only what the user said.
            conversation
                .into_iter()
                .filter(|message| matches!(message, Message::User { .. }))
                .collect()
        });
    let outcome = triage
        .invoke([Message::user("first"), Message::user("Refund me")])
        .await;
    let transcript = outcome.transcript();
    assert_eq!(transcript.len(), 3, "{transcript:?}");
    assert_eq!(transcript[1], Message::user("Refund me"));
}

#[tokio::test]
async fn a_run_handed_on_past_the_limit_fails() {
    // a0 hands to a1, a1 to a2, and so on: one handoff too many.
    let mut next = Agent::new(ScriptedModel::new([ScriptedTurn::text("end")]), empty());
    for n in (0..=MAX_HANDOFFS).rev() {
        let to = format!("a{}", n + 1);
        let turn = ScriptedTurn::tool_calls([ToolCall::new(
            format!("h{n}"),
            format!("transfer_to_{to}"),
            "{}",
        )]);
        next = Agent::new(ScriptedModel::new([turn]), empty()).handoff(to, "the next", next);
    }
    let outcome = next.invoke([Message::user("go")]).await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(*error, RunError::Handoffs { max: MAX_HANDOFFS });
    assert!(error.to_string().contains("more than 8 times"), "{error}");
}

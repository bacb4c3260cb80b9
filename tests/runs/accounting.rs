//! Spending that must not slip past the limits.

use behest::run::{
    Failure, FallbackModel, ModelError, RunError, ScriptedTurn, UsageLimit, UsageLimits,
};
use behest::{
    Agent, AssistantMessage, Message, RunOutcome, ScriptedModel, StopKind, StopReason, ToolCall,
    ToolRegistry, ToolRuntime, Usage,
};

pub(crate) fn empty() -> ToolRuntime {
    ToolRuntime::new(ToolRegistry::new())
}

pub(crate) fn used(input: u64) -> Usage {
    Usage {
        input_tokens: input,
        ..Usage::default()
    }
}

pub(crate) fn failed(outcome: &RunOutcome) -> &RunError {
    match outcome {
        RunOutcome::Failed { error, .. } => error,
        other => panic!("{other:?}"),
    }
}

/// A refused turn a fallback set aside was billed: the turn given
/// counts it.
#[tokio::test]
async fn a_turn_set_aside_by_a_fallback_still_counts() {
    let mut refused = AssistantMessage::text("no").with_usage(used(50));
    refused.stop = Some(StopReason::new(StopKind::Refused, "refusal"));
    let model = FallbackModel::new("strict", ScriptedModel::new([ScriptedTurn::reply(refused)]))
        .then(
            "spare",
            ScriptedModel::new([ScriptedTurn::reply(
                AssistantMessage::text("yes").with_usage(used(10)),
            )]),
        )
        .on([Failure::Refused]);
    let outcome = Agent::new(model, empty())
        .invoke([Message::user("hi")])
        .await;
    assert_eq!(outcome.text(), Some("yes"));
    assert_eq!(outcome.usage().input_tokens, 60);
}

/// A nested agent that spends and then fails: its tokens count against
/// the root's limit, though its call returned no output to carry them.
#[tokio::test]
async fn a_failed_nested_agents_tokens_count_against_the_roots_limit() {
    let spender = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::reply(
                AssistantMessage::tool_calls([ToolCall::new("n1", "missing", "{}")])
                    .with_usage(used(200)),
            ),
            ScriptedTurn::error(ModelError::new("bad request").with_status(400)),
        ]),
        empty(),
    );
    let tools = ToolRegistry::new()
        .with(spender.as_tool("spender", "Spends."))
        .unwrap();
    let root = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::reply(
                AssistantMessage::tool_calls([ToolCall::new(
                    "c1",
                    "spender",
                    r#"{"input": "go"}"#,
                )])
                .with_usage(used(10)),
            ),
            ScriptedTurn::text("never"),
        ]),
        ToolRuntime::new(tools),
    )
    .usage_limits(UsageLimits::new().total_tokens(150));
    let outcome = root.invoke([Message::user("go")]).await;
    let error = failed(&outcome);
    assert!(
        matches!(
            error,
            RunError::UsageLimit {
                limit: UsageLimit::TotalTokens,
                ..
            }
        ),
        "{error}"
    );
}

/// The limits of the agent a run started on hold after a handoff to
/// an agent with none.
#[tokio::test]
async fn a_handoff_does_not_shed_the_runs_limits() {
    let unlimited = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("x1", "missing", "{}")]),
            ScriptedTurn::text("never"),
        ]),
        empty(),
    );
    let triage = Agent::new(
        ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
            "h1",
            "transfer_to_unlimited",
            "{}",
        )])]),
        empty(),
    )
    .usage_limits(UsageLimits::new().requests(2))
    .handoff("unlimited", "no limits", unlimited);
    let outcome = triage.invoke([Message::user("go")]).await;
    let error = failed(&outcome);
    assert!(
        matches!(
            error,
            RunError::UsageLimit {
                limit: UsageLimit::Requests,
                ..
            }
        ),
        "{error}"
    );
}

/// A handoff filter that leaves a result without its call fails the
/// run plainly instead of sending what providers refuse.
#[tokio::test]
async fn a_handoff_filter_that_breaks_a_pair_fails_the_run() {
    let next = Agent::new(ScriptedModel::new([ScriptedTurn::text("never")]), empty());
    let triage = Agent::new(
        // The name the model is offered is one every provider takes.
        ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
            "h1",
            "transfer_to_next_agent_",
            "{}",
        )])
        .expect_tools(["transfer_to_next_agent_"])]),
        empty(),
    )
    .handoff_filtered("next agent!", "the next", next, |conversation| {
        // Drops the model's turns but keeps their results.
        conversation
            .into_iter()
            .filter(|message| !matches!(message, Message::Assistant(_)))
            .collect()
    });
    let outcome = triage.invoke([Message::user("go")]).await;
    let error = failed(&outcome);
    assert!(matches!(error, RunError::Context { .. }), "{error}");
    assert!(
        error.to_string().contains("has no call before it"),
        "{error}"
    );
}

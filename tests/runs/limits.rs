//! Usage and cost limits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use behest::run::{Amount, Price, RunError, ScriptedTurn, UsageLimit, UsageLimits};
use behest::{
    tool, Agent, AssistantMessage, Message, RunOutcome, ScriptedModel, ToolCall, ToolRegistry,
    ToolRuntime, Usage,
};

static CHARGED: AtomicUsize = AtomicUsize::new(0);

/// Look an order up.
#[tool]
fn look_up(order: u32) -> String {
    format!("order {order}: paid")
}

/// Charge a card (counted, so a test can see it was not run).
#[tool]
fn charge(cents: u32) -> String {
    CHARGED.fetch_add(1, Ordering::SeqCst);
    format!("charged {cents}")
}

fn runtime() -> ToolRuntime {
    ToolRuntime::new(
        ToolRegistry::new()
            .with(LookUp)
            .unwrap()
            .with(Charge)
            .unwrap(),
    )
}

fn spent(input: u64, output: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        ..Usage::default()
    }
}

/// A turn calling `tool` with `arguments`, having used `usage`.
fn calling(id: &str, tool: &str, arguments: &str, usage: Usage) -> ScriptedTurn {
    let mut reply = AssistantMessage::default();
    reply.tool_calls = vec![ToolCall::new(id, tool, arguments)];
    ScriptedTurn::reply(reply.with_usage(usage))
}

fn failure(outcome: &RunOutcome) -> &RunError {
    match outcome {
        RunOutcome::Failed { error, .. } => error,
        other => panic!("the run did not fail: {other:?}"),
    }
}

/// Every refused call still gets its result, so the transcript is one
/// any provider takes.
fn every_call_answered(transcript: &[Message]) {
    let calls: Vec<&str> = transcript
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(reply) => Some(reply.tool_calls.iter()),
            _ => None,
        })
        .flatten()
        .map(|call| call.call_id.as_str())
        .collect();
    for id in calls {
        assert!(
            transcript.iter().any(|message| matches!(
                message,
                Message::ToolResult(result) if result.call_id == id
            )),
            "call {id} has no result"
        );
    }
}

#[tokio::test]
async fn a_request_limit_stops_the_run_before_the_request_past_it() {
    let model = ScriptedModel::new([
        calling("c1", "look_up", r#"{"order": 1}"#, spent(100, 10)),
        calling("c2", "look_up", r#"{"order": 2}"#, spent(100, 10)),
        ScriptedTurn::text("never asked"),
    ]);
    let agent = Agent::new(model, runtime()).usage_limits(UsageLimits::new().requests(2));
    let outcome = agent.invoke([Message::user("look up 1 and 2")]).await;
    let error = failure(&outcome);
    assert_eq!(
        *error,
        RunError::UsageLimit {
            limit: UsageLimit::Requests,
            allowed: Amount(2.0),
            used: Amount(3.0),
        }
    );
    assert_eq!(
        error.to_string(),
        "the run reached its limit of 2 model requests (it would have used 3)"
    );
    // Both requests made, both lookups answered, the third never asked.
    assert_eq!(outcome.usage().input_tokens, 200);
    every_call_answered(outcome.transcript());
}

#[tokio::test]
async fn a_token_limit_passed_by_an_answer_runs_none_of_its_calls() {
    CHARGED.store(0, Ordering::SeqCst);
    let model = ScriptedModel::new([calling(
        "c1",
        "charge",
        r#"{"cents": 500}"#,
        spent(900, 200),
    )]);
    let agent = Agent::new(model, runtime()).usage_limits(UsageLimits::new().total_tokens(1_000));
    let outcome = agent.invoke([Message::user("charge me")]).await;
    let error = failure(&outcome);
    assert!(
        matches!(error, RunError::UsageLimit { limit: UsageLimit::TotalTokens, used, .. } if *used == Amount(1_100.0)),
        "{error}"
    );
    assert_eq!(CHARGED.load(Ordering::SeqCst), 0, "the charge did not run");
    every_call_answered(outcome.transcript());
    let refused = outcome
        .transcript()
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => Some(result.content.clone()),
            _ => None,
        })
        .unwrap();
    assert!(refused.contains("total tokens"), "{refused}");
}

#[tokio::test]
async fn a_tool_call_limit_per_tool_refuses_the_round_that_passes_it() {
    let mut twice = AssistantMessage::default();
    twice.tool_calls = vec![
        ToolCall::new("c1", "look_up", r#"{"order": 1}"#),
        ToolCall::new("c2", "look_up", r#"{"order": 2}"#),
    ];
    let model = ScriptedModel::new([
        calling("c0", "look_up", r#"{"order": 0}"#, Usage::default()),
        ScriptedTurn::reply(twice),
    ]);
    let agent =
        Agent::new(model, runtime()).usage_limits(UsageLimits::new().tool_calls_of("look_up", 2));
    let outcome = agent.invoke([Message::user("look everything up")]).await;
    let error = failure(&outcome);
    assert_eq!(
        error.to_string(),
        "the run reached its limit of 2 calls of `look_up` (it would have used 3)"
    );
    every_call_answered(outcome.transcript());
}

#[tokio::test]
async fn a_cost_limit_prices_cached_and_reasoning_tokens_apart() {
    // 1M input of which 800k cached, 100k output of which 50k reasoning:
    // 0.2 × 2 + 0.8 × 0.5 + 0.05 × 8 + 0.05 × 12 = 1.8 dollars.
    let usage = Usage {
        input_tokens: 1_000_000,
        cached_tokens: 800_000,
        output_tokens: 100_000,
        reasoning_tokens: 50_000,
        ..Usage::default()
    };
    let price = Price::per_million(2.0, 8.0)
        .cached_input(0.5)
        .reasoning(12.0);
    for (dollars, passes) in [(2.0, true), (1.5, false)] {
        let model = ScriptedModel::new([
            calling("c1", "look_up", r#"{"order": 1}"#, usage),
            ScriptedTurn::text("done"),
        ]);
        let agent =
            Agent::new(model, runtime()).usage_limits(UsageLimits::new().cost(dollars, price));
        let outcome = agent.invoke([Message::user("look up 1")]).await;
        if passes {
            assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
        } else {
            let error = failure(&outcome);
            assert!(
                matches!(error, RunError::UsageLimit { limit: UsageLimit::Cost, used, .. } if (used.0 - 1.8).abs() < 1e-9),
                "{error}"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_deadline_cuts_a_model_request_in_flight() {
    /// A model that never answers.
    struct Silent;
    impl behest::run::Model for Silent {
        async fn complete(
            &self,
            _request: behest::run::ModelRequest<'_>,
        ) -> Result<AssistantMessage, behest::run::ModelError> {
            std::future::pending().await
        }
    }
    let agent = Agent::new(Silent, runtime())
        .usage_limits(UsageLimits::new().deadline(Duration::from_secs(30)));
    let outcome = agent.invoke([Message::user("hello")]).await;
    let error = failure(&outcome);
    assert!(
        matches!(error, RunError::UsageLimit { limit: UsageLimit::Deadline, allowed, .. } if *allowed == Amount(30.0)),
        "{error}"
    );
}

//! The run's books: what it spent is counted once, whatever later becomes of
//! the transcript; bounds hold over the whole run; a part of the run that
//! panics is the run's error; names are offered once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use behest::run::{
    Compaction, ContextPolicy, CountedCalls, Failure, FallbackModel, GuardrailStage, ModelError,
    RunError, ScriptedTurn, UsageLimit, UsageLimits, Verdict,
};
use behest::{
    tool, Agent, AssistantMessage, Message, RunOutcome, ScriptedModel, ToolCall, ToolOutput,
    ToolRegistry, ToolRuntime,
};

use crate::accounting::{empty, failed, used};

/// The error result the model read for `call_id`.
fn error_of<'a>(outcome: &'a RunOutcome, call_id: &str) -> &'a str {
    outcome
        .transcript()
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) if result.call_id == call_id => {
                assert!(result.is_error, "{result:?}");
                Some(result.content.as_str())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {call_id}: {outcome:?}"))
}

static RAN: AtomicUsize = AtomicUsize::new(0);

/// Look an order up (counted, so a test can see it ran).
#[tool]
fn look_up(order: u32) -> String {
    RAN.fetch_add(1, Ordering::SeqCst);
    format!("order {order}: paid")
}

/// Fails for every order.
#[tool]
fn broken(order: u32) -> Result<String, String> {
    Err(format!("order {order} is unreadable"))
}

fn tools() -> ToolRuntime {
    ToolRuntime::new(
        ToolRegistry::new()
            .with(LookUp)
            .unwrap()
            .with(Broken)
            .unwrap(),
    )
}

// 1. What a handoff filter drops stays in the books.
#[tokio::test]
async fn tokens_of_turns_a_handoff_filter_drops_are_still_the_runs() {
    let billing = Agent::new(
        ScriptedModel::new([ScriptedTurn::reply(
            AssistantMessage::text("Refunded.").with_usage(used(5)),
        )]),
        empty(),
    );
    let handing_off =
        AssistantMessage::tool_calls([ToolCall::new("h1", "transfer_to_billing", "{}")])
            .with_usage(used(100));
    let triage = Agent::new(
        ScriptedModel::new([ScriptedTurn::reply(handing_off)]),
        empty(),
    )
    .handoff_filtered("billing", "refunds", billing, |conversation| {
        conversation
            .into_iter()
            .filter(|message| matches!(message, Message::User { .. }))
            .collect()
    });
    let outcome = triage.invoke([Message::user("Refund me")]).await;
    assert_eq!(outcome.text(), Some("Refunded."));
    assert_eq!(outcome.transcript().len(), 2, "the filter dropped the turn");
    assert_eq!(outcome.usage().input_tokens, 105);
    assert_eq!(outcome.spent().requests, 2);
}

// 2. A summary's tokens are in the usage the run reports, as its limits
// counted them.
fn summarising(summaries: usize) -> (Arc<ScriptedModel>, ContextPolicy) {
    let summariser = Arc::new(ScriptedModel::new((0..summaries).map(|_| {
        ScriptedTurn::reply(
            AssistantMessage::text("the user asked for orders").with_usage(used(300)),
        )
    })));
    let policy = ContextPolicy::new(60).compaction(Compaction::Summarize {
        model: summariser.clone(),
        keep: 1,
    });
    (summariser, policy)
}

/// Three rounds of `look_up`, each turn counted at 100 input tokens.
fn three_rounds() -> impl Iterator<Item = ScriptedTurn> {
    (0..3).map(|n| {
        ScriptedTurn::reply(
            AssistantMessage::tool_calls([ToolCall::new(
                format!("c{n}"),
                "look_up",
                format!(r#"{{"order": {n}}}"#),
            )])
            .with_usage(used(100)),
        )
    })
}

#[tokio::test]
async fn a_summarys_tokens_are_in_the_runs_usage() {
    let (summariser, policy) = summarising(3);
    let model = ScriptedModel::new(three_rounds().chain([ScriptedTurn::reply(
        AssistantMessage::text("done").with_usage(used(100)),
    )]));
    let outcome = Agent::new(model, tools())
        .context(policy)
        .invoke([Message::user("Look my orders up")])
        .await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    let summaries = 3 - summariser.remaining() as u64;
    assert!(summaries > 0, "the summariser was asked");
    assert_eq!(outcome.usage().input_tokens, 4 * 100 + summaries * 300);
}

#[tokio::test]
async fn a_limit_passed_by_a_summary_says_what_the_usage_says() {
    let (_, policy) = summarising(3);
    let outcome = Agent::new(ScriptedModel::new(three_rounds()), tools())
        .context(policy)
        .usage_limits(UsageLimits::new().total_tokens(350))
        .invoke([Message::user("Look my orders up")])
        .await;
    let RunError::UsageLimit { limit, used, .. } = failed(&outcome) else {
        panic!("{outcome:?}");
    };
    assert_eq!(*limit, UsageLimit::TotalTokens);
    assert_eq!(used.0 as u64, outcome.usage().input_tokens);
    assert_eq!(outcome.usage().input_tokens, 2 * 100 + 300);
}

// 3. The step bound holds over the whole run, and a turn bound too.
#[tokio::test]
async fn max_steps_counts_rounds_across_handoffs() {
    fn looping(agent: &str, to: Option<&str>) -> Vec<ScriptedTurn> {
        let mut turns: Vec<ScriptedTurn> = (0..2)
            .map(|n| {
                ScriptedTurn::tool_calls([ToolCall::new(
                    format!("{agent}{n}"),
                    "look_up",
                    r#"{"order": 1}"#,
                )])
            })
            .collect();
        turns.push(match to {
            Some(to) => ScriptedTurn::tool_calls([ToolCall::new(
                format!("{agent}-h"),
                format!("transfer_to_{to}"),
                "{}",
            )]),
            None => ScriptedTurn::text("done"),
        });
        turns
    }
    let last = Agent::new(ScriptedModel::new(looping("c", None)), tools());
    let middle = Agent::new(ScriptedModel::new(looping("b", Some("c"))), tools())
        .handoff("c", "the last", last);
    let first = Agent::new(ScriptedModel::new(looping("a", Some("b"))), tools())
        .handoff("b", "the middle", middle)
        .max_steps(4);
    let outcome = first.invoke([Message::user("go")]).await;
    assert_eq!(
        failed(&outcome),
        &RunError::MaxStepsExceeded { max_steps: 4 },
        "each agent made 2 or 3 rounds, 4 in all would pass"
    );
}

#[tokio::test]
async fn max_turns_bounds_the_model_turns_of_the_whole_run() {
    let next = Agent::new(
        ScriptedModel::new([ScriptedTurn::text("a"), ScriptedTurn::text("b")]),
        empty(),
    );
    let first = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 1}"#)]),
            ScriptedTurn::tool_calls([ToolCall::new("h1", "transfer_to_next", "{}")]),
        ]),
        tools(),
    )
    .handoff("next", "the next", next)
    .max_turns(2);
    let outcome = first.invoke([Message::user("go")]).await;
    assert_eq!(
        failed(&outcome),
        &RunError::MaxTurnsExceeded { max_turns: 2 }
    );
    assert_eq!(outcome.spent().requests, 2);

    let first = Agent::new(ScriptedModel::new([ScriptedTurn::text("hi")]), empty()).max_turns(1);
    assert_eq!(first.invoke([Message::user("go")]).await.text(), Some("hi"));
}

// 4. A panic in a part given to the agent is the run's error, never an
// unwind into the caller's task.
fn panicking_guardrails() -> [(GuardrailStage, Agent); 4] {
    let model = || {
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 7}"#)]),
            ScriptedTurn::text("done"),
        ])
    };
    [
        (
            GuardrailStage::Input,
            Agent::new(model(), tools())
                .input_guardrail("pii", |_: String| async { panic!("no input today") }),
        ),
        (
            GuardrailStage::Output,
            Agent::new(model(), tools())
                .output_guardrail("tone", |_: String| async { panic!("no output today") }),
        ),
        (
            GuardrailStage::ToolCall,
            Agent::new(model(), tools()).tool_guardrail("args", |_: ToolCall| {
                panic!("no calls today");
                #[allow(unreachable_code)]
                async {
                    Verdict::Allow
                }
            }),
        ),
        (
            GuardrailStage::ToolOutput,
            Agent::new(model(), tools())
                .tool_output_guardrail("leaks", |_: (ToolCall, ToolOutput)| async {
                    panic!("no outputs today")
                }),
        ),
    ]
}

#[tokio::test]
async fn a_guardrail_that_panics_fails_the_run_at_every_stage() {
    for (stage, agent) in panicking_guardrails() {
        let outcome = agent.invoke([Message::user("order 7?")]).await;
        let RunError::Panicked { part, message } = failed(&outcome) else {
            panic!("{stage:?}: {outcome:?}");
        };
        assert!(part.contains("guardrail"), "{part}");
        assert!(message.ends_with("today"), "{message}");
        if matches!(stage, GuardrailStage::ToolCall | GuardrailStage::ToolOutput) {
            // The call has its result: it says the check failed, no more.
            let said = error_of(&outcome, "c1");
            assert!(said.contains("failed"), "{said}");
            assert!(!said.contains("today"), "the panic stays out: {said}");
        }
    }
}

#[tokio::test]
async fn a_filter_a_policy_or_a_preparation_that_panics_fails_the_run() {
    let next = Agent::new(ScriptedModel::new([ScriptedTurn::text("ok")]), empty());
    let filtered = Agent::new(
        ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
            "h1",
            "transfer_to_next",
            "{}",
        )])]),
        empty(),
    )
    .handoff_filtered("next", "the next", next, |_| panic!("filter broke"));
    let prepared = Agent::new(ScriptedModel::new([ScriptedTurn::text("ok")]), tools())
        .prepare_tools(|_, _| panic!("preparation broke"));
    let compacting = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::reply(
                AssistantMessage::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 1}"#)])
                    .with_usage(used(1_000)),
            ),
            ScriptedTurn::text("ok"),
        ]),
        tools(),
    )
    .context(
        ContextPolicy::new(100).compaction(Compaction::Custom(Arc::new(|_| {
            Box::pin(async { panic!("policy broke") })
        }))),
    );
    /// A model that breaks while it summarises.
    struct Breaking;
    impl behest::Model for Breaking {
        async fn complete(
            &self,
            _request: behest::ModelRequest<'_>,
        ) -> Result<AssistantMessage, ModelError> {
            panic!("summary broke")
        }
    }
    let summarising = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::reply(
                AssistantMessage::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 1}"#)])
                    .with_usage(used(1_000)),
            ),
            ScriptedTurn::reply(
                AssistantMessage::tool_calls([ToolCall::new("c2", "look_up", r#"{"order": 2}"#)])
                    .with_usage(used(1_000)),
            ),
            ScriptedTurn::text("ok"),
        ]),
        tools(),
    )
    .context(ContextPolicy::new(100).compaction(Compaction::Summarize {
        model: Arc::new(Breaking),
        keep: 1,
    }));
    for (agent, what) in [
        (filtered, "input filter of the handoff to next"),
        (prepared, "preparation of the tools"),
        (compacting, "context policy"),
        (summarising, "the model that summarises old turns"),
    ] {
        let outcome = agent.invoke([Message::user("hi")]).await;
        let error = failed(&outcome);
        let RunError::Panicked { part, message } = error else {
            panic!("{what}: {outcome:?}");
        };
        assert!(part.contains(what), "{part}");
        assert!(message.ends_with("broke"), "{message}");
        assert!(error.to_string().contains("panicked"), "{error}");
        assert!(!outcome.transcript().is_empty(), "the transcript is kept");
    }
}

// 5. Fallback decides from the status and the provider's kind, not from
// the words of the message.
#[tokio::test]
async fn a_bad_request_that_mentions_a_timeout_does_not_fall_back() {
    let bad = ModelError::new("invalid value for `timeout`: must be a number")
        .with_status(400)
        .with_kind("invalid_request_error");
    assert!(!Failure::Timeout.matches(&bad));
    let model = FallbackModel::new("main", ScriptedModel::new([ScriptedTurn::error(bad)]))
        .then("spare", ScriptedModel::new([ScriptedTurn::text("spare")]))
        .on([Failure::Timeout]);
    let outcome = Agent::new(model, empty())
        .invoke([Message::user("hi")])
        .await;
    assert!(matches!(failed(&outcome), RunError::Model(error) if error.status == Some(400)));

    // A timeout the client saw, a gateway's 504 and Gemini's kind do.
    for timeout in [
        ModelError::new("the model's API did not answer in time").timed_out(true),
        ModelError::new("upstream").with_status(504),
        ModelError::new("deadline").with_kind("DEADLINE_EXCEEDED"),
    ] {
        assert!(Failure::Timeout.matches(&timeout), "{timeout:?}");
    }
    // A context window full is read from a bad request's message, not from
    // a server error's.
    let full = ModelError::new("prompt is too long: 210000 tokens").with_status(400);
    assert!(Failure::ContextWindow.matches(&full));
    let server = ModelError::new("context window service down").with_status(500);
    assert!(!Failure::ContextWindow.matches(&server));
}

// 6. A call refused for its arguments never ran: it does not count against
// the call limits, and does not stop the valid call beside it.
#[tokio::test]
async fn a_call_refused_for_its_arguments_does_not_count_against_the_call_limit() {
    let before = RAN.load(Ordering::SeqCst);
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("bad", "look_up", r#"{"order": "seven"}"#),
            ToolCall::new("missing", "look_upp", r#"{"order": 7}"#),
            ToolCall::new("good", "look_up", r#"{"order": 7}"#),
        ]),
        ScriptedTurn::text("Order 7 is paid.")
            .expect_error("bad", "order")
            .expect_error("missing", "look_up")
            .expect_ok("good", "order 7"),
    ]);
    let agent = Agent::new(model, tools()).usage_limits(UsageLimits::new().tool_calls(1));
    let outcome = agent.invoke([Message::user("order 7?")]).await;
    assert_eq!(outcome.text(), Some("Order 7 is paid."), "{outcome:?}");
    assert!(RAN.load(Ordering::SeqCst) > before, "the valid call ran");
    assert_eq!(outcome.spent().tool_calls, 1);
}

#[tokio::test]
async fn calls_past_the_limit_are_refused_and_fail_the_run_once_answered() {
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([
        ToolCall::new("c1", "look_up", r#"{"order": 1}"#),
        ToolCall::new("c2", "look_up", r#"{"order": 2}"#),
    ])]);
    let agent = Agent::new(model, tools()).usage_limits(UsageLimits::new().tool_calls(1));
    let outcome = agent.invoke([Message::user("orders?")]).await;
    assert!(matches!(
        failed(&outcome),
        RunError::UsageLimit {
            limit: UsageLimit::ToolCalls,
            ..
        }
    ));
    assert!(error_of(&outcome, "c2").contains("not run"));
    assert_eq!(outcome.spent().tool_calls, 1);
}

#[tokio::test]
async fn a_limit_of_succeeded_calls_does_not_count_failed_ones() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "broken", r#"{"order": 1}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c2", "broken", r#"{"order": 2}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c3", "look_up", r#"{"order": 3}"#)]),
        ScriptedTurn::text("done"),
    ]);
    let limits = UsageLimits::new()
        .tool_calls(1)
        .counted_calls(CountedCalls::Succeeded);
    let outcome = Agent::new(model, tools())
        .usage_limits(limits)
        .invoke([Message::user("orders?")])
        .await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    assert_eq!(outcome.spent().tool_calls, 1);

    // Counted as they run (the default), the second failed call is refused.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "broken", r#"{"order": 1}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c2", "broken", r#"{"order": 2}"#)]),
    ]);
    let outcome = Agent::new(model, tools())
        .usage_limits(UsageLimits::new().tool_calls(1))
        .invoke([Message::user("orders?")])
        .await;
    assert!(matches!(
        failed(&outcome),
        RunError::UsageLimit {
            limit: UsageLimit::ToolCalls,
            ..
        }
    ));
}

// 7. Every name offered to the model is offered once.
#[tokio::test]
async fn names_offered_twice_are_refused_when_the_agent_is_built() {
    let agent = || Agent::new(ScriptedModel::new([ScriptedTurn::text("never")]), tools());
    let same_tool_name = agent()
        .handoff("a b", "one", agent())
        .handoff("a_b", "two", agent());
    let error = same_tool_name.check().unwrap_err();
    assert!(
        error.to_string().contains("`a b`") && error.to_string().contains("`a_b`"),
        "{error}"
    );

    /// Hands a conversation over, the wrong way.
    #[tool]
    fn transfer_to_billing() -> String {
        String::new()
    }
    let clashing = Agent::new(
        ScriptedModel::new([ScriptedTurn::text("never")]),
        ToolRuntime::new(ToolRegistry::new().with(TransferToBilling).unwrap()),
    )
    .handoff("billing", "refunds", agent());
    let error = clashing.check().unwrap_err();
    assert!(error.to_string().contains("transfer_to_billing"), "{error}");
    // A run of it fails before the model is asked.
    let outcome = clashing.invoke([Message::user("hi")]).await;
    assert!(matches!(failed(&outcome), RunError::Agent { .. }));
    assert_eq!(outcome.spent().requests, 0);

    assert!(agent()
        .handoff("billing", "refunds", agent())
        .check()
        .is_ok());
}

/// A tool that says what it spent (it asked a model of its own) spends the
/// run's tokens.
#[tokio::test]
async fn what_a_tool_says_it_spent_is_the_runs() {
    /// Summarises with a model of its own.
    #[tool]
    fn summarise() -> ToolOutput {
        let mut output = ToolOutput::text("a summary");
        output.usage = Some(used(40));
        output
    }
    let model = ScriptedModel::new([
        ScriptedTurn::reply(
            AssistantMessage::tool_calls([ToolCall::new("s1", "summarise", "{}")])
                .with_usage(used(10)),
        ),
        ScriptedTurn::reply(AssistantMessage::text("done").with_usage(used(10))),
    ]);
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Summarise).unwrap());
    let outcome = Agent::new(model, runtime)
        .invoke([Message::user("sum up")])
        .await;
    assert_eq!(outcome.text(), Some("done"));
    assert_eq!(outcome.usage().input_tokens, 60);
}

/// A call a tool guardrail refused never ran: it does not count against the
/// call limit.
#[tokio::test]
async fn a_call_a_guardrail_refused_does_not_count() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("big", "look_up", r#"{"order": 1000}"#),
            ToolCall::new("big2", "look_up", r#"{"order": 2000}"#),
        ]),
        ScriptedTurn::tool_calls([ToolCall::new("small", "look_up", r#"{"order": 7}"#)])
            .expect_error("big", "too big"),
        ScriptedTurn::text("done").expect_ok("small", "order 7"),
    ]);
    let outcome = Agent::new(model, tools())
        .usage_limits(UsageLimits::new().tool_calls(1))
        .tool_guardrail("small_orders", |call: ToolCall| async move {
            if call.arguments["order"].as_u64() > Some(100) {
                Verdict::Refuse("too big".to_owned())
            } else {
                Verdict::Allow
            }
        })
        .invoke([Message::user("orders")])
        .await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    assert_eq!(outcome.spent().tool_calls, 1);
}

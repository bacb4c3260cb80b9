//! Run-level features agent builders ask for: usage and cost limits.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use behest::run::{Amount, Price, RunError, Turn, UsageLimit, UsageLimits};
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
fn calling(id: &str, tool: &str, arguments: &str, usage: Usage) -> Turn {
    let mut reply = AssistantMessage::default();
    reply.tool_calls = vec![ToolCall::new(id, tool, arguments)];
    Turn::reply(reply.with_usage(usage))
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
        Turn::text("never asked"),
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
        Turn::reply(twice),
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
            Turn::text("done"),
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

// Fallback models ---------------------------------------------------------

mod fallback {
    use behest::run::{Failure, FallbackModel, Model, ModelError, ModelRequest, Turn};
    use behest::{
        Agent, AssistantMessage, EventKind, Message, ModelDelta, RunOutcome, ScriptedModel,
        StopKind, StopReason, ToolRegistry, ToolRuntime,
    };
    use futures::StreamExt;

    fn agent(model: FallbackModel) -> Agent {
        Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
    }

    fn failing(error: ModelError) -> ScriptedModel {
        ScriptedModel::new([Turn::error(error)])
    }

    fn answering(text: &str) -> ScriptedModel {
        ScriptedModel::new([Turn::text(text)])
    }

    /// The turn's model is named in the transcript.
    fn answered_by(outcome: &RunOutcome) -> Option<String> {
        outcome
            .transcript()
            .iter()
            .rev()
            .find_map(|message| match message {
                Message::Assistant(reply) => reply.model.clone(),
                _ => None,
            })
    }

    #[tokio::test]
    async fn a_rate_limited_model_falls_back_and_the_turn_names_who_answered() {
        let model = FallbackModel::new(
            "main",
            failing(ModelError::new("slow down").with_status(429)),
        )
        .then(
            "busy",
            failing(ModelError::new("overloaded").with_kind("overloaded_error")),
        )
        .then("spare", answering("from the spare"));
        let outcome = agent(model).invoke([Message::user("hi")]).await;
        assert_eq!(outcome.text(), Some("from the spare"));
        assert_eq!(answered_by(&outcome).as_deref(), Some("spare"));
    }

    #[tokio::test]
    async fn a_failure_not_named_is_the_turns_error_and_no_other_model_is_asked() {
        let spare = ScriptedModel::new([Turn::text("never")]);
        let model = FallbackModel::new(
            "main",
            failing(ModelError::new("bad request").with_status(400)),
        )
        .then("spare", spare);
        let outcome = agent(model).invoke([Message::user("hi")]).await;
        let RunOutcome::Failed { error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
        assert!(error.to_string().contains("bad request"), "{error}");
    }

    #[tokio::test]
    async fn when_every_model_fails_the_error_names_what_each_said() {
        let model = FallbackModel::new("a", failing(ModelError::new("a is down").with_status(503)))
            .then(
                "b",
                failing(ModelError::new("b timed out").with_status(504)),
            );
        let outcome = agent(model).invoke([Message::user("hi")]).await;
        let RunOutcome::Failed { error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
        let said = error.to_string();
        assert!(
            said.contains("b timed out") && said.contains("a: a is down"),
            "{said}"
        );
    }

    #[tokio::test]
    async fn refusals_and_full_context_windows_fall_back_when_named() {
        let mut refused = AssistantMessage::text("I can't help with that.");
        refused.stop = Some(StopReason::new(StopKind::Refused, "refusal"));
        let too_long = ModelError::new("prompt is too long: 250000 tokens > 200000 maximum")
            .with_status(400)
            .with_kind("invalid_request_error");
        let model = FallbackModel::new("strict", ScriptedModel::new([Turn::reply(refused)]))
            .then("small", failing(too_long))
            .then("large", answering("here it is"))
            .on([Failure::Refused, Failure::ContextWindow]);
        let outcome = agent(model).invoke([Message::user("hi")]).await;
        assert_eq!(outcome.text(), Some("here it is"), "{outcome:?}");
        assert_eq!(answered_by(&outcome).as_deref(), Some("large"));
    }

    /// A model that streams part of its turn, then fails.
    struct Stutters;
    impl Model for Stutters {
        async fn complete(
            &self,
            request: ModelRequest<'_>,
        ) -> Result<AssistantMessage, ModelError> {
            request.send_delta(ModelDelta::Text("Hel".into()));
            Err(ModelError::new("connection reset").with_status(502))
        }
    }

    #[tokio::test]
    async fn what_a_failed_model_streamed_is_voided_before_the_next_streams() {
        let model = FallbackModel::new("stutters", Stutters).then("spare", answering("Hello"));
        let run = agent(model).invoke([Message::user("hi")]);
        let events = run.events();
        let outcome = run.await;
        assert_eq!(outcome.text(), Some("Hello"));
        let deltas: Vec<ModelDelta> = events
            .filter_map(|event| async move {
                match event.kind {
                    EventKind::ModelDelta(delta) => Some(delta),
                    _ => None,
                }
            })
            .collect()
            .await;
        assert_eq!(
            deltas[..2],
            [ModelDelta::Text("Hel".into()), ModelDelta::Restart],
            "{deltas:?}"
        );
    }
}

// Guardrails --------------------------------------------------------------

mod guardrails {
    use behest::run::{GuardrailAction, GuardrailStage, RunError, Turn, Verdict};
    use behest::{
        tool, Agent, EventKind, Message, RunOutcome, ScriptedModel, ToolCall, ToolOutput,
        ToolRegistry, ToolRuntime,
    };
    use futures::StreamExt;
    use serde_json::json;

    /// Transfer money.
    #[tool]
    fn transfer(cents: u32, to: String) -> String {
        format!("sent {cents} to {to}")
    }

    /// Read a customer's file.
    #[tool(read_only)]
    fn read_file(customer: String) -> String {
        format!("{customer}: card 4111111111111111, balance 10 EUR")
    }

    fn runtime() -> ToolRuntime {
        ToolRuntime::new(
            ToolRegistry::new()
                .with(Transfer)
                .unwrap()
                .with(ReadFile)
                .unwrap(),
        )
    }

    fn results(outcome: &RunOutcome) -> Vec<String> {
        outcome
            .transcript()
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.clone()),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn an_input_guardrail_can_stop_the_run_before_the_model_is_asked() {
        let model = ScriptedModel::new([]);
        let agent =
            Agent::new(model, runtime()).input_guardrail("topic", |text: String| async move {
                if text.contains("weapons") {
                    Verdict::Stop("off topic".to_owned())
                } else {
                    Verdict::Allow
                }
            });
        let run = agent.invoke([Message::user("tell me about weapons")]);
        let events = run.events();
        let outcome = run.await;
        let RunOutcome::Failed { error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(
            *error,
            RunError::Guardrail {
                guardrail: "topic".into(),
                stage: GuardrailStage::Input,
                reason: "off topic".into(),
            }
        );
        let fired: Vec<_> = events
            .filter_map(|event| async move {
                match event.kind {
                    EventKind::Guardrail(fired) => Some(fired),
                    _ => None,
                }
            })
            .collect()
            .await;
        assert_eq!(fired.len(), 1);
        assert_eq!(fired[0].action, GuardrailAction::Stopped);
        assert_eq!(fired[0].reason.as_deref(), Some("off topic"));
    }

    #[tokio::test]
    async fn a_refused_input_is_withheld_and_the_model_reads_why() {
        let model = ScriptedModel::new([Turn::text("I can't read that.")]);
        let agent =
            Agent::new(model, runtime()).input_guardrail("size", |text: String| async move {
                if text.len() > 20 {
                    Verdict::Refuse("the message is too long".to_owned())
                } else {
                    Verdict::Allow
                }
            });
        let outcome = agent
            .invoke([Message::user("a very long message indeed")])
            .await;
        assert_eq!(outcome.text(), Some("I can't read that."));
        let Message::User { text } = &outcome.transcript()[0] else {
            panic!("{outcome:?}");
        };
        assert!(
            text.contains("withheld") && text.contains("too long"),
            "{text}"
        );
        assert!(!text.contains("very long message"), "{text}");
    }

    #[tokio::test]
    async fn a_stopping_tool_guardrail_runs_nothing_and_fails_the_run_with_every_call_answered() {
        let model = ScriptedModel::new([Turn::tool_calls([
            ToolCall::new("c1", "transfer", r#"{"cents": 900000, "to": "mallory"}"#),
            ToolCall::new("c2", "read_file", r#"{"customer": "ada"}"#),
        ])]);
        let agent =
            Agent::new(model, runtime()).tool_guardrail("limit", |call: ToolCall| async move {
                match call.arguments["cents"].as_u64() {
                    Some(cents) if cents > 100_000 => {
                        Verdict::Stop(format!("{cents} cents is over the limit"))
                    }
                    _ => Verdict::Allow,
                }
            });
        let outcome = agent.invoke([Message::user("send it all")]).await;
        let RunOutcome::Failed { error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
        assert!(
            matches!(
                error,
                RunError::Guardrail {
                    stage: GuardrailStage::ToolCall,
                    ..
                }
            ),
            "{error}"
        );
        let results = results(&outcome);
        assert_eq!(results.len(), 2, "{results:?}");
        assert!(results[0].contains("stopped the run"), "{results:?}");
        assert!(
            !results.iter().any(|result| result.starts_with("sent")),
            "{results:?}"
        );
    }

    #[tokio::test]
    async fn a_tool_guardrail_refuses_or_rewrites_validated_arguments() {
        let model = ScriptedModel::new([
            Turn::tool_calls([ToolCall::new(
                "c1",
                "transfer",
                r#"{"cents": 500, "to": "Bob"}"#,
            )]),
            Turn::tool_calls([ToolCall::new(
                "c2",
                "transfer",
                r#"{"cents": 500, "to": "eve"}"#,
            )])
            .expect_ok("c1", "sent 500 to bob"),
            Turn::text("done").expect_error("c2", "not on the list"),
        ]);
        let agent = Agent::new(model, runtime())
            // Names are lower-cased before the check below sees them.
            .tool_guardrail("lower", |call: ToolCall| async move {
                let to = call.arguments["to"].as_str().unwrap_or_default();
                if to.chars().any(char::is_uppercase) {
                    let mut arguments = call.arguments.clone();
                    arguments["to"] = json!(to.to_lowercase());
                    Verdict::Rewrite(arguments)
                } else {
                    Verdict::Allow
                }
            })
            .tool_guardrail("payees", |call: ToolCall| async move {
                if call.arguments["to"] == "eve" {
                    Verdict::Refuse("eve is not on the list of payees".to_owned())
                } else {
                    Verdict::Allow
                }
            });
        let outcome = agent.invoke([Message::user("pay bob and eve")]).await;
        assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
        let sent: Vec<String> = results(&outcome)
            .into_iter()
            .filter(|result| result.starts_with("sent"))
            .collect();
        assert_eq!(sent, ["sent 500 to bob"]);
    }

    #[tokio::test]
    async fn a_rewrite_that_breaks_the_schema_is_the_calls_argument_error() {
        let model = ScriptedModel::new([
            Turn::tool_calls([ToolCall::new(
                "c1",
                "transfer",
                r#"{"cents": 5, "to": "bob"}"#,
            )]),
            Turn::text("ok").expect_error("c1", "cents"),
        ]);
        let agent =
            Agent::new(model, runtime()).tool_guardrail("broken", |call: ToolCall| async move {
                let mut arguments = call.arguments.clone();
                arguments["cents"] = json!("five");
                Verdict::Rewrite(arguments)
            });
        let outcome = agent.invoke([Message::user("pay bob")]).await;
        assert_eq!(outcome.text(), Some("ok"), "{outcome:?}");
    }

    #[tokio::test]
    async fn an_output_guardrail_masks_what_a_tool_returns_before_the_model_sees_it() {
        let model = ScriptedModel::new([
            Turn::tool_calls([ToolCall::new("c1", "read_file", r#"{"customer": "ada"}"#)]),
            Turn::text("done"),
        ]);
        let agent = Agent::new(model, runtime()).tool_output_guardrail(
            "cards",
            |(_call, output): (ToolCall, ToolOutput)| async move {
                let text = output.text.clone().unwrap_or_default();
                Verdict::Rewrite(ToolOutput::text(text.replace("4111111111111111", "[card]")))
            },
        );
        let outcome = agent.invoke([Message::user("read ada's file")]).await;
        let results = results(&outcome);
        assert_eq!(results, ["ada: card [card], balance 10 EUR"]);
    }

    #[tokio::test]
    async fn a_refused_answer_is_sent_back_and_the_next_one_is_taken() {
        let model = ScriptedModel::new([
            Turn::text("Your password is hunter2."),
            Turn::text("I can't share that."),
        ]);
        let agent =
            Agent::new(model, runtime()).output_guardrail("secrets", |answer: String| async move {
                if answer.contains("password") {
                    Verdict::Refuse("answers must not reveal passwords".to_owned())
                } else {
                    Verdict::Allow
                }
            });
        let outcome = agent.invoke([Message::user("what is my password?")]).await;
        assert_eq!(outcome.text(), Some("I can't share that."));
        let told = outcome.transcript().iter().any(|message| {
            matches!(message, Message::User { text } if text.contains("must not reveal passwords"))
        });
        assert!(told, "{outcome:?}");
    }

    #[tokio::test]
    async fn a_typed_answer_rewritten_must_still_match_its_type() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[allow(dead_code)]
        struct Score {
            score: u8,
        }
        for (rewrite, ok) in [(r#"{"score": 5}"#, true), (r#"{"score": "high"}"#, false)] {
            let model = ScriptedModel::new([Turn::tool_calls([ToolCall::new(
                "c1",
                "final_answer",
                r#"{"score": 9}"#,
            )])]);
            let agent = Agent::new(model, runtime())
                .with_output::<Score>()
                .output_guardrail("cap", move |_answer: String| async move {
                    Verdict::Rewrite(rewrite.to_owned())
                });
            let outcome = agent.invoke([Message::user("score it")]).await;
            if ok {
                assert_eq!(outcome.text(), Some(r#"{"score":5}"#), "{outcome:?}");
            } else {
                assert!(
                    matches!(
                        outcome,
                        RunOutcome::Failed {
                            error: RunError::Output { .. },
                            ..
                        }
                    ),
                    "{outcome:?}"
                );
            }
        }
    }
}

// Streamed partial output -------------------------------------------------

mod partial_output {
    use behest::run::{OutputUpdate, Turn};
    use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    use futures::StreamExt;

    #[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
    struct Recipe {
        title: String,
        steps: Vec<String>,
    }

    /// What a UI shows while the recipe streams: every field optional.
    #[derive(Debug, Clone, PartialEq, Default, serde::Deserialize)]
    #[serde(default)]
    struct Draft {
        title: Option<String>,
        steps: Vec<String>,
    }

    const RECIPE: &str = r#"{"title": "Pancakes", "steps": ["mix", "fry", "serve"]}"#;

    async fn updates(model: ScriptedModel) -> Vec<OutputUpdate<Draft>> {
        let agent =
            Agent::new(model, ToolRuntime::new(ToolRegistry::new())).with_output::<Recipe>();
        let run = agent.invoke([Message::user("a recipe")]);
        let updates = run.partial_output::<Draft>();
        let outcome = run.await;
        let recipe: Recipe = outcome.output().unwrap();
        assert_eq!(recipe.steps, ["mix", "fry", "serve"]);
        updates.collect().await
    }

    /// Fields grow as they stream and the last update is the validated
    /// answer, through `final_answer`'s arguments and through structured
    /// output alike.
    fn check(updates: &[OutputUpdate<Draft>]) {
        let partials: Vec<&Draft> = updates
            .iter()
            .filter_map(|update| match update {
                OutputUpdate::Partial(draft) => Some(draft),
                OutputUpdate::Final(_) => None,
            })
            .collect();
        assert!(partials.len() >= 5, "{updates:?}");
        // Each partial is a prefix of the next: titles grow, steps are added.
        for pair in partials.windows(2) {
            let (before, after) = (pair[0], pair[1]);
            let title = before.title.clone().unwrap_or_default();
            assert!(
                after.title.clone().unwrap_or_default().starts_with(&title),
                "{pair:?}"
            );
            assert!(after.steps.len() >= before.steps.len(), "{pair:?}");
        }
        // A string shows as far as it is written.
        let cut_title = partials
            .iter()
            .any(|draft| draft.title.as_ref().is_some_and(|title| title.len() < 8));
        assert!(cut_title, "{partials:?}");
        let cut_step = partials
            .iter()
            .any(|draft| draft.steps.len() == 3 && draft.steps[2] != "serve");
        assert!(cut_step, "{partials:?}");
        let Some(OutputUpdate::Final(last)) = updates.last() else {
            panic!("no final update: {updates:?}");
        };
        assert_eq!(last.steps, ["mix", "fry", "serve"]);
    }

    #[tokio::test]
    async fn a_final_answer_call_streams_as_partial_values_then_the_validated_one() {
        let model = ScriptedModel::new([Turn::tool_calls([ToolCall::new(
            "c1",
            "final_answer",
            RECIPE,
        )])])
        .with_streaming(4);
        check(&updates(model).await);
    }

    #[tokio::test]
    async fn structured_output_streams_as_partial_values_then_the_validated_one() {
        let model = ScriptedModel::new([Turn::text(RECIPE)])
            .with_structured_output(true)
            .with_streaming(4);
        check(&updates(model).await);
    }

    /// A streamed answer that does not match is sent back: the next turn's
    /// partials start from nothing, not from the refused one's.
    #[tokio::test]
    async fn a_refused_answer_does_not_leak_into_the_next_ones_partials() {
        let model = ScriptedModel::new([
            Turn::tool_calls([ToolCall::new("c1", "final_answer", r#"{"title": "Wrong"}"#)]),
            Turn::tool_calls([ToolCall::new("c2", "final_answer", RECIPE)]),
        ])
        .with_streaming(4);
        let updates = updates(model).await;
        let refused = updates
            .iter()
            .rposition(|update| {
                matches!(update, OutputUpdate::Partial(draft) if draft.title.as_deref() == Some("Wrong"))
            })
            .unwrap();
        let after = &updates[refused + 1..];
        // No update after the refusal carries the refused answer's title.
        assert!(
            after.iter().all(|update| match update {
                OutputUpdate::Partial(draft) | OutputUpdate::Final(draft) => draft
                    .title
                    .as_deref()
                    .is_none_or(|title| "Pancakes".starts_with(title)),
            }),
            "{after:?}"
        );
        check(after);
    }
}

// Agents as tools ---------------------------------------------------------

mod agents_as_tools {
    use behest::run::{AgentEvent, RunError, Turn, UsageLimit, UsageLimits};
    use behest::{
        Agent, AssistantMessage, EventKind, Message, RunOutcome, ScriptedModel, ToolCall,
        ToolRegistry, ToolRuntime, ToolStreamEvent, Usage,
    };
    use futures::StreamExt;

    fn reply_with_usage(reply: AssistantMessage, input: u64) -> Turn {
        Turn::reply(reply.with_usage(Usage {
            input_tokens: input,
            output_tokens: 1,
            ..Usage::default()
        }))
    }

    fn translator() -> Agent {
        let model = ScriptedModel::new([reply_with_usage(AssistantMessage::text("Bonjour"), 100)]);
        Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
    }

    fn lead(tools: ToolRegistry, turns: Vec<Turn>) -> Agent {
        Agent::new(ScriptedModel::new(turns), ToolRuntime::new(tools))
    }

    fn call(id: &str, tool: &str, input: &str) -> AssistantMessage {
        AssistantMessage::tool_calls([ToolCall::new(
            id,
            tool,
            serde_json::json!({ "input": input }).to_string(),
        )])
    }

    #[tokio::test]
    async fn a_nested_agents_events_and_usage_are_its_callers() {
        let tools = ToolRegistry::new()
            .with(translator().as_tool("translate", "Translate into French."))
            .unwrap();
        let lead = lead(
            tools,
            vec![
                reply_with_usage(call("c1", "translate", "Hello"), 10),
                Turn::text("Bonjour!").expect_ok("c1", "Bonjour"),
            ],
        );
        let run = lead.invoke([Message::user("Say hello in French")]);
        let events = run.events();
        let outcome = run.await;
        assert_eq!(outcome.text(), Some("Bonjour!"));
        // The lead's 10 tokens and the translator's 100.
        assert_eq!(outcome.usage().input_tokens, 110);
        let events: Vec<EventKind> = events.map(|envelope| envelope.kind).collect().await;
        let nested: Vec<&AgentEvent> = events
            .iter()
            .filter_map(|kind| match kind {
                EventKind::Agent(event) => Some(event),
                _ => None,
            })
            .collect();
        assert!(nested
            .iter()
            .all(|event| event.agent == "translate" && event.call_id == "c1"));
        assert!(
            nested
                .iter()
                .any(|event| matches!(&*event.kind, EventKind::Output(text) if text == "Bonjour")),
            "{nested:?}"
        );
        // The nested run's events come before the call's result.
        let last_nested = events
            .iter()
            .rposition(|kind| matches!(kind, EventKind::Agent(_)))
            .unwrap();
        let result = events
            .iter()
            .position(|kind| matches!(kind, EventKind::Tool(ToolStreamEvent::Result { .. })))
            .unwrap();
        assert!(last_nested < result);
    }

    #[tokio::test]
    async fn agents_nest_no_deeper_than_the_roots_limit() {
        // leaf <- middle <- top; the top allows a depth of 1 only.
        let leaf = translator();
        let middle = lead(
            ToolRegistry::new()
                .with(leaf.as_tool("leaf", "The leaf."))
                .unwrap(),
            vec![
                Turn::reply(call("m1", "leaf", "go")),
                Turn::text("middle done").expect_error("m1", "nest 1 deep"),
            ],
        );
        let top = lead(
            ToolRegistry::new()
                .with(middle.as_tool("middle", "The middle."))
                .unwrap(),
            vec![
                Turn::reply(call("t1", "middle", "go")),
                Turn::text("top done").expect_ok("t1", "middle done"),
            ],
        )
        .max_agent_depth(1);
        let outcome = top.invoke([Message::user("go")]).await;
        assert_eq!(outcome.text(), Some("top done"), "{outcome:?}");
    }

    #[tokio::test]
    async fn the_roots_request_limit_counts_every_request_of_the_tree() {
        let tools = ToolRegistry::new()
            .with(translator().as_tool("translate", "Translate into French."))
            .unwrap();
        // Two requests of the lead's and one of the translator's: a limit
        // of 2 stops the lead's second request.
        let lead = lead(
            tools,
            vec![
                Turn::reply(call("c1", "translate", "Hello")),
                Turn::text("never"),
            ],
        )
        .usage_limits(UsageLimits::new().requests(2));
        let outcome = lead.invoke([Message::user("Say hello in French")]).await;
        let RunOutcome::Failed { error, .. } = &outcome else {
            panic!("{outcome:?}");
        };
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

    #[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Lookup {
        order: u32,
    }

    #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Order {
        order: u32,
        paid: bool,
    }

    #[tokio::test]
    async fn a_typed_agent_tool_takes_typed_input_and_gives_structured_output() {
        let clerk = Agent::new(
            ScriptedModel::new([Turn::tool_calls([ToolCall::new(
                "f1",
                "final_answer",
                r#"{"order": 42, "paid": true}"#,
            )])
            .expect_tools(["final_answer"])]),
            ToolRuntime::new(ToolRegistry::new()),
        )
        .with_output::<Order>();
        let tool = clerk.as_tool_with::<Lookup>("look_up", "Look an order up.");
        let tools = ToolRegistry::new().with(tool).unwrap();
        let spec = tools.spec("look_up").unwrap();
        assert_eq!(spec.parameters["required"], serde_json::json!(["order"]));
        let lead = lead(
            tools,
            vec![
                Turn::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 42}"#)]),
                Turn::text("paid").expect_ok("c1", r#""paid":true"#),
            ],
        );
        let outcome = lead.invoke([Message::user("is 42 paid?")]).await;
        assert_eq!(outcome.text(), Some("paid"), "{outcome:?}");
        let structured = outcome
            .transcript()
            .iter()
            .find_map(|message| match message {
                Message::ToolResult(result) => result.structured.clone(),
                _ => None,
            });
        assert_eq!(
            structured,
            Some(serde_json::json!({"order": 42, "paid": true}))
        );
    }
}

// Handoffs ----------------------------------------------------------------

mod handoffs {
    use behest::run::{RunError, Turn, MAX_HANDOFFS};
    use behest::{
        Agent, AssistantMessage, EventKind, Message, RunOutcome, ScriptedModel, ToolCall,
        ToolRegistry, ToolRuntime, Usage,
    };
    use futures::StreamExt;

    fn empty() -> ToolRuntime {
        ToolRuntime::new(ToolRegistry::new())
    }

    fn handing_off(id: &str, to: &str) -> Turn {
        let reply = AssistantMessage::tool_calls([
            ToolCall::new(id, format!("transfer_to_{to}"), "{}"),
            ToolCall::new(format!("{id}-other"), "look_up", "{}"),
        ])
        .with_usage(Usage {
            input_tokens: 10,
            ..Usage::default()
        });
        Turn::reply(reply)
    }

    #[tokio::test]
    async fn a_handoff_goes_on_with_the_next_agent_and_its_instructions() {
        let billing = Agent::new(
            ScriptedModel::new([Turn::text("Refunded.")
                .expect_ok("h1", "Handed off to billing")
                .expect_error("h1-other", "handed off to billing")]),
            empty(),
        )
        .instructions("You handle billing.");
        let triage = Agent::new(
            ScriptedModel::new(
                [handing_off("h1", "billing").expect_tools(["transfer_to_billing"])],
            ),
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
        let billing = Agent::new(ScriptedModel::new([Turn::text("ok")]), empty());
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
        let mut next = Agent::new(ScriptedModel::new([Turn::text("end")]), empty());
        for n in (0..=MAX_HANDOFFS).rev() {
            let to = format!("a{}", n + 1);
            let turn = Turn::tool_calls([ToolCall::new(
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
}

// Tools prepared per step ----------------------------------------------------

mod prepared_tools {
    use std::sync::{Arc, Mutex};

    use behest::run::{Model, ModelError, ModelRequest, Turn};
    use behest::{
        tool, Agent, AssistantMessage, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime,
    };

    /// Look an order up.
    #[tool]
    fn look_up(order: u32) -> String {
        format!("order {order}: paid")
    }

    /// Refund an order.
    #[tool]
    fn refund(order: u32) -> String {
        format!("order {order} refunded")
    }

    fn registry() -> ToolRegistry {
        ToolRegistry::new()
            .with(LookUp)
            .unwrap()
            .with(Refund)
            .unwrap()
    }

    /// No refund is offered before a look-up, and one called anyway is
    /// not run.
    #[tokio::test]
    async fn tools_are_offered_by_the_runs_state_and_others_are_not_run() {
        let model = ScriptedModel::new([
            Turn::tool_calls([ToolCall::new("c1", "refund", r#"{"order": 1}"#)])
                .expect_tools(["look_up"]),
            Turn::tool_calls([ToolCall::new("c2", "look_up", r#"{"order": 1}"#)])
                .expect_tools(["look_up"])
                .expect_error("c1", "not offered at this step"),
            Turn::tool_calls([ToolCall::new("c3", "refund", r#"{"order": 1}"#)])
                .expect_tools(["look_up", "refund"]),
            Turn::text("done").expect_ok("c3", "refunded"),
        ]);
        let agent = Agent::new(model, ToolRuntime::new(registry())).prepare_tools(|step, tools| {
            let looked_up = step.transcript.iter().any(|message| {
                matches!(message, Message::ToolResult(result)
                    if result.tool_name == "look_up" && !result.is_error)
            });
            tools
                .into_iter()
                .filter(|tool| looked_up || tool.name != "refund")
                .collect()
        });
        let outcome = agent.invoke([Message::user("refund order 1")]).await;
        assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    }

    /// A model that keeps the descriptions it was offered.
    struct Watches(Arc<Mutex<Vec<String>>>);
    impl Model for Watches {
        async fn complete(
            &self,
            request: ModelRequest<'_>,
        ) -> Result<AssistantMessage, ModelError> {
            let mut seen = self.0.lock().unwrap();
            seen.extend(request.tools.iter().map(|tool| tool.description.clone()));
            Ok(AssistantMessage::text("ok"))
        }
    }

    #[tokio::test]
    async fn a_preparation_can_reshape_what_the_model_reads() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let agent = Agent::new(Watches(seen.clone()), ToolRuntime::new(registry())).prepare_tools(
            |step, tools| {
                tools
                    .into_iter()
                    .map(|mut tool| {
                        tool.description = format!("{} (step {})", tool.description, step.turn);
                        tool
                    })
                    .collect()
            },
        );
        agent.invoke([Message::user("hi")]).await;
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            ["Look an order up. (step 0)", "Refund an order. (step 0)"]
        );
    }
}

// Context management -------------------------------------------------------

mod context {
    use std::sync::Arc;

    use behest::providers::{anthropic, gemini, openai};
    use behest::run::{Compaction, ContextPolicy, RunError, Turn};
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
        let mut turns: Vec<Turn> = (0..12u32)
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
                Turn::reply(reply)
            })
            .collect();
        turns.push(Turn::text("The document is about lorem ipsum."));
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
    fn every_provider_takes(transcript: &[Message]) {
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
            (0..12).map(|_| Turn::text("pages of lorem ipsum were read")),
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
}

// Spans -----------------------------------------------------------------------

use crate::tracing_support;

mod spans {
    use std::sync::{Arc, Mutex, OnceLock};

    use behest::run::{Turn, Verdict};
    use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};

    /// Every span's name and fields, as `name field=value`.
    #[derive(Clone, Default)]
    struct Spans(Arc<Mutex<Vec<String>>>);

    struct Visit<'a>(&'a mut String);
    impl tracing::field::Visit for Visit<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.push_str(&format!(" {}={value:?}", field.name()));
        }
        fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
            self.0.push_str(&format!(" {}={value}", field.name()));
        }
    }

    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
        fn on_new_span(
            &self,
            attributes: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut line = attributes.metadata().name().to_owned();
            attributes.record(&mut Visit(&mut line));
            self.0.lock().unwrap().push(line);
        }

        fn on_record(
            &self,
            _: &tracing::span::Id,
            values: &tracing::span::Record<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut line = "record".to_owned();
            values.record(&mut Visit(&mut line));
            self.0.lock().unwrap().push(line);
        }
    }

    /// Tool calls, agents run as tools and guardrails each have a span
    /// with the OpenTelemetry GenAI names.
    #[tokio::test]
    async fn tools_agents_and_guardrails_have_genai_spans() {
        static SPANS: OnceLock<Spans> = OnceLock::new();
        let spans = super::tracing_support::installed(&SPANS, Spans::default);
        let poet = Agent::new(
            ScriptedModel::new([Turn::text("Roses are red")]),
            ToolRuntime::new(ToolRegistry::new()),
        );
        let tools = ToolRegistry::new()
            .with(poet.as_tool("poet_for_spans", "Writes a poem."))
            .unwrap();
        let lead = Agent::new(
            ScriptedModel::new([
                Turn::tool_calls([ToolCall::new(
                    "span-call",
                    "poet_for_spans",
                    r#"{"input": "a poem"}"#,
                )]),
                Turn::text("done"),
            ]),
            ToolRuntime::new(tools),
        )
        .tool_guardrail("span_guard", |_call: ToolCall| async { Verdict::Allow });
        let outcome = lead.invoke([Message::user("a poem, please")]).await;
        assert_eq!(outcome.text(), Some("done"));
        let seen = spans.0.lock().unwrap().clone();
        let has = |parts: &[&str]| {
            seen.iter()
                .any(|line| parts.iter().all(|part| line.contains(part)))
        };
        assert!(
            has(&[
                "tool_call",
                "otel.name=execute_tool poet_for_spans",
                "gen_ai.operation.name=execute_tool",
                "gen_ai.tool.name=poet_for_spans",
                "gen_ai.tool.call.id=span-call",
            ]),
            "{seen:#?}"
        );
        assert!(
            has(&[
                "invoke_agent",
                "gen_ai.operation.name=invoke_agent",
                "gen_ai.agent.name=poet_for_spans",
            ]),
            "{seen:#?}"
        );
        assert!(
            has(&[
                "guardrail",
                "behest.guardrail.name=span_guard",
                "behest.guardrail.stage=tool call"
            ]),
            "{seen:#?}"
        );
        assert!(
            has(&["record", "behest.guardrail.action=allowed"]),
            "{seen:#?}"
        );
    }
}

// Spending that must not slip past the limits --------------------------------

mod accounting {
    use behest::run::{
        Failure, FallbackModel, ModelError, RunError, Turn, UsageLimit, UsageLimits,
    };
    use behest::{
        Agent, AssistantMessage, Message, RunOutcome, ScriptedModel, StopKind, StopReason,
        ToolCall, ToolRegistry, ToolRuntime, Usage,
    };

    fn empty() -> ToolRuntime {
        ToolRuntime::new(ToolRegistry::new())
    }

    fn used(input: u64) -> Usage {
        Usage {
            input_tokens: input,
            ..Usage::default()
        }
    }

    fn failed(outcome: &RunOutcome) -> &RunError {
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
        let model = FallbackModel::new("strict", ScriptedModel::new([Turn::reply(refused)]))
            .then(
                "spare",
                ScriptedModel::new([Turn::reply(
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
                Turn::reply(
                    AssistantMessage::tool_calls([ToolCall::new("n1", "missing", "{}")])
                        .with_usage(used(200)),
                ),
                Turn::error(ModelError::new("bad request").with_status(400)),
            ]),
            empty(),
        );
        let tools = ToolRegistry::new()
            .with(spender.as_tool("spender", "Spends."))
            .unwrap();
        let root = Agent::new(
            ScriptedModel::new([
                Turn::reply(
                    AssistantMessage::tool_calls([ToolCall::new(
                        "c1",
                        "spender",
                        r#"{"input": "go"}"#,
                    )])
                    .with_usage(used(10)),
                ),
                Turn::text("never"),
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
                Turn::tool_calls([ToolCall::new("x1", "missing", "{}")]),
                Turn::text("never"),
            ]),
            empty(),
        );
        let triage = Agent::new(
            ScriptedModel::new([Turn::tool_calls([ToolCall::new(
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
        let next = Agent::new(ScriptedModel::new([Turn::text("never")]), empty());
        let triage = Agent::new(
            // The name the model is offered is one every provider takes.
            ScriptedModel::new([Turn::tool_calls([ToolCall::new(
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
}

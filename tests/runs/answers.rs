//! Every call of a run is answered, once: the round past `max_steps`, a
//! cancelled round, answers through `events()` and `control()`, answers
//! that race the deadline, repeated ids, answers held to the output limit,
//! traced calls, reasoning kept per call, and typed final answers.

use crate::tracing_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::run::{ControlError, RunError, ScriptedTurn};
use behest::{
    external_tool, tool, Agent, EventKind, Message, RunOutcome, ScriptedModel, ToolCall,
    ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRuntime, ToolStreamEvent,
};
use futures::StreamExt;
use serde_json::{json, Value};

fn call(id: &str, tool: &str, arguments: impl Into<Value>) -> ToolCall {
    ToolCall::new(id, tool, arguments)
}

// Every call in a transcript gets one result ----------------------------

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn every_call_answered_once(transcript: &[Message]) {
    let mut calls = Vec::new();
    let mut results = Vec::new();
    for message in transcript {
        match message {
            Message::Assistant(reply) => {
                calls.extend(reply.tool_calls.iter().map(|call| call.call_id.clone()));
            }
            Message::ToolResult(result) => results.push(result.call_id.clone()),
            _ => {}
        }
    }
    calls.sort();
    results.sort();
    assert_eq!(calls, results, "every call has exactly one result");
}

#[tokio::test]
async fn the_round_past_max_steps_is_answered_and_reported() {
    let turns = (0..3).map(|i| {
        ScriptedTurn::tool_calls([
            call(&format!("a{i}"), "add", json!({"a": 1, "b": 2})),
            call(&format!("b{i}"), "add", json!({"a": 3, "b": 4})),
        ])
    });
    let registry = ToolRegistry::new().with(Add).unwrap();
    let agent = Agent::new(ScriptedModel::new(turns), ToolRuntime::new(registry)).max_steps(2);
    let invocation = agent.invoke([Message::user("go")]);
    let mut events = invocation.events();
    let outcome = invocation.await;
    assert!(matches!(
        outcome,
        RunOutcome::Failed {
            error: RunError::MaxStepsExceeded { max_steps: 2 },
            ..
        }
    ));
    every_call_answered_once(outcome.transcript());
    let mut results = Vec::new();
    while let Some(envelope) = events.next().await {
        if let EventKind::Tool(ToolStreamEvent::Result { result }) = envelope.kind {
            results.push(result);
        }
    }
    assert_eq!(
        results.len(),
        6,
        "the over-limit round emits its results too"
    );
    assert!(results[4..]
        .iter()
        .all(|result| matches!(result.outcome, Err(ToolError::LimitExceeded { .. }))));
}

static STARTED: AtomicUsize = AtomicUsize::new(0);

/// Wait a long time.
#[tool]
async fn slow(#[ctx] cx: ToolContext) -> &'static str {
    STARTED.fetch_add(1, Ordering::SeqCst);
    cx.cancellation().cancelled().await;
    "stopped"
}

#[tokio::test]
async fn a_cancelled_round_leaves_no_call_unanswered() {
    let registry = ToolRegistry::new().with(Slow).unwrap().with(Add).unwrap();
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([
        call("s1", "slow", json!({})),
        call("s2", "add", json!({"a": 1, "b": 1})),
    ])]);
    let invocation = Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("go")]);
    let control = invocation.control();
    tokio::spawn(async move {
        while STARTED.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        control.cancel();
    });
    let outcome = invocation.await;
    assert!(
        matches!(outcome, RunOutcome::Cancelled { .. }),
        "{outcome:?}"
    );
    every_call_answered_once(outcome.transcript());
}

// events() + control() ---------------------------------------------------

/// Search the web.
#[external_tool]
struct WebSearch {
    query: String,
}

/// Remove a file.
#[tool(needs_approval)]
fn remove(path: String) -> String {
    format!("removed {path}")
}

#[tokio::test]
async fn a_run_is_answered_through_events_and_control() {
    let registry = ToolRegistry::new()
        .with(WebSearch::external_tool())
        .unwrap()
        .with(Remove)
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            call("s1", "web_search", json!({"query": "rust"})),
            call("r1", "remove", json!({"path": "/tmp/x"})),
        ]),
        ScriptedTurn::text("done")
            .expect_ok("s1", "found it")
            .expect_ok("r1", "removed /tmp/x"),
    ]);
    let invocation = Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("go")]);
    let mut events = invocation.events();
    let control = invocation.control();
    let answering = tokio::spawn(async move {
        while let Some(envelope) = events.next().await {
            match envelope.kind {
                EventKind::Tool(ToolStreamEvent::Call {
                    call,
                    external: true,
                }) => control
                    .resolve(&call.call_id, Ok(ToolOutput::text("found it")))
                    .unwrap(),
                EventKind::Tool(ToolStreamEvent::ApprovalRequested { call }) => {
                    control.approve(&call.call_id).unwrap();
                }
                _ => {}
            }
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    answering.await.unwrap();
}

#[tokio::test]
async fn with_nobody_listening_an_external_call_still_fails_no_handler() {
    let registry = ToolRegistry::new()
        .with(WebSearch::external_tool())
        .unwrap();
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([call(
        "s1",
        "web_search",
        json!({"query": "x"}),
    )])]);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("go")])
        .await;
    assert!(matches!(
        outcome,
        RunOutcome::Failed {
            error: RunError::NoHandler { .. },
            ..
        }
    ));
    every_call_answered_once(outcome.transcript());
}

#[tokio::test(start_paused = true)]
async fn a_call_waiting_without_an_answer_is_reported() {
    let registry = ToolRegistry::new()
        .with(WebSearch::external_tool())
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("s1", "web_search", json!({"query": "x"}))]),
        ScriptedTurn::text("gave up").expect_error("s1", "did not finish"),
    ]);
    let invocation = Agent::new(model, ToolRuntime::new(registry))
        .external_deadline(Duration::from_secs(30))
        .waiting_notice(Duration::from_secs(2))
        .invoke([Message::user("go")]);
    let waited = Arc::new(Mutex::new(Vec::new()));
    let seen = waited.clone();
    // A handler that only logs.
    invocation.on(move |envelope, _control| {
        if let EventKind::Tool(ToolStreamEvent::Waiting {
            call_id, waited, ..
        }) = envelope.kind
        {
            seen.lock().unwrap().push((call_id, waited));
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("gave up"), "{outcome:?}");
    assert_eq!(
        *waited.lock().unwrap(),
        vec![("s1".to_owned(), Duration::from_secs(2))]
    );
}

// Answers are never lost; ids are unique per run ---------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolve_is_ok_only_when_the_run_uses_the_answer() {
    // Answers race the deadline: whatever `resolve` says must be what the
    // model reads.
    for round in 0..40 {
        let registry = ToolRegistry::new()
            .with(WebSearch::external_tool())
            .unwrap();
        let model = ScriptedModel::new([
            ScriptedTurn::tool_calls([call("s1", "web_search", json!({"query": "x"}))]),
            ScriptedTurn::text("end"),
        ]);
        let invocation = Agent::new(model, ToolRuntime::new(registry))
            .external_deadline(Duration::from_millis(5))
            .invoke([Message::user("go")]);
        let said = Arc::new(Mutex::new(None));
        let slot = said.clone();
        let delay = Duration::from_micros(4_000 + round * 50);
        invocation.on(move |envelope, control| {
            if let EventKind::Tool(ToolStreamEvent::Call {
                call,
                external: true,
            }) = envelope.kind
            {
                let slot = slot.clone();
                std::thread::spawn(move || {
                    std::thread::sleep(delay);
                    *slot.lock().unwrap() =
                        Some(control.resolve(&call.call_id, Ok(ToolOutput::text("answer"))));
                });
            }
        });
        let outcome = invocation.await;
        let result = outcome
            .transcript()
            .iter()
            .find_map(|message| match message {
                Message::ToolResult(result) => Some(result.clone()),
                _ => None,
            })
            .unwrap();
        for _ in 0..200 {
            if said.lock().unwrap().is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let said = said.lock().unwrap().clone().unwrap();
        match said {
            Ok(()) => assert_eq!(result.content, "answer", "round {round}"),
            Err(ControlError::Expired { .. } | ControlError::RunFinished) => {
                assert!(result.is_error, "round {round}: {}", result.content);
            }
            Err(other) => panic!("round {round}: {other}"),
        }
    }
}

#[tokio::test]
async fn repeated_call_ids_are_made_unique_within_a_run() {
    let registry = ToolRegistry::new()
        .with(WebSearch::external_tool())
        .unwrap()
        .with(Add)
        .unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            call("same", "web_search", json!({"query": "one"})),
            call("same", "web_search", json!({"query": "two"})),
        ]),
        ScriptedTurn::tool_calls([call("same", "add", json!({"a": 1, "b": 1}))]),
        ScriptedTurn::text("done"),
    ]);
    let invocation = Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("go")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let query = call.arguments["query"].as_str().unwrap().to_owned();
            control
                .resolve(&call.call_id, Ok(ToolOutput::text(query)))
                .unwrap();
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    every_call_answered_once(outcome.transcript());
    let answers: Vec<(String, String)> = outcome
        .transcript()
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some((result.call_id.clone(), result.content.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        answers,
        [
            ("same".to_owned(), "one".to_owned()),
            ("same_2".to_owned(), "two".to_owned()),
            ("same_3".to_owned(), "2".to_owned()),
        ]
    );
}

// One runtime entry point for the calls of a run -------------------------

/// Answer with a lot of text.
#[external_tool]
struct Big {
    size: u32,
}

#[tokio::test]
async fn external_answers_are_held_to_the_output_limit() {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(Big::external_tool()))
        .unwrap();
    let runtime = ToolRuntime::builder(registry).max_output_bytes(100).build();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("b1", "big", json!({"size": 1000}))]),
        ScriptedTurn::text("done").expect_error("b1", "over the limit of 100 bytes"),
    ]);
    let invocation = Agent::new(model, runtime).invoke([Message::user("go")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            control
                .resolve(&call.call_id, Ok(ToolOutput::text("x".repeat(1000))))
                .unwrap();
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
}

#[tokio::test]
async fn calls_of_a_run_are_traced_like_direct_calls() {
    /// The name and `call_id` of every span.
    #[derive(Default, Clone)]
    struct Spans(Arc<Mutex<Vec<(String, String)>>>);
    struct CallId<'a>(&'a mut String);
    impl tracing::field::Visit for CallId<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            if field.name() == "call_id" {
                *self.0 = format!("{value:?}");
            }
        }
    }
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _id: &tracing::span::Id,
            _ctx: tracing_subscriber::layer::Context<'_, S>,
        ) {
            let mut call_id = String::new();
            attrs.record(&mut CallId(&mut call_id));
            let name = attrs.metadata().name().to_owned();
            self.0.lock().unwrap().push((name, call_id));
        }
    }
    static SPANS: std::sync::OnceLock<Spans> = std::sync::OnceLock::new();
    let spans = tracing_support::installed(&SPANS, Spans::default);
    let registry = ToolRegistry::new().with(Add).unwrap();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("traced-1", "add", r#"{"a": 1, "b": 2}"#)]),
        ScriptedTurn::text("3").expect_ok("traced-1", "3"),
    ]);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("go")])
        .await;
    assert_eq!(outcome.text(), Some("3"));
    let spans = spans.0.lock().unwrap();
    assert!(
        spans
            .iter()
            .any(|(name, call_id)| name == "tool_call" && call_id == "traced-1"),
        "{spans:?}"
    );
}

#[tokio::test]
async fn a_renamed_call_keeps_its_own_reasoning() {
    use behest::providers::WireFormat;
    use behest::run::{Reasoning, ReasoningPlace};

    let signature = |id: &str, data: &str| Reasoning {
        provider: WireFormat::Gemini,
        place: ReasoningPlace::Call {
            call_id: id.to_owned(),
        },
        data: json!({"thoughtSignature": data}),
    };
    let mut reply = behest::AssistantMessage::tool_calls([
        call("same", "add", json!({"a": 1, "b": 1})),
        call("same", "add", json!({"a": 2, "b": 2})),
    ]);
    reply.reasoning = vec![signature("same", "first"), signature("same", "second")];
    let registry = ToolRegistry::new().with(Add).unwrap();
    let model = ScriptedModel::new([ScriptedTurn::reply(reply), ScriptedTurn::text("done")]);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("go")])
        .await;
    let Some(Message::Assistant(sent)) = outcome.transcript().get(1) else {
        panic!("{outcome:?}")
    };
    let ids: Vec<&str> = sent.tool_calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(ids, ["same", "same_2"]);
    let places: Vec<(String, String)> = sent
        .reasoning
        .iter()
        .map(|piece| match &piece.place {
            ReasoningPlace::Call { call_id } => {
                (call_id.clone(), piece.data["thoughtSignature"].to_string())
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        places,
        [
            ("same".to_owned(), "\"first\"".to_owned()),
            ("same_2".to_owned(), "\"second\"".to_owned())
        ]
    );
}

/// Fetch a page.
#[external_tool(strict)]
struct Fetch {
    url: String,
    /// Bytes at most.
    max_bytes: Option<u32>,
}

#[tokio::test]
async fn from_call_in_a_handler_checks_with_the_run_s_limits() {
    // The runtime takes arguments past the 1 MiB default; so must the
    // handler that parses them.
    let big = "x".repeat(1_500_000);
    let text = format!(r#"{{"url": "{big}"}}"#);
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(Fetch::external_tool()))
        .unwrap();
    let runtime = ToolRuntime::builder(registry)
        .max_argument_bytes(4 << 20)
        .build();
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("f1", "fetch", text.as_str())]),
        ScriptedTurn::text("done").expect_ok("f1", "1500000"),
    ]);
    let invocation = Agent::new(model, runtime).invoke([Message::user("go")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            assert_eq!(control.limits().max_argument_bytes, 4 << 20);
            let answer =
                Fetch::from_call(&call).map(|fetch| ToolOutput::text(fetch.url.len().to_string()));
            control.resolve(&call.call_id, answer).unwrap();
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    // Outside a run, the defaults.
    let outside = call("f2", "fetch", text.as_str());
    assert!(matches!(
        Fetch::from_call(&outside),
        Err(ToolError::LimitExceeded { .. })
    ));
}

// Typed final answers ---------------------------------------------------------------

/// A verdict.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Verdict {
    ok: bool,
    reason: String,
}

#[tokio::test]
async fn a_typed_answer_that_does_not_fit_is_sent_back_and_corrected() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("f1", "final_answer", r#"{"ok": "yes"}"#)]),
        ScriptedTurn::tool_calls([call(
            "f2",
            "final_answer",
            r#"{"ok": true, "reason": "fine"}"#,
        )])
        .expect_error("f1", "`/ok`: expected a boolean"),
    ]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    let verdict: Verdict = agent.output([Message::user("ok?")]).await.unwrap();
    assert_eq!(
        verdict,
        Verdict {
            ok: true,
            reason: "fine".into()
        }
    );
}

/// A typed answer meets the runtime's byte and depth limits as any call's
/// arguments do, through the tool and as a native text alike: a model
/// cannot end a run on an answer the runtime would refuse as a call.
#[tokio::test]
async fn a_typed_answer_over_the_argument_limits_is_refused() {
    let long = format!(r#"{{"ok": true, "reason": "{}"}}"#, "x".repeat(600));
    let limited = || {
        ToolRuntime::builder(ToolRegistry::new())
            .max_argument_bytes(512)
            .build()
    };
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("f1", "final_answer", long.as_str())]),
        ScriptedTurn::tool_calls([call(
            "f2",
            "final_answer",
            r#"{"ok": true, "reason": "short"}"#,
        )])
        .expect_error("f1", "512"),
    ]);
    let verdict: Verdict = Agent::new(model, limited())
        .output([Message::user("ok?")])
        .await
        .unwrap();
    assert_eq!(verdict.reason, "short");

    let model =
        ScriptedModel::new([ScriptedTurn::text(long.as_str())]).with_structured_output(true);
    let outcome = Agent::new(model, limited())
        .with_output::<Verdict>()
        .output_reminders(0)
        .invoke([Message::user("ok?")])
        .await;
    assert!(
        matches!(&outcome, RunOutcome::Failed { error: RunError::Output { message }, .. } if message.contains("512")),
        "{outcome:?}"
    );
    // Nested deeper than the limit: refused, not read.
    let deep = format!(
        r#"{{"ok": true, "reason": "r", "x": {}{}}}"#,
        "[".repeat(40),
        "]".repeat(40)
    );
    let model =
        ScriptedModel::new([ScriptedTurn::text(deep.as_str())]).with_structured_output(true);
    let outcome = Agent::new(
        model,
        ToolRuntime::builder(ToolRegistry::new())
            .max_argument_depth(8)
            .build(),
    )
    .with_output::<Verdict>()
    .output_reminders(0)
    .invoke([Message::user("ok?")])
    .await;
    assert!(
        matches!(&outcome, RunOutcome::Failed { error: RunError::Output { message }, .. } if message.contains("deep") || message.contains("depth") || message.contains("nest")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_final_answer_that_never_fits_fails_after_the_allowed_corrections() {
    let wrong = |id: &str| ScriptedTurn::tool_calls([call(id, "final_answer", r#"{"ok": "yes"}"#)]);
    // Default: one correction, then the run fails; the refused calls and a
    // call beside the last one are all answered in the transcript.
    let model = ScriptedModel::new([
        wrong("f1"),
        ScriptedTurn::tool_calls([
            call("a1", "add", json!({"a": 1, "b": 2})),
            call("f2", "final_answer", r#"{"ok": 1}"#),
        ])
        .expect_error("f1", "`/ok`: expected a boolean"),
        wrong("f3"),
    ]);
    let registry = ToolRegistry::new().with(Add).unwrap();
    let agent = Agent::new(model, ToolRuntime::new(registry)).with_output::<Verdict>();
    let outcome = agent.invoke([Message::user("ok?")]).await;
    let RunOutcome::Failed {
        error: RunError::Output { message },
        transcript,
        ..
    } = &outcome
    else {
        panic!("{outcome:?}");
    };
    assert!(
        message.contains("`final_answer` does not match") && message.contains("`/ok`"),
        "{message}"
    );
    every_call_answered_once(transcript);
    // The last turn's results in the order of its calls.
    let last: Vec<&str> = transcript[transcript.len() - 2..]
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(last, ["a1", "f2"]);
    // The third answer was never asked for.
    assert!(!format!("{transcript:?}").contains("f3"));

    // `output_reminders` set before `output` holds: two corrections.
    let model = ScriptedModel::new([
        wrong("f1"),
        wrong("f2"),
        ScriptedTurn::tool_calls([call(
            "f3",
            "final_answer",
            r#"{"ok": true, "reason": "third time"}"#,
        )]),
    ]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new())).output_reminders(2);
    let verdict: Verdict = agent.output([Message::user("ok?")]).await.unwrap();
    assert_eq!(verdict.reason, "third time");

    // None allowed: the first mismatch fails.
    let model = ScriptedModel::new([wrong("f1")]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new())).output_reminders(0);
    let error = agent
        .output::<Verdict>([Message::user("ok?")])
        .await
        .unwrap_err();
    assert!(matches!(error, RunError::Output { .. }), "{error}");
}

#[tokio::test]
async fn a_typed_run_reminds_a_text_answer_once_then_fails() {
    let model = ScriptedModel::new([
        ScriptedTurn::text("It is fine."),
        ScriptedTurn::text("Really, it is."),
    ]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    let error = agent
        .output::<Verdict>([Message::user("ok?")])
        .await
        .unwrap_err();
    assert!(matches!(error, RunError::Output { .. }), "{error}");
    // A JSON text answer of the right shape is taken as it is.
    let model = ScriptedModel::new([ScriptedTurn::text(r#"{"ok": false, "reason": "no"}"#)]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    let verdict: Verdict = agent.output([Message::user("ok?")]).await.unwrap();
    assert!(!verdict.ok);
}

#[tokio::test]
async fn a_model_with_structured_output_gives_the_answer_as_its_text() {
    // No `final_answer` tool is offered: the model answers in the shape.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([call("a1", "add", json!({"a": 1, "b": 2}))])
            .expect_tools(["add"]),
        ScriptedTurn::text(r#"{"ok": "yes"}"#).expect_ok("a1", "3"),
        ScriptedTurn::text(r#"{"ok": true, "reason": "1 + 2 = 3"}"#),
    ])
    .with_structured_output(true);
    let registry = ToolRegistry::new().with(Add).unwrap();
    let agent = Agent::new(model, ToolRuntime::new(registry)).with_output::<Verdict>();
    let outcome = agent.invoke([Message::user("check")]).await;
    let verdict: Verdict = outcome.output().unwrap();
    assert!(verdict.ok);
    // The mismatch went back with the reason, as a user message.
    let correction = outcome
        .transcript()
        .iter()
        .find_map(|message| match message {
            Message::User { text } if text.contains("required format") => Some(text.clone()),
            _ => None,
        });
    let correction = correction.expect("a correction was sent");
    assert!(
        correction.contains("`/ok`: expected a boolean"),
        "{correction}"
    );
}

#[tokio::test]
async fn a_recording_replays_a_structured_output_model_as_one() {
    use behest::Model;

    let path = std::env::temp_dir().join(format!("behest-structured-{}.json", std::process::id()));
    let recorder = behest::run::Recorder::new(
        ScriptedModel::new([ScriptedTurn::text(r#"{"ok": true, "reason": "r"}"#)])
            .with_structured_output(true),
    );
    recorder
        .respond(&[Message::user("ok?")], &[])
        .await
        .unwrap();
    let recording = recorder.recording();
    assert!(recording.structured_output);
    recording.save(&path).unwrap();
    let replay = ScriptedModel::from_file(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(replay.supports_structured_output());
    // Replayed, the typed run asks the same way: no `final_answer` tool.
    let agent = Agent::new(replay, ToolRuntime::new(ToolRegistry::new()));
    let verdict: Verdict = agent.output([Message::user("ok?")]).await.unwrap();
    assert_eq!(verdict.reason, "r");
}

#[tokio::test]
async fn a_structured_answer_that_never_fits_fails_after_one_correction() {
    let model = ScriptedModel::new([
        ScriptedTurn::text("fine"),
        ScriptedTurn::text(r#"{"ok": 1}"#),
    ])
    .with_structured_output(true);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    let error = agent
        .output::<Verdict>([Message::user("ok?")])
        .await
        .unwrap_err();
    let RunError::Output { message } = &error else {
        panic!("{error}");
    };
    assert!(message.contains("required format"), "{message}");
    // With no corrections allowed, the first mismatch fails.
    let model = ScriptedModel::new([ScriptedTurn::text("fine")]).with_structured_output(true);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
        .with_output::<Verdict>()
        .output_reminders(0);
    let outcome = agent.invoke([Message::user("ok?")]).await;
    assert!(
        matches!(&outcome, RunOutcome::Failed { error: RunError::Output { message }, .. } if message.contains("not JSON")),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_typed_answer_that_is_not_an_object_is_wrapped_and_other_calls_are_answered() {
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([
        call("a1", "add", json!({"a": 1, "b": 2})),
        call("f1", "final_answer", json!({"result": ["x", "y"]})),
    ])]);
    let registry = ToolRegistry::new().with(Add).unwrap();
    let agent = Agent::new(model, ToolRuntime::new(registry)).with_output::<Vec<String>>();
    let outcome = agent.invoke([Message::user("list")]).await;
    assert_eq!(outcome.output::<Vec<String>>().unwrap(), ["x", "y"]);
    every_call_answered_once(outcome.transcript());
}

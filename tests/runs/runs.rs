//! Runs: events and their order, external calls, approvals, progress,
//! cancellation, limits, and a model that corrects its own mistakes.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::run::{ControlError, RunError, ScriptedTurn};
use behest::{
    external_tool, tool, Agent, EventKind, Message, Progress, RunOutcome, RunPhase, ScriptedModel,
    ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRuntime, ToolStreamEvent,
};
use futures::StreamExt;
use serde_json::json;

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Work in three steps, reporting progress.
#[tool]
async fn work(#[ctx] cx: ToolContext) -> &'static str {
    for step in 1..=3 {
        cx.report_progress(
            Progress::new(f64::from(step), Some(3.0)).with_message(format!("step {step}")),
        );
        tokio::task::yield_now().await;
    }
    "done"
}

static SAW_CANCEL: AtomicBool = AtomicBool::new(false);

/// Wait for a long time, unless cancelled.
#[tool]
async fn wait_long(#[ctx] cx: ToolContext) -> &'static str {
    tokio::select! {
        () = cx.cancellation().cancelled() => {
            SAW_CANCEL.store(true, Ordering::SeqCst);
            "cancelled"
        }
        () = tokio::time::sleep(Duration::from_secs(3600)) => "finished",
    }
}

/// Delete a file.
#[tool(needs_approval)]
fn delete_file(path: String) -> String {
    format!("deleted {path}")
}

/// Search the web.
#[external_tool]
struct WebSearch {
    query: String,
}

/// What handlers record, shared with the test.
type Log<T> = Arc<Mutex<Vec<T>>>;

fn runtime() -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(Add)).unwrap();
    registry.register_tool(Arc::new(Work)).unwrap();
    registry.register_tool(Arc::new(WaitLong)).unwrap();
    registry.register_tool(Arc::new(DeleteFile)).unwrap();
    registry
        .register_tool(Arc::new(WebSearch::external_tool()))
        .unwrap();
    ToolRuntime::new(registry)
}

fn agent(turns: Vec<ScriptedTurn>) -> Agent {
    Agent::new(ScriptedModel::new(turns), runtime())
}

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, arguments)
}

fn search_call(id: &str) -> ScriptedTurn {
    ScriptedTurn::tool_calls([call(id, "web_search", json!({"query": "rust"}))])
}

/// A short name for each event, for comparing whole runs.
fn label(kind: &EventKind) -> String {
    match kind {
        EventKind::State(state) => format!("{state:?}"),
        EventKind::ModelMessage(_) => "model".to_owned(),
        EventKind::Tool(ToolStreamEvent::Call { call, external }) => {
            format!(
                "call {}{}",
                call.call_id,
                if *external { " external" } else { "" }
            )
        }
        EventKind::Tool(ToolStreamEvent::ApprovalRequested { call }) => {
            format!("approval? {}", call.call_id)
        }
        EventKind::Tool(ToolStreamEvent::Progress { call_id, progress }) => {
            format!("progress {call_id} {}", progress.progress)
        }
        EventKind::Tool(ToolStreamEvent::Result { result }) => {
            format!(
                "result {} {}",
                result.call_id,
                if result.is_error() { "error" } else { "ok" }
            )
        }
        other => format!("{other:?}"),
    }
}

#[tokio::test]
async fn every_handler_gets_every_event_in_order() {
    let invocation = agent(vec![
        ScriptedTurn::tool_calls([
            call("c1", "add", json!({"a": 1, "b": 2})),
            call("c2", "add", json!({"a": 3, "b": 4})),
        ])
        .expect_tools(["add", "work", "wait_long", "delete_file", "web_search"]),
        ScriptedTurn::text("3 and 7")
            .expect_ok("c1", "3")
            .expect_ok("c2", "7"),
    ])
    .invoke([Message::user("add")]);
    let seen: Vec<Log<(u64, String)>> = (0..3).map(|_| Arc::default()).collect();
    for log in &seen {
        let log = log.clone();
        invocation.on(move |envelope, _control| {
            log.lock()
                .unwrap()
                .push((envelope.sequence, label(&envelope.kind)));
        });
    }
    let mut stream = invocation.events();
    let run_id = invocation.run_id();
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("3 and 7"));

    let first = seen[0].lock().unwrap().clone();
    let labels: Vec<&str> = first.iter().map(|(_, label)| label.as_str()).collect();
    assert_eq!(
        labels,
        [
            "AwaitingModel",
            "model",
            "ExecutingTools",
            "call c1",
            "result c1 ok",
            "call c2",
            "result c2 ok",
            "AwaitingModel",
            "model",
            "Output(\"3 and 7\")",
            "Completed"
        ]
    );
    let sequences: Vec<u64> = first.iter().map(|(sequence, _)| *sequence).collect();
    assert_eq!(
        sequences,
        (1..=11).collect::<Vec<u64>>(),
        "numbered from 1 without gaps"
    );
    for other in &seen[1..] {
        assert_eq!(
            *other.lock().unwrap(),
            first,
            "every handler gets the same events"
        );
    }
    let mut streamed = Vec::new();
    while let Some(envelope) = stream.next().await {
        assert_eq!(envelope.run_id, run_id);
        streamed.push((envelope.sequence, label(&envelope.kind)));
    }
    assert_eq!(
        streamed, first,
        "the stream sees the same events and then ends"
    );
}

#[tokio::test]
async fn an_external_call_is_answered_from_another_task_after_a_delay() {
    let invocation = agent(vec![
        search_call("s1"),
        ScriptedTurn::text("found").expect_ok("s1", "rust is a language"),
    ])
    .invoke([Message::user("search")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let search = WebSearch::from_call(&call).unwrap();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(30)).await;
                let text = format!("{} is a language", search.query);
                control
                    .resolve(&call.call_id, Ok(ToolOutput::text(text)))
                    .unwrap();
            });
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("found"), "{outcome:?}");
}

#[tokio::test]
async fn an_external_call_without_handlers_fails_the_run() {
    let outcome = agent(vec![search_call("s1"), ScriptedTurn::text("never")])
        .invoke([Message::user("search")])
        .await;
    let RunOutcome::Failed {
        error, transcript, ..
    } = outcome
    else {
        panic!("expected a failed run, got {outcome:?}");
    };
    assert_eq!(
        error,
        RunError::NoHandler {
            tool_name: "web_search".into(),
            call_id: "s1".into()
        }
    );
    let Some(Message::ToolResult(last)) = transcript.last() else {
        panic!("the result is recorded")
    };
    assert!(
        last.is_error && last.content.contains("no local implementation"),
        "{last:?}"
    );
}

/// A stream of events alone observes: nobody can answer, so an external
/// call fails at once, as with no subscriber at all. A `control()` handle
/// held beside the stream makes its holder the one who answers.
#[tokio::test(start_paused = true)]
async fn an_observer_is_no_answerer_but_a_held_control_is() {
    let invocation = agent(vec![search_call("s1"), ScriptedTurn::text("never")])
        .invoke([Message::user("search")]);
    let events = invocation.events();
    let started = tokio::time::Instant::now();
    let outcome = invocation.await;
    assert!(
        matches!(&outcome, RunOutcome::Failed { error: RunError::NoHandler { call_id, .. }, .. } if call_id == "s1"),
        "{outcome:?}"
    );
    // It did not wait out the external deadline (60 s) first.
    assert!(started.elapsed() < Duration::from_secs(60));
    let seen: Vec<String> = events.map(|envelope| label(&envelope.kind)).collect().await;
    assert!(seen.iter().any(|label| label == "Failed"), "{seen:?}");

    let invocation = agent(vec![search_call("s2"), ScriptedTurn::text("found")])
        .invoke([Message::user("search")]);
    let mut events = invocation.events();
    let control = invocation.control();
    let answering = tokio::spawn(async move {
        while let Some(envelope) = events.next().await {
            if let EventKind::Tool(ToolStreamEvent::Call {
                call,
                external: true,
            }) = envelope.kind
            {
                let answer = Ok(ToolOutput::text("results"));
                control.resolve(&call.call_id, answer).unwrap();
            }
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("found"), "{outcome:?}");
    answering.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_external_call_times_out_and_the_model_reads_it() {
    let invocation = agent(vec![
        search_call("s1"),
        ScriptedTurn::text("gave up").expect_error("s1", "did not finish within 5s"),
    ])
    .external_deadline(Duration::from_secs(5))
    .invoke([Message::user("search")]);
    let late = Arc::new(Mutex::new(None));
    let seen = late.clone();
    invocation.on(move |envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let seen = seen.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(6)).await;
                *seen.lock().unwrap() =
                    Some(control.resolve(&call.call_id, Ok(ToolOutput::text("late"))));
            });
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("gave up"), "{outcome:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        *late.lock().unwrap(),
        Some(Err(ControlError::Expired {
            call_id: "s1".into()
        })),
        "the deadline answered it"
    );
}

#[tokio::test]
async fn the_first_answer_wins_and_later_ones_are_refused() {
    let invocation = agent(vec![
        search_call("s1"),
        ScriptedTurn::text("ok").expect_ok("s1", "first"),
    ])
    .invoke([Message::user("search")]);
    let answers: Log<(&str, Result<(), ControlError>)> = Arc::default();
    for text in ["first", "second"] {
        let answers = answers.clone();
        invocation.on(move |envelope, control| {
            if let EventKind::Tool(ToolStreamEvent::Call {
                call,
                external: true,
            }) = envelope.kind
            {
                let answers = answers.clone();
                // Each handler answers from its own task; the second waits
                // until the first has answered.
                tokio::spawn(async move {
                    while text == "second" && answers.lock().unwrap().is_empty() {
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    let answer = control.resolve(&call.call_id, Ok(ToolOutput::text(text)));
                    answers.lock().unwrap().push((text, answer));
                });
            }
        });
    }
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("ok"), "{outcome:?}");
    assert_eq!(
        *answers.lock().unwrap(),
        vec![
            ("first", Ok(())),
            (
                "second",
                Err(ControlError::AlreadyAnswered {
                    call_id: "s1".into()
                })
            ),
        ]
    );
}

#[tokio::test]
async fn answers_for_unknown_calls_are_refused() {
    let invocation =
        agent(vec![search_call("s1"), ScriptedTurn::text("ok")]).invoke([Message::user("search")]);
    let refused = Arc::new(Mutex::new(None));
    let slot = refused.clone();
    invocation.on(move |envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            *slot.lock().unwrap() = Some(control.resolve("s404", Ok(ToolOutput::text("?"))));
            control.approve(&call.call_id).unwrap_err();
            control
                .resolve(&call.call_id, Ok(ToolOutput::text("x")))
                .unwrap();
        }
    });
    let control = invocation.control();
    let outcome = invocation.await;
    assert!(
        matches!(outcome, RunOutcome::Completed { .. }),
        "{outcome:?}"
    );
    assert_eq!(
        *refused.lock().unwrap(),
        Some(Err(ControlError::UnknownCall {
            call_id: "s404".into()
        }))
    );
    assert_eq!(
        control.resolve("s2", Ok(ToolOutput::text("late"))),
        Err(ControlError::RunFinished)
    );
    assert_eq!(
        control.resolve("s1", Ok(ToolOutput::text("again"))),
        Err(ControlError::AlreadyAnswered {
            call_id: "s1".into()
        })
    );
}

#[tokio::test]
async fn cancelling_during_a_long_tool_ends_the_run_cancelled() {
    let invocation = agent(vec![
        ScriptedTurn::tool_calls([call("w1", "wait_long", json!({}))]),
        ScriptedTurn::text("never"),
    ])
    .invoke([Message::user("wait")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call { .. }) = envelope.kind {
            control.cancel();
        }
    });
    let states = Arc::new(Mutex::new(Vec::new()));
    let log = states.clone();
    invocation.on(move |envelope, _| {
        if let EventKind::State(state) = envelope.kind {
            log.lock().unwrap().push(state);
        }
    });
    let outcome = tokio::time::timeout(Duration::from_secs(10), invocation)
        .await
        .expect("the run stops");
    assert!(
        matches!(outcome, RunOutcome::Cancelled { .. }),
        "{outcome:?}"
    );
    assert!(
        SAW_CANCEL.load(Ordering::SeqCst),
        "the tool saw its cancellation token"
    );
    assert_eq!(
        *states.lock().unwrap(),
        [
            RunPhase::AwaitingModel,
            RunPhase::ExecutingTools,
            RunPhase::Cancelled
        ]
    );
}

#[tokio::test]
async fn cancelling_releases_a_pending_external_call() {
    let invocation = agent(vec![search_call("s1"), ScriptedTurn::text("never")])
        .invoke([Message::user("search")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call { external: true, .. }) = envelope.kind {
            control.cancel();
        }
    });
    let outcome = tokio::time::timeout(Duration::from_secs(10), invocation)
        .await
        .expect("released");
    assert!(
        matches!(outcome, RunOutcome::Cancelled { .. }),
        "{outcome:?}"
    );
}

fn approval_run(
    decide: impl Fn(&str, &behest::RunControl) + Send + Sync + 'static,
    expect: ScriptedTurn,
) -> behest::RuntimeInvocation {
    let invocation = agent(vec![
        ScriptedTurn::tool_calls([call("d1", "delete_file", json!({"path": "/tmp/x"}))]),
        expect,
    ])
    .approval_deadline(Duration::from_secs(30))
    .invoke([Message::user("delete")]);
    invocation.on(move |envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::ApprovalRequested { call }) = envelope.kind {
            decide(&call.call_id, &control);
        }
    });
    invocation
}

#[tokio::test]
async fn an_approved_call_runs() {
    let invocation = approval_run(
        |id, control| control.approve(id).unwrap(),
        ScriptedTurn::text("done").expect_ok("d1", "deleted /tmp/x"),
    );
    assert_eq!(invocation.await.text(), Some("done"));
}

#[tokio::test]
async fn a_denied_call_reaches_the_model_as_an_error() {
    let invocation = approval_run(
        |id, control| control.deny(id, "not that file").unwrap(),
        ScriptedTurn::text("ok, I won't").expect_error("d1", "not approved: not that file"),
    );
    assert_eq!(invocation.await.text(), Some("ok, I won't"));
}

#[tokio::test(start_paused = true)]
async fn an_unanswered_approval_times_out_as_a_denial() {
    let invocation = approval_run(
        |_, _| {},
        ScriptedTurn::text("nobody answered").expect_error("d1", "nobody approved it within 30s"),
    );
    assert_eq!(invocation.await.text(), Some("nobody answered"));
}

#[tokio::test]
async fn approval_by_runtime_policy_and_without_handlers() {
    let outcome = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([call("a1", "add", json!({"a": 1, "b": 1}))]),
            ScriptedTurn::text("refused").expect_error("a1", "nobody is there to give it"),
        ]),
        runtime(),
    )
    .require_approval("add")
    .invoke([Message::user("add")])
    .await;
    assert_eq!(outcome.text(), Some("refused"), "{outcome:?}");
}

#[tokio::test]
async fn max_steps_stops_a_model_that_never_answers() {
    let turns = (0..5)
        .map(|i| ScriptedTurn::tool_calls([call(&format!("c{i}"), "add", json!({"a": i, "b": 0}))]))
        .collect();
    let outcome = agent(turns)
        .max_steps(3)
        .invoke([Message::user("loop")])
        .await;
    let RunOutcome::Failed {
        error, transcript, ..
    } = outcome
    else {
        panic!("expected a failure")
    };
    assert_eq!(error, RunError::MaxStepsExceeded { max_steps: 3 });
    let results: Vec<_> = transcript
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    // The fourth round never ran, but its call is answered: a transcript
    // with an unanswered call is refused by providers.
    assert_eq!(results.len(), 4);
    assert!(results[..3].iter().all(|result| !result.is_error));
    assert!(results[3].is_error);
    assert!(
        results[3].content.contains("limit of 3 rounds"),
        "{}",
        results[3].content
    );
}

#[tokio::test]
async fn a_model_corrects_an_unknown_tool_and_bad_arguments() {
    let outcome = agent(vec![
        ScriptedTurn::tool_calls([
            call("c1", "sum", json!({"a": 1, "b": 2})),
            call("c2", "add", json!("{\"a\": 1, \"b\": \"two\"}")),
        ]),
        ScriptedTurn::tool_calls([call("c3", "add", json!({"a": 1, "b": 2}))])
            .expect_error(
                "c1",
                "there is no tool named `sum`; the tools are `add`, `work`",
            )
            .expect_error("c2", "`/b`: expected an integer, got the string \"two\""),
        ScriptedTurn::text("3").expect_ok("c3", "3"),
    ])
    .invoke([Message::user("add")])
    .await;
    assert_eq!(outcome.text(), Some("3"), "{outcome:?}");
}

#[tokio::test]
async fn progress_events_arrive_in_order_between_call_and_result() {
    let invocation = agent(vec![
        ScriptedTurn::tool_calls([call("p1", "work", json!({}))]),
        ScriptedTurn::text("done"),
    ])
    .invoke([Message::user("work")]);
    let events = invocation.events();
    assert_eq!(invocation.await.text(), Some("done"));
    let labels: Vec<String> = events
        .filter_map(|envelope| async move {
            matches!(envelope.kind, EventKind::Tool(_)).then(|| label(&envelope.kind))
        })
        .collect()
        .await;
    assert_eq!(
        labels,
        [
            "call p1",
            "progress p1 1",
            "progress p1 2",
            "progress p1 3",
            "result p1 ok"
        ]
    );
}

#[tokio::test]
async fn a_panicking_handler_does_not_take_the_run_down() {
    let invocation =
        agent(vec![search_call("s1"), ScriptedTurn::text("ok")]).invoke([Message::user("search")]);
    let panics = Arc::new(AtomicUsize::new(0));
    let count = panics.clone();
    invocation.on(move |_, _| {
        count.fetch_add(1, Ordering::SeqCst);
        panic!("deliberate panic in a handler");
    });
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            control
                .resolve(&call.call_id, Ok(ToolOutput::text("answer")))
                .unwrap();
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("ok"), "{outcome:?}");
    assert!(
        panics.load(Ordering::SeqCst) > 5,
        "the panicking handler kept receiving events"
    );
}

#[tokio::test]
async fn a_scripted_model_reports_what_it_did_not_get() {
    let outcome = agent(vec![
        ScriptedTurn::tool_calls([call("c1", "add", json!({"a": 1, "b": 2}))]),
        ScriptedTurn::text("done").expect_ok("c1", "4"),
    ])
    .invoke([Message::user("add")])
    .await;
    let RunOutcome::Failed {
        error: RunError::Model(error),
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert_eq!(
        error.to_string(),
        "scripted model, turn 2: expected a success of call `c1` containing \"4\", got a success: \"3\""
    );
}

#[test]
fn tool_errors_survive_in_results() {
    let error = ToolError::ApprovalDenied {
        reason: "no".into(),
    };
    assert_eq!(error.kind(), "approval_denied");
}

/// An external tool that needs an approval is approved first and only
/// then answered, its validated arguments shown to both; denied, it is
/// never put to whoever answers it.
#[tokio::test]
async fn an_external_call_that_needs_an_approval_is_approved_before_it_is_answered() {
    for approve in [true, false] {
        let expect = if approve {
            ScriptedTurn::text("found").expect_ok("s1", "rust-lang.org")
        } else {
            ScriptedTurn::text("not searched").expect_error("s1", "not approved: no searching")
        };
        let invocation = agent(vec![
            ScriptedTurn::tool_calls([call("s1", "web_search", json!({"query": "rust"}))]),
            expect,
        ])
        .require_approval("web_search")
        .invoke([Message::user("search")]);
        let seen: Log<String> = Arc::default();
        let log = seen.clone();
        invocation.on(move |envelope, control| {
            log.lock().unwrap().push(label(&envelope.kind));
            match envelope.kind {
                EventKind::Tool(ToolStreamEvent::ApprovalRequested { call }) => {
                    assert_eq!(call.arguments, json!({"query": "rust"}));
                    if approve {
                        control.approve(&call.call_id).unwrap();
                    } else {
                        control.deny(&call.call_id, "no searching").unwrap();
                    }
                }
                EventKind::Tool(ToolStreamEvent::Call {
                    call,
                    external: true,
                }) => {
                    control
                        .resolve(&call.call_id, Ok(ToolOutput::text("rust-lang.org")))
                        .unwrap();
                }
                _ => {}
            }
        });
        let outcome = invocation.await;
        assert!(
            matches!(outcome, RunOutcome::Completed { .. }),
            "{outcome:?}"
        );
        let seen = seen.lock().unwrap();
        let asked = seen.iter().position(|event| event == "approval? s1");
        let answered = seen.iter().position(|event| event == "call s1 external");
        if approve {
            assert!(asked.unwrap() < answered.unwrap(), "{seen:?}");
        } else {
            assert!(asked.is_some() && answered.is_none(), "{seen:?}");
        }
    }
}

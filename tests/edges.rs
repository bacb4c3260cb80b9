//! Regression tests for the edges of the call path: one or more per defect
//! found in review (strict-mode nulls, unanswered calls in transcripts,
//! per-call cancellation, steering through `events()` + `control()`, exact
//! integers, lost answers and repeated ids, one runtime entry point for
//! runs, the text route under the depth limit, `#[external_tool(strict)]`,
//! prepared calls across runtimes) and the seed's `Arc<dyn Tool>` contract.

mod tracing_support;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::providers::{openai, ExportOptions, Strictness};
use behest::run::{ControlError, RunError, Turn};
use behest::{
    external_tool, tool, Agent, EventKind, ExternalTool, Limits, Message, RunOutcome,
    ScriptedModel, Tool, ToolCall, ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRuntime,
    ToolStreamEvent,
};
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

fn runtime(tools: Vec<Arc<dyn Tool>>) -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    registry.register_all(tools).unwrap();
    ToolRuntime::new(registry)
}

fn call(id: &str, tool: &str, arguments: impl Into<Value>) -> ToolCall {
    ToolCall::new(id, tool, arguments)
}

// The seed's contract ------------------------------------------------------

#[tokio::test]
async fn an_arc_dyn_tool_executes_as_the_seed_says() {
    let tool: Arc<dyn Tool> = Arc::new(ExternalTool::new(
        "web_search",
        "Search the web.",
        json!({"type": "object", "properties": {"query": {"type": "string"}}}),
    ));
    let outcome = tool.execute(json!({"query": "rust"})).await;
    assert!(
        matches!(outcome, Err(ToolError::NotImplemented)),
        "{outcome:?}"
    );
    assert_eq!(tool.name(), "web_search");
    // A shared tool registers like any other.
    let runtime = runtime(vec![Arc::new(tool.clone())]);
    assert!(runtime.registry().contains("web_search"));
}

// 1. Strict-mode nulls -----------------------------------------------------

/// A line of an order.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct Item {
    name: String,
    #[serde(default)]
    qty: u32,
}

/// Count the items.
#[tool(strict)]
fn count_items(items: Vec<Item>) -> String {
    let total: u32 = items.iter().map(|item| item.qty).sum();
    let names: Vec<&str> = items.iter().map(|item| item.name.as_str()).collect();
    format!("{} items, {total} in all", names.len())
}

/// Greet someone.
#[tool]
fn greet(name: String, title: Option<String>, #[arg(default)] times: u8) -> String {
    format!("{title:?} {name} x{times}")
}

#[tokio::test]
async fn nulls_for_optional_fields_mean_left_out_at_every_depth() {
    let runtime = runtime(vec![Arc::new(CountItems)]);
    let result = runtime
        .call(call(
            "c",
            "count_items",
            r#"{"items":[{"name":"a","qty":null},{"name":"b","qty":2}]}"#,
        ))
        .await;
    assert_eq!(result.outcome.unwrap().to_text(), "2 items, 2 in all");
    // A required field stays required.
    let result = runtime
        .call(call("c", "count_items", r#"{"items":[{"name":null}]}"#))
        .await;
    assert!(matches!(
        result.outcome,
        Err(ToolError::InvalidArguments { .. })
    ));
}

#[tokio::test]
async fn a_plain_tool_exported_strict_by_strictness_all_accepts_its_nulls() {
    let runtime = runtime(vec![Arc::new(Greet)]);
    let options = ExportOptions::new().strict(Strictness::All);
    let export = openai::chat::tools(runtime.registry(), &options).unwrap();
    let declared = serde_json::to_value(&export.tools).unwrap();
    assert_eq!(declared[0]["function"]["strict"], json!(true), "{declared}");
    // What the strict export makes the model send: every field, nulls for
    // the ones left out.
    for text in [
        r#"{"name":"Ada","title":null,"times":null}"#,
        r#"{"name":"Ada","title":null,"times":3}"#,
    ] {
        let result = runtime.call(call("c", "greet", text)).await;
        assert!(result.outcome.is_ok(), "{text}: {:?}", result.outcome);
    }
    let result = runtime
        .call(call("c", "greet", json!({"name": "Ada", "times": null})))
        .await;
    assert_eq!(result.outcome.unwrap().to_text(), "None Ada x0");
}

// 2. Every call in a transcript gets one result ----------------------------

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
        Turn::tool_calls([
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
    let model = ScriptedModel::new([Turn::tool_calls([
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

// 3. A cancellation token per call ------------------------------------------

static SIBLING_SAW_CANCEL: AtomicBool = AtomicBool::new(false);
static CHILD_STOPPED: AtomicBool = AtomicBool::new(false);

/// Cancel my own token to stop my children.
#[tool]
async fn self_cancelling(#[ctx] cx: ToolContext) -> &'static str {
    cx.cancellation().cancel();
    "stopped my children"
}

/// Wait a little, watching for cancellation.
#[tool]
async fn sibling(#[ctx] cx: ToolContext) -> &'static str {
    tokio::time::sleep(Duration::from_millis(50)).await;
    SIBLING_SAW_CANCEL.store(cx.is_cancelled(), Ordering::SeqCst);
    "sibling done"
}

/// Start a child task, then hang.
#[tool(timeout = "50ms")]
async fn leaves_a_child(#[ctx] cx: ToolContext) -> &'static str {
    let token = cx.cancellation().clone();
    tokio::spawn(async move {
        token.cancelled().await;
        CHILD_STOPPED.store(true, Ordering::SeqCst);
    });
    std::future::pending::<()>().await;
    "never"
}

#[tokio::test]
async fn a_tool_cancelling_its_token_stops_only_itself() {
    let registry = ToolRegistry::new()
        .with(SelfCancelling)
        .unwrap()
        .with(Sibling)
        .unwrap();
    let model = ScriptedModel::new([
        Turn::tool_calls([
            call("c1", "self_cancelling", json!({})),
            call("c2", "sibling", json!({})),
        ]),
        Turn::text("done"),
    ]);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("go")])
        .await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    assert!(!SIBLING_SAW_CANCEL.load(Ordering::SeqCst));
}

#[tokio::test]
async fn a_timed_out_call_cancels_its_token_so_children_stop() {
    let runtime = runtime(vec![Arc::new(LeavesAChild)]);
    let result = runtime.call(call("c", "leaves_a_child", json!({}))).await;
    assert!(matches!(result.outcome, Err(ToolError::Timeout { .. })));
    for _ in 0..100 {
        if CHILD_STOPPED.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("the child task outlived its timed-out call");
}

// 4. events() + control() ---------------------------------------------------

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
        Turn::tool_calls([
            call("s1", "web_search", json!({"query": "rust"})),
            call("r1", "remove", json!({"path": "/tmp/x"})),
        ]),
        Turn::text("done")
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
    let model = ScriptedModel::new([Turn::tool_calls([call(
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
        Turn::tool_calls([call("s1", "web_search", json!({"query": "x"}))]),
        Turn::text("gave up").expect_error("s1", "did not finish"),
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

// 7. Integers beyond 2^53 -----------------------------------------------------

/// Look an id up.
#[tool]
fn lookup(id: u64, signed: Option<i64>) -> String {
    format!("{id} {signed:?}")
}

#[tokio::test]
async fn integers_are_exact_or_refused() {
    let runtime = runtime(vec![Arc::new(Lookup)]);
    for arguments in [
        json!(r#"{"id": 12345678901234567.0}"#),
        json!(r#"{"id": 9007199254740993.5}"#),
        json!(r#"{"id": 9007199254740993.0}"#),
        json!(r#"{"id": 1, "signed": -9223372036854775809}"#),
        json!({"id": 12_345_678_901_234_567.0}),
    ] {
        let result = runtime.call(call("c", "lookup", arguments.clone())).await;
        assert!(
            matches!(result.outcome, Err(ToolError::InvalidArguments { .. })),
            "{arguments}: {:?}",
            result.outcome
        );
    }
    for (arguments, expected) in [
        (
            json!(r#"{"id": 12345678901234567}"#),
            "12345678901234567 None",
        ),
        (json!(r#"{"id": 7.0, "signed": -2.0}"#), "7 Some(-2)"),
        (
            json!(r#"{"id": 9007199254740991.0}"#),
            "9007199254740991 None",
        ),
        (
            json!(r#"{"id": 1, "signed": -9223372036854775808}"#),
            "1 Some(-9223372036854775808)",
        ),
    ] {
        let result = runtime.call(call("c", "lookup", arguments.clone())).await;
        assert_eq!(result.outcome.unwrap().to_text(), expected, "{arguments}");
    }
}

// 8. Answers are never lost; ids are unique per run ---------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resolve_is_ok_only_when_the_run_uses_the_answer() {
    // Answers race the deadline: whatever `resolve` says must be what the
    // model reads.
    for round in 0..40 {
        let registry = ToolRegistry::new()
            .with(WebSearch::external_tool())
            .unwrap();
        let model = ScriptedModel::new([
            Turn::tool_calls([call("s1", "web_search", json!({"query": "x"}))]),
            Turn::text("end"),
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
        Turn::tool_calls([
            call("same", "web_search", json!({"query": "one"})),
            call("same", "web_search", json!({"query": "two"})),
        ]),
        Turn::tool_calls([call("same", "add", json!({"a": 1, "b": 1}))]),
        Turn::text("done"),
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

// 9. One runtime entry point for the calls of a run -------------------------

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
        Turn::tool_calls([call("b1", "big", json!({"size": 1000}))]),
        Turn::text("done").expect_error("b1", "over the limit of 100 bytes"),
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
        Turn::tool_calls([call("traced-1", "add", r#"{"a": 1, "b": 2}"#)]),
        Turn::text("3").expect_ok("traced-1", "3"),
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

// 10. The text route under the depth limit --------------------------------------

/// Tag things.
#[tool]
fn tag(tags: Vec<String>) -> usize {
    tags.len()
}

#[tokio::test]
async fn text_and_value_agree_under_every_depth_limit() {
    for depth in 1..=3 {
        let mut registry = ToolRegistry::new();
        registry.register_tool(Arc::new(Tag)).unwrap();
        let runtime = ToolRuntime::builder(registry)
            .max_argument_depth(depth)
            .build();
        let as_text = runtime.call(call("c", "tag", r#"{"tags":["a"]}"#)).await;
        let as_value = runtime.call(call("c", "tag", json!({"tags": ["a"]}))).await;
        assert_eq!(
            as_text
                .outcome
                .as_ref()
                .map(ToolOutput::to_text)
                .map_err(ToString::to_string),
            as_value
                .outcome
                .as_ref()
                .map(ToolOutput::to_text)
                .map_err(ToString::to_string),
            "depth {depth}"
        );
        assert_eq!(as_text.is_error(), depth < 2, "depth {depth}");
    }
}

// 11. Every accepted option takes effect ------------------------------------------

/// Fetch a page.
#[external_tool(strict)]
struct Fetch {
    url: String,
    /// Bytes at most.
    max_bytes: Option<u32>,
}

#[test]
fn external_tool_strict_is_exported_strict() {
    assert!(Fetch::external_tool().strict());
    let registry = ToolRegistry::new().with(Fetch::external_tool()).unwrap();
    let export = openai::chat::tools(&registry, &ExportOptions::default()).unwrap();
    let declared = serde_json::to_value(&export.tools).unwrap();
    assert_eq!(declared[0]["function"]["strict"], json!(true), "{declared}");
}

#[test]
fn from_call_with_uses_the_runtime_s_limits() {
    let text = format!(r#"{{"url": "{}"}}"#, "x".repeat(2000));
    let call = call("c", "fetch", text.as_str());
    let limits = Limits::default();
    assert!(Fetch::from_call_with(&call, &limits).is_ok());
    let mut small = Limits::default();
    small.max_argument_bytes = 100;
    assert!(matches!(
        Fetch::from_call_with(&call, &small),
        Err(ToolError::LimitExceeded { .. })
    ));
    // Strict nulls are "left out" for handlers too.
    let parsed = Fetch::from_call(&call_null()).unwrap();
    assert_eq!(parsed.max_bytes, None);
    assert_eq!(parsed.url, "u");
}

fn call_null() -> ToolCall {
    call("c", "fetch", r#"{"url": "u", "max_bytes": null}"#)
}

// PreparedCall belongs to its runtime ----------------------------------------------

#[tokio::test]
async fn a_prepared_call_given_to_another_runtime_is_checked_again() {
    let first = runtime(vec![Arc::new(Add), Arc::new(Tag)]);
    let second = runtime(vec![Arc::new(Tag), Arc::new(Add)]);
    let prepared = first.prepare("add", json!({"a": 2, "b": 3})).unwrap();
    let output = second
        .execute_prepared(prepared, "c", Default::default())
        .await
        .unwrap();
    assert_eq!(output.to_text(), "5");
    let elsewhere = runtime(vec![Arc::new(Tag)]);
    let prepared = first.prepare("add", json!({"a": 2, "b": 3})).unwrap();
    let error = elsewhere
        .execute_prepared(prepared, "c", Default::default())
        .await
        .unwrap_err();
    assert!(matches!(error, ToolError::NotFound { .. }), "{error}");
}

// 5. MCP structuredContent validates against the listed outputSchema ------------

/// The weather.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
struct Weather {
    celsius: f64,
}

/// What a lookup found.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Found {
    City { name: String },
    Nothing,
}

/// A value or a note.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
enum Either {
    Note(String),
    Weather(Weather),
}

/// Maybe the weather.
#[tool]
fn maybe_weather(known: bool) -> Option<Weather> {
    known.then_some(Weather { celsius: 21.5 })
}

/// Find a city.
#[tool]
fn find(name: Option<String>) -> Found {
    match name {
        Some(name) => Found::City { name },
        None => Found::Nothing,
    }
}

/// Count to n.
#[tool]
fn count_to(n: u32) -> Vec<u32> {
    (1..=n).collect()
}

/// A note or the weather.
#[tool]
fn note_or_weather(note: bool) -> Either {
    if note {
        Either::Note("sunny".into())
    } else {
        Either::Weather(Weather { celsius: 3.0 })
    }
}

/// The current weather.
#[tool]
fn current_weather() -> Weather {
    Weather { celsius: 10.0 }
}

#[tokio::test]
async fn every_structured_result_validates_against_the_listed_output_schema() {
    use behest::providers::mcp;
    use behest::validation::ArgumentValidator;

    let runtime = runtime(vec![
        Arc::new(MaybeWeather),
        Arc::new(Find),
        Arc::new(CountTo),
        Arc::new(NoteOrWeather),
        Arc::new(CurrentWeather),
    ]);
    let cases = [
        ("maybe_weather", json!({"known": true})),
        ("maybe_weather", json!({"known": false})),
        ("find", json!({"name": "Oslo"})),
        ("find", json!({})),
        ("count_to", json!({"n": 3})),
        ("note_or_weather", json!({"note": true})),
        ("note_or_weather", json!({"note": false})),
        ("current_weather", json!({})),
    ];
    for (tool, arguments) in cases {
        let spec = runtime.registry().spec(tool).unwrap();
        let listed = mcp::tool(spec);
        let output_schema = &listed["outputSchema"];
        assert_eq!(output_schema["type"], "object", "{tool}: {output_schema}");
        let validator = ArgumentValidator::compile(output_schema).unwrap();
        let result = runtime.call(call("c", tool, arguments.clone())).await;
        assert!(result.outcome.is_ok(), "{tool}: {:?}", result.outcome);
        let formatted = mcp::result(&result);
        let structured = &formatted["structuredContent"];
        assert!(structured.is_object(), "{tool} {arguments}: {formatted}");
        assert!(
            validator.is_valid(structured),
            "{tool} {arguments}: {structured} does not validate against {output_schema}"
        );
    }
}

// 14. `#[cfg]` parameters and `Self` in `#[tools]` -------------------------------

/// Describe a file.
#[tool]
fn describe(
    path: String,
    #[cfg(not(test))] never: u32,
    #[cfg(test)] always: Option<bool>,
) -> String {
    format!("{path} {always:?}")
}

#[tokio::test]
async fn a_configured_out_parameter_is_not_an_argument() {
    let spec = Describe.spec();
    let properties = spec.parameters["properties"].as_object().unwrap();
    let names: Vec<&String> = properties.keys().collect();
    assert_eq!(names, ["always", "path"]);
    let runtime = runtime(vec![Arc::new(Describe)]);
    let result = runtime
        .call(call("c", "describe", json!({"path": "a", "always": true})))
        .await;
    assert_eq!(result.outcome.unwrap().to_text(), "a Some(true)");
    let result = runtime
        .call(call("c", "describe", json!({"path": "a", "never": 1})))
        .await;
    assert!(result.is_error());
}

/// A point.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i64,
    y: i64,
}

#[behest::tools]
impl Point {
    /// Move a point.
    #[behest::tool]
    fn shift(&self, by: Self) -> Self {
        Point {
            x: self.x + by.x,
            y: self.y + by.y,
        }
    }
}

#[tokio::test]
async fn self_in_a_tools_impl_is_the_impl_type() {
    let tools = Arc::new(Point { x: 1, y: 2 }).tools();
    let spec = tools[0].spec();
    assert_eq!(spec.name, "shift");
    let output = spec.output_schema.expect("`-> Self` has an output schema");
    assert!(output.to_string().contains("\"x\""), "{output}");
    assert!(spec.parameters.to_string().contains("\"by\""));
    let runtime = runtime(tools);
    let result = runtime
        .call(call("c", "shift", json!({"by": {"x": 10, "y": 20}})))
        .await;
    assert_eq!(
        result.outcome.unwrap().structured,
        Some(json!({"x": 11, "y": 22}))
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
    let model = ScriptedModel::new([Turn::reply(reply), Turn::text("done")]);
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
        Turn::tool_calls([call("f1", "fetch", text.as_str())]),
        Turn::text("done").expect_ok("f1", "1500000"),
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
        Turn::tool_calls([call("f1", "final_answer", r#"{"ok": "yes"}"#)]),
        Turn::tool_calls([call(
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
        Turn::tool_calls([call("f1", "final_answer", long.as_str())]),
        Turn::tool_calls([call(
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

    let model = ScriptedModel::new([Turn::text(long.as_str())]).with_structured_output(true);
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
    let model = ScriptedModel::new([Turn::text(deep.as_str())]).with_structured_output(true);
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
    let wrong = |id: &str| Turn::tool_calls([call(id, "final_answer", r#"{"ok": "yes"}"#)]);
    // Default: one correction, then the run fails; the refused calls and a
    // call beside the last one are all answered in the transcript.
    let model = ScriptedModel::new([
        wrong("f1"),
        Turn::tool_calls([
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
        Turn::tool_calls([call(
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
    let model = ScriptedModel::new([Turn::text("It is fine."), Turn::text("Really, it is.")]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    let error = agent
        .output::<Verdict>([Message::user("ok?")])
        .await
        .unwrap_err();
    assert!(matches!(error, RunError::Output { .. }), "{error}");
    // A JSON text answer of the right shape is taken as it is.
    let model = ScriptedModel::new([Turn::text(r#"{"ok": false, "reason": "no"}"#)]);
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    let verdict: Verdict = agent.output([Message::user("ok?")]).await.unwrap();
    assert!(!verdict.ok);
}

#[tokio::test]
async fn a_model_with_structured_output_gives_the_answer_as_its_text() {
    // No `final_answer` tool is offered: the model answers in the shape.
    let model = ScriptedModel::new([
        Turn::tool_calls([call("a1", "add", json!({"a": 1, "b": 2}))]).expect_tools(["add"]),
        Turn::text(r#"{"ok": "yes"}"#).expect_ok("a1", "3"),
        Turn::text(r#"{"ok": true, "reason": "1 + 2 = 3"}"#),
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
        ScriptedModel::new([Turn::text(r#"{"ok": true, "reason": "r"}"#)])
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
    let model = ScriptedModel::new([Turn::text("fine"), Turn::text(r#"{"ok": 1}"#)])
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
    let model = ScriptedModel::new([Turn::text("fine")]).with_structured_output(true);
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
    let model = ScriptedModel::new([Turn::tool_calls([
        call("a1", "add", json!({"a": 1, "b": 2})),
        call("f1", "final_answer", json!({"result": ["x", "y"]})),
    ])]);
    let registry = ToolRegistry::new().with(Add).unwrap();
    let agent = Agent::new(model, ToolRuntime::new(registry)).with_output::<Vec<String>>();
    let outcome = agent.invoke([Message::user("list")]).await;
    assert_eq!(outcome.output::<Vec<String>>().unwrap(), ["x", "y"]);
    every_call_answered_once(outcome.transcript());
}

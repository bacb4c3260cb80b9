//! The pipeline's guarantees: panic isolation, timeouts, cancellation,
//! progress, shared state, output limits, ordering and tracing.

use crate::support;
use crate::tracing_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::{
    CallOptions, CancellationToken, ExternalTool, Progress, ProgressSink, Tool, ToolCall,
    ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
};
use serde_json::{json, Value};
use support::{Add, Hangs, PanicKind, Panics};

fn registry_with(tools: Vec<Arc<dyn Tool>>) -> ToolRegistry {
    let mut registry = ToolRegistry::new();
    for tool in tools {
        registry.register_tool(tool).unwrap();
    }
    registry
}

#[tokio::test]
async fn every_kind_of_panic_becomes_panicked_and_the_runtime_keeps_serving() {
    support::quiet_deliberate_panics();
    let kinds = [
        ("before", PanicKind::BeforeAwait),
        ("after", PanicKind::AfterAwait),
        ("odd", PanicKind::OddPayload),
        ("building", PanicKind::WhileBuilding),
    ];
    let tools: Vec<Arc<dyn Tool>> = kinds
        .iter()
        .map(|&(name, kind)| {
            Arc::new(Panics {
                name,
                kind,
                reveal: false,
            }) as Arc<dyn Tool>
        })
        .chain([Arc::new(Add) as Arc<dyn Tool>])
        .collect();
    let runtime = ToolRuntime::new(registry_with(tools));
    for (name, _) in kinds {
        let result = runtime.call(ToolCall::new(name, name, json!({}))).await;
        match result.outcome {
            Err(ToolError::Panicked {
                payload,
                reveal: false,
            }) => match name {
                "odd" => assert_eq!(payload, "a panic with a payload that is not a string"),
                "after" => assert_eq!(payload, "deliberate panic after await: 42"),
                _ => assert!(payload.starts_with("deliberate panic"), "{payload}"),
            },
            other => panic!("{name}: expected Panicked, got {other:?}"),
        }
        let next = runtime
            .call(ToolCall::new("next", "add", json!({"a": 1, "b": 1})))
            .await;
        assert_eq!(next.outcome.unwrap(), ToolOutput::json(json!({"sum": 2})));
    }
}

#[tokio::test]
async fn a_tool_may_reveal_its_panics() {
    support::quiet_deliberate_panics();
    let tool = Panics {
        name: "open",
        kind: PanicKind::AfterAwait,
        reveal: true,
    };
    let runtime = ToolRuntime::new(registry_with(vec![Arc::new(tool)]));
    let error = runtime
        .call(ToolCall::new("c", "open", json!({})))
        .await
        .outcome
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the tool failed with an internal error: deliberate panic after await: 42"
    );
}

#[tokio::test(start_paused = true)]
async fn timeouts_come_from_the_tool_the_builder_or_the_default() {
    let own = Arc::new(Hangs {
        timeout: Some(Duration::from_millis(250)),
    });
    let runtime = ToolRuntime::new(registry_with(vec![own.clone()]));
    let error = runtime
        .call(ToolCall::new("c", "hangs", json!({})))
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { after } if after == Duration::from_millis(250)));
    assert_eq!(
        error.to_string(),
        "the tool did not finish within 250ms and was stopped"
    );

    let runtime = ToolRuntime::builder(registry_with(vec![own]))
        .tool_timeout("hangs", Duration::from_secs(3))
        .build();
    let error = runtime
        .call(ToolCall::new("c", "hangs", json!({})))
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { after } if after == Duration::from_secs(3)));

    let runtime = ToolRuntime::new(registry_with(vec![Arc::new(Hangs { timeout: None })]));
    let error = runtime
        .call(ToolCall::new("c", "hangs", json!({})))
        .await
        .outcome
        .unwrap_err();
    assert!(matches!(error, ToolError::Timeout { after } if after == Duration::from_secs(60)));
}

/// Waits for cancellation and records that it saw it.
struct Patient {
    saw_cancel: Arc<Mutex<bool>>,
}

impl Tool for Patient {
    fn name(&self) -> &str {
        "patient"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("patient", "Waits.", json!({"type": "object"}))
    }
    async fn execute(&self, _arguments: Value) -> ToolResult<ToolOutput> {
        Err(ToolError::execution("needs a context"))
    }
    async fn execute_with_context(
        &self,
        _arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        tokio::select! {
            () = context.cancellation().cancelled() => {
                *self.saw_cancel.lock().unwrap() = true;
                Err(ToolError::Cancelled)
            }
            () = tokio::time::sleep(Duration::from_secs(30)) => Ok(ToolOutput::text("done")),
        }
    }
}

#[tokio::test]
async fn cancellation_stops_a_running_call() {
    let saw_cancel = Arc::new(Mutex::new(false));
    let runtime = ToolRuntime::new(registry_with(vec![Arc::new(Patient {
        saw_cancel: saw_cancel.clone(),
    })]));
    let token = CancellationToken::new();
    let options = CallOptions::new().cancellation(token.clone());
    let call = runtime.call_with(ToolCall::new("c", "patient", json!({})), options);
    let canceller = async {
        tokio::time::sleep(Duration::from_millis(20)).await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(call, canceller);
    assert!(
        matches!(result.outcome, Err(ToolError::Cancelled)),
        "{:?}",
        result.outcome
    );
    assert_eq!(result.call_id, "c");
    assert!(
        *saw_cancel.lock().unwrap(),
        "the tool saw its token and wound down"
    );
}

#[tokio::test]
async fn a_cancelled_token_stops_a_call_before_it_starts() {
    let runtime = ToolRuntime::new(registry_with(vec![Arc::new(Add)]));
    let token = CancellationToken::new();
    token.cancel();
    let options = CallOptions::new().cancellation(token);
    let result = runtime
        .call_with(ToolCall::new("c", "add", json!({"a": 1, "b": 2})), options)
        .await;
    assert!(matches!(result.outcome, Err(ToolError::Cancelled)));
}

/// Reports three steps of progress, then reads shared state.
struct Steps;

struct Greeting(String);

impl Tool for Steps {
    fn name(&self) -> &str {
        "steps"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("steps", "Works in steps.", json!({"type": "object"}))
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        self.execute_with_context(arguments, ToolContext::new("direct"))
            .await
    }
    async fn execute_with_context(
        &self,
        _arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        for step in 1..=3 {
            context.report_progress(
                Progress::new(f64::from(step), Some(3.0)).with_message(format!("step {step}")),
            );
            tokio::task::yield_now().await;
        }
        let greeting = context.require_state::<Greeting>()?;
        Ok(ToolOutput::text(format!(
            "{} from {}",
            greeting.0,
            context.call_id()
        )))
    }
}

#[tokio::test]
async fn progress_reports_arrive_in_order_with_the_call_id() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let seen = seen.clone();
        ProgressSink::new(move |call_id, progress| {
            seen.lock()
                .unwrap()
                .push((call_id.to_owned(), progress.progress, progress.message))
        })
    };
    let runtime = ToolRuntime::builder(registry_with(vec![Arc::new(Steps)]))
        .state(Greeting("hello".into()))
        .build();
    let options = CallOptions::new().progress(sink);
    let result = runtime
        .call_with(ToolCall::new("call_7", "steps", json!({})), options)
        .await;
    assert_eq!(
        result.outcome.unwrap(),
        ToolOutput::text("hello from call_7")
    );
    let seen = seen.lock().unwrap();
    let steps: Vec<(String, f64, Option<String>)> = (1..=3)
        .map(|s| ("call_7".to_owned(), f64::from(s), Some(format!("step {s}"))))
        .collect();
    assert_eq!(*seen, steps);
}

#[tokio::test]
async fn missing_shared_state_is_a_clear_error_not_a_panic() {
    let runtime = ToolRuntime::new(registry_with(vec![Arc::new(Steps)]));
    let error = runtime
        .call(ToolCall::new("c", "steps", json!({})))
        .await
        .outcome
        .unwrap_err();
    assert!(
        error.to_string().contains("not configured correctly"),
        "{error}"
    );
    let source = std::error::Error::source(&error).expect("the cause is kept for logs");
    assert!(source.to_string().contains("Greeting"), "{source}");
}

/// Returns as much text as asked.
struct Verbose;

impl Tool for Verbose {
    fn name(&self) -> &str {
        "verbose"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "verbose",
            "Talks a lot.",
            json!({"type": "object", "properties": {"bytes": {"type": "integer", "minimum": 0}}, "required": ["bytes"]}),
        )
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let bytes = arguments["bytes"].as_u64().unwrap_or_default() as usize;
        Ok(ToolOutput::text("x".repeat(bytes)))
    }
}

#[tokio::test]
async fn output_over_the_limit_is_refused() {
    let runtime = ToolRuntime::builder(registry_with(vec![Arc::new(Verbose)]))
        .max_output_bytes(1000)
        .build();
    let ok = runtime
        .call(ToolCall::new("a", "verbose", json!({"bytes": 1000})))
        .await;
    assert_eq!(ok.outcome.unwrap().text.unwrap().len(), 1000);
    let error = runtime
        .call(ToolCall::new("b", "verbose", json!({"bytes": 1001})))
        .await
        .outcome
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "the tool's output is 1001 bytes, over the limit of 1000 bytes"
    );
}

#[tokio::test]
async fn external_tools_report_not_implemented() {
    let search = ExternalTool::new(
        "web_search",
        "Search the web.",
        json!({"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    );
    let mut registry = ToolRegistry::new();
    registry.register("web_search", Arc::new(search)).unwrap();
    let runtime = ToolRuntime::new(registry);
    let result = runtime
        .call(ToolCall::new("c", "web_search", json!({"query": "rust"})))
        .await;
    assert!(matches!(result.outcome, Err(ToolError::NotImplemented)));
    let result = runtime
        .call(ToolCall::new("c", "web_search", json!({"q": "rust"})))
        .await;
    assert!(
        matches!(result.outcome, Err(ToolError::InvalidArguments { .. })),
        "validated first"
    );
}

#[tokio::test]
async fn a_batch_returns_results_in_call_order() {
    let runtime = ToolRuntime::new(registry_with(vec![Arc::new(Add)]));
    let calls = (0..50).map(|i| ToolCall::new(format!("c{i}"), "add", json!({"a": i, "b": i})));
    let results = runtime.call_batch(calls).await;
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.call_id, format!("c{i}"));
        assert_eq!(
            result.outcome.as_ref().unwrap(),
            &ToolOutput::json(json!({"sum": 2 * i}))
        );
    }
}

#[tokio::test]
async fn tools_work_through_arc_dyn_tool() {
    let tool: Arc<dyn Tool> = Arc::new(Add);
    let output = tool
        .invoke(json!({"a": 2, "b": 3}), ToolContext::new("direct"))
        .await;
    assert_eq!(output.unwrap(), ToolOutput::json(json!({"sum": 5})));
    assert_eq!(tool.name(), "add");
}

mod spans {
    use super::*;
    use std::collections::HashMap;
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing_subscriber::layer::Context;
    use tracing_subscriber::Layer;

    /// Collects the fields of every `tool_call` span: open ones by id, and
    /// closed ones apart (span ids are reused once a span closes).
    #[derive(Clone, Default)]
    struct Spans(Arc<Mutex<SpanFields>>);

    #[derive(Default)]
    struct SpanFields {
        open: HashMap<u64, HashMap<String, String>>,
        closed: Vec<HashMap<String, String>>,
    }

    struct Fields<'a>(&'a mut HashMap<String, String>);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            self.0.insert(field.name().to_owned(), format!("{value:?}"));
        }
        fn record_str(&mut self, field: &Field, value: &str) {
            self.0.insert(field.name().to_owned(), value.to_owned());
        }
    }

    impl<S: tracing::Subscriber> Layer<S> for Spans {
        fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, _ctx: Context<'_, S>) {
            if attrs.metadata().name() == "tool_call" {
                let mut fields = HashMap::new();
                attrs.record(&mut Fields(&mut fields));
                self.0.lock().unwrap().open.insert(id.into_u64(), fields);
            }
        }
        fn on_record(&self, id: &Id, values: &Record<'_>, _ctx: Context<'_, S>) {
            if let Some(fields) = self.0.lock().unwrap().open.get_mut(&id.into_u64()) {
                values.record(&mut Fields(fields));
            }
        }
        fn on_close(&self, id: Id, _ctx: Context<'_, S>) {
            let mut spans = self.0.lock().unwrap();
            if let Some(fields) = spans.open.remove(&id.into_u64()) {
                spans.closed.push(fields);
            }
        }
    }

    #[tokio::test]
    async fn each_call_has_one_span_with_tool_call_id_outcome_and_duration() {
        // Other tests' spans are recorded too; the call ids below are this
        // test's.
        static SPANS: std::sync::OnceLock<Spans> = std::sync::OnceLock::new();
        let spans = tracing_support::installed(&SPANS, Spans::default);
        let runtime = ToolRuntime::new(registry_with(vec![Arc::new(Add), Arc::new(Double)]));
        runtime
            .call(ToolCall::new("ok_1", "add", json!({"a": 1, "b": 2})))
            .await;
        // A `#[tool]` on the text route, which ends on its first poll.
        assert!(Double.__text_route().is_some());
        runtime
            .call(ToolCall::new("typed_1", "double", r#"{"n": 2}"#))
            .await;
        runtime
            .call(ToolCall::new("bad_1", "add", json!({"a": 1})))
            .await;
        let spans = spans.0.lock().unwrap();
        let mut seen: Vec<(String, String, String, bool)> = spans
            .closed
            .iter()
            .filter(|f| {
                f.get("call_id")
                    .is_some_and(|id| id == "ok_1" || id == "bad_1" || id == "typed_1")
            })
            .map(|f| {
                (
                    f["call_id"].clone(),
                    f["tool"].clone(),
                    f["outcome"].clone(),
                    f.get("duration_us").is_some(),
                )
            })
            .collect();
        seen.sort();
        assert_eq!(
            seen,
            vec![
                (
                    "bad_1".into(),
                    "add".into(),
                    "invalid_arguments".into(),
                    true
                ),
                ("ok_1".into(), "add".into(), "ok".into(), true),
                ("typed_1".into(), "double".into(), "ok".into(), true),
            ]
        );
    }

    /// Doubles a number.
    #[behest::tool]
    fn double(n: i64) -> i64 {
        n * 2
    }
}

/// Cancels its call's token (kept in the runtime's state), then finishes
/// as if nothing happened: what a tool does when its call is cancelled from
/// another thread while it runs.
#[behest::tool]
async fn cancel_and_finish(#[ctx] context: behest::ToolContext) -> String {
    if let Some(token) = context.state::<CancellationToken>() {
        token.cancel();
    }
    "finished anyway".to_owned()
}

#[tokio::test]
async fn a_call_cancelled_while_its_tool_ran_answers_cancelled() {
    let token = CancellationToken::new();
    let runtime = ToolRuntime::builder(ToolRegistry::new().with(CancelAndFinish).unwrap())
        .state(token.clone())
        .build();
    let options = CallOptions::new().cancellation(token);
    let result = runtime
        .call_with(ToolCall::new("c1", "cancel_and_finish", json!({})), options)
        .await;
    assert!(
        matches!(result.outcome, Err(ToolError::Cancelled)),
        "{result:?}"
    );
    // A call without the token just finishes.
    let plain = runtime
        .call(ToolCall::new("c2", "cancel_and_finish", json!({})))
        .await;
    assert_eq!(plain.outcome.unwrap().to_text(), "finished anyway");
}

/// Cancels its call's token (kept in the runtime's state), then panics.
#[behest::tool]
async fn cancel_and_panic(#[ctx] context: behest::ToolContext) -> String {
    if let Some(token) = context.state::<CancellationToken>() {
        token.cancel();
    }
    panic!("deliberate: gave up")
}

/// A tool that panics on its first poll after its call was cancelled
/// answers `Cancelled`, as one that finishes does, whether its arguments
/// came as text (the text route) or as an object (the value route); a call
/// that was not cancelled answers the panic.
#[tokio::test]
async fn a_call_cancelled_while_its_tool_panicked_answers_cancelled() {
    support::quiet_deliberate_panics();
    // Both tools take the typed routes, not the checked one.
    assert!(CancelAndPanic.__text_route().is_some());
    assert!(CancelAndFinish.__text_route().is_some());
    let registry = ToolRegistry::new()
        .with(CancelAndPanic)
        .unwrap()
        .with(CancelAndFinish)
        .unwrap();
    for arguments in [json!("{}"), json!({})] {
        for tool in ["cancel_and_panic", "cancel_and_finish"] {
            let token = CancellationToken::new();
            let runtime = ToolRuntime::builder(registry.clone())
                .state(token.clone())
                .build();
            let options = CallOptions::new().cancellation(token);
            let result = runtime
                .call_with(ToolCall::new("c1", tool, arguments.clone()), options)
                .await;
            assert!(
                matches!(result.outcome, Err(ToolError::Cancelled)),
                "{tool} with {arguments}: {result:?}"
            );
        }
        let runtime = ToolRuntime::builder(registry.clone())
            .state(CancellationToken::new())
            .build();
        let result = runtime
            .call(ToolCall::new("c2", "cancel_and_panic", arguments.clone()))
            .await;
        assert!(
            matches!(&result.outcome, Err(ToolError::Panicked { payload, .. }) if payload.contains("gave up")),
            "{arguments}: {result:?}"
        );
    }
}

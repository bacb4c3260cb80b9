//! Cases of the call path, one or more per defect found in review: the
//! `Arc<dyn Tool>` contract, strict-mode nulls, exact integers, a
//! cancellation token per call, the typed routes under the depth limit,
//! options that take effect, prepared calls across runtimes, structured
//! results against the listed output schema, `#[cfg]` parameters and
//! `Self` in `#[tools]`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use behest::providers::{openai, ExportOptions, Strictness};
use behest::run::ScriptedTurn;
use behest::{
    external_tool, tool, Agent, ExternalTool, Limits, Message, ScriptedModel, Tool, ToolCall,
    ToolContext, ToolError, ToolOutput, ToolRegistry, ToolRuntime,
};
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

// Strict-mode nulls -----------------------------------------------------

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

// A cancellation token per call ------------------------------------------

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
        ScriptedTurn::tool_calls([
            call("c1", "self_cancelling", json!({})),
            call("c2", "sibling", json!({})),
        ]),
        ScriptedTurn::text("done"),
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

// Integers beyond 2^53 -----------------------------------------------------

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

// The text route under the depth limit --------------------------------------

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

// Every accepted option takes effect ------------------------------------------

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

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
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

// MCP structuredContent validates against the listed outputSchema ------------

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

// `#[cfg]` parameters and `Self` in `#[tools]` -------------------------------

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

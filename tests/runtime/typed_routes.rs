//! The typed routes: a `#[tool]` reads the model's text with its own types,
//! plain ones straight and the others held to their schemas as they are
//! read, and skips building and validating the arguments' `Value`. It
//! must never accept what the schema refuses, and every call must end
//! exactly as it would on the checked route. The same holds for its twin,
//! the value route, which reads arguments that arrive parsed (as MCP sends
//! them) with the tool's types.

use crate::support;

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use behest::tool::PlainArguments;
use behest::validation::ArgumentValidator;
use behest::{
    tool, CallOptions, CancellationToken, Limits, Tool, ToolCall, ToolContext, ToolError,
    ToolRegistry, ToolRuntime,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// Reports every argument it gets, so that outputs can be compared.
#[tool]
async fn plain(
    count: i64,
    label: String,
    verbose: Option<bool>,
    tags: Vec<String>,
    ratio: Option<f64>,
    small: u8,
) -> String {
    format!("{count} {label:?} {verbose:?} {tags:?} {ratio:?} {small}")
}

/// Takes whole numbers only: its text route does not look for negative
/// zeros (which only a float argument reads differently), so its types
/// must end such calls as the checked route does.
#[tool]
fn whole(count: i64, small: u8, many: Vec<i32>, maybe: Option<u64>) -> String {
    format!("{count} {small} {many:?} {maybe:?}")
}

/// Takes nothing.
#[tool]
fn nothing() -> &'static str {
    "done"
}

/// Has a default: `null` is "left out" on every route.
#[tool]
fn defaulted(#[arg(default = 3)] count: u32) -> u32 {
    count
}

/// Takes unknown arguments.
#[tool(allow_unknown_arguments)]
fn lenient(count: u32) -> u32 {
    count
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i32,
    y: i32,
}

/// Takes a struct, whose schema may say more than its type.
#[tool]
fn structured(point: Point) -> i32 {
    point.x + point.y
}

/// Takes any JSON, which must stay under the depth limit.
#[tool]
fn any_json(value: Value) -> Value {
    value
}

/// Takes a map.
#[tool]
fn map(entries: HashMap<String, i64>) -> usize {
    entries.len()
}

/// Where to: a struct of the user's, lenient about unknown fields as
/// serde's derive is (and so its schema).
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)] // read through `Debug`
struct Address {
    street: String,
    zip: Option<u32>,
    #[serde(default)]
    floors: Vec<f64>,
    /// `null` reads as `None`, and "left out" as ten.
    #[serde(default = "ten")]
    limit: Option<u32>,
}

fn ten() -> Option<u32> {
    Some(10)
}

/// How fast: unit variants, which serde also reads from `{"slow": null}`
/// where the schema wants the string.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Speed {
    Slow,
    Fast,
}

/// How loud: unit variants with docs, which schemars writes as a `oneOf`
/// of constants.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Level {
    /// Quiet.
    #[default]
    Low,
    /// Loud.
    High,
}

/// A shape: an internally tagged enum.
#[derive(Debug, Default, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind")]
enum Shape {
    #[default]
    Dot,
    Circle {
        r: f64,
    },
    Square {
        #[schemars(range(min = 1))]
        side: u8,
    },
}

/// Mixed arguments: plain ones beside a struct, an enum, a defaulted
/// tagged enum and any JSON, which are checked as they are read.
#[tool]
#[allow(clippy::too_many_arguments)]
fn mixed(
    count: u8,
    address: Address,
    speed: Option<Speed>,
    #[arg(default)] shape: Shape,
    #[arg(default)] level: Level,
    #[arg(default = 2)] copies: u32,
    extra: Option<Value>,
    tags: Vec<String>,
) -> String {
    format!("{count} {address:?} {speed:?} {shape:?} {level:?} {copies} {extra:?} {tags:?}")
}

static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// Waits a little, counting the calls in flight.
#[tool]
async fn counted(millis: u64) -> u64 {
    let now = IN_FLIGHT.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(millis)).await;
    IN_FLIGHT.fetch_sub(1, Ordering::SeqCst);
    millis
}

/// Panics when asked to.
#[tool(timeout = "50ms")]
async fn fragile(panic: bool, hang: bool) -> &'static str {
    if panic {
        panic!("deliberate: secret");
    }
    if hang {
        std::future::pending::<()>().await;
    }
    "fine"
}

/// Answers `size` bytes, after a yield when asked.
#[tool]
async fn sized(size: u32, yielding: bool) -> String {
    if yielding {
        tokio::task::yield_now().await;
    }
    "x".repeat(size as usize)
}

/// Panics once it has waited.
#[tool]
async fn late_panic() -> &'static str {
    tokio::task::yield_now().await;
    panic!("deliberate: late");
}

/// The token of the last call of `waits`.
static WAITING: std::sync::Mutex<Option<CancellationToken>> = std::sync::Mutex::new(None);

/// Keeps its token where the test sees it, and waits for ever.
#[tool]
async fn waits(#[ctx] cx: ToolContext) -> &'static str {
    *WAITING.lock().unwrap() = Some(cx.cancellation().clone());
    std::future::pending::<()>().await;
    "never"
}

/// Every way a call on the text route ends after it started: finished on
/// its first poll or later, waiting for a place, panicking once it waited,
/// dropped while it waits. The output limit holds on each; a dropped call
/// cancels its token and gives its place back.
#[tokio::test]
async fn a_text_route_call_ends_under_its_limits_however_it_ends() {
    support::quiet_deliberate_panics();
    let registry = ToolRegistry::new()
        .with(Sized)
        .unwrap()
        .with(LatePanic)
        .unwrap()
        .with(Waits)
        .unwrap();
    assert!(Sized.__text_route().is_some() && Waits.__text_route().is_some());
    let runtime = ToolRuntime::builder(registry)
        .max_output_bytes(100)
        .max_concurrent_calls(1)
        .build();
    let sized = |size: u32, yielding: bool| {
        let text = format!(r#"{{"size": {size}, "yielding": {yielding}}}"#);
        runtime.call(ToolCall::new("s", "sized", text))
    };
    for yielding in [false, true] {
        assert_eq!(
            sized(10, yielding).await.outcome.unwrap().to_text(),
            "x".repeat(10)
        );
        let over = sized(1000, yielding).await.outcome.unwrap_err();
        assert_eq!(over.kind(), "limit_exceeded", "{over}");
    }
    // With the only place taken, a call queues; once it has a place, the
    // output limit still applies.
    let mut holder = Box::pin(runtime.call(ToolCall::new("w", "waits", "{}")));
    assert!(futures::poll!(holder.as_mut()).is_pending());
    let token = WAITING.lock().unwrap().clone().expect("the tool ran");
    let mut queued = Box::pin(sized(1000, false));
    assert!(futures::poll!(queued.as_mut()).is_pending());
    // A call cancelled while it waits for a place answers so at once.
    let cancellation = CancellationToken::new();
    let options = CallOptions::new().cancellation(cancellation.clone());
    let call = ToolCall::new("c", "sized", r#"{"size": 1, "yielding": false}"#);
    let mut cancelled = Box::pin(runtime.call_with(call, options));
    assert!(futures::poll!(cancelled.as_mut()).is_pending());
    cancellation.cancel();
    let cancelled = error_within_seconds(cancelled, "a cancelled call stops waiting").await;
    assert_eq!(cancelled.kind(), "cancelled", "{cancelled}");
    assert!(!token.is_cancelled());
    // Dropped while it waits: its token is cancelled, its place given back.
    drop(holder);
    assert!(token.is_cancelled());
    let over = error_within_seconds(queued, "the queued call got the place").await;
    assert_eq!(over.kind(), "limit_exceeded", "{over}");

    let panicked = runtime
        .call(ToolCall::new("p", "late_panic", "{}"))
        .await
        .outcome
        .unwrap_err();
    assert_eq!(panicked.kind(), "panicked", "{panicked}");
    // Every place is free again.
    assert_eq!(sized(1, true).await.outcome.unwrap().to_text(), "x");
}

/// The error a call ends with, which `what` says it does within seconds.
async fn error_within_seconds(
    call: impl std::future::Future<Output = behest::ToolCallResult>,
    what: &str,
) -> ToolError {
    tokio::time::timeout(Duration::from_secs(5), call)
        .await
        .expect(what)
        .outcome
        .unwrap_err()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_text_route_runs_under_the_same_limits() {
    support::quiet_deliberate_panics();
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(Counted))
        .unwrap()
        .register_tool(Arc::new(Fragile))
        .unwrap();
    assert!(Counted.__text_route().is_some() && Fragile.__text_route().is_some());
    let runtime = ToolRuntime::builder(registry)
        .max_concurrent_calls(3)
        .build();

    let calls: Vec<_> = (0..30)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move {
                let id = format!("call_{i}");
                let result = runtime
                    .call(ToolCall::new(&id, "counted", r#"{"millis": 5}"#))
                    .await;
                (id, result)
            })
        })
        .collect();
    for call in calls {
        let (id, result) = call.await.unwrap();
        assert_eq!(result.call_id, id);
        assert_eq!(result.outcome.unwrap().to_text(), "5");
    }
    let peak = PEAK.load(Ordering::SeqCst);
    assert!((1..=3).contains(&peak), "peak {peak}");

    let fragile = |text: &'static str| {
        let runtime = runtime.clone();
        async move {
            runtime
                .call(ToolCall::new("f", "fragile", text))
                .await
                .outcome
        }
    };
    let panicked = fragile(r#"{"panic": true, "hang": false}"#)
        .await
        .unwrap_err();
    assert_eq!(panicked.kind(), "panicked");
    assert!(!panicked.to_string().contains("secret"), "{panicked}");
    let timed_out = fragile(r#"{"panic": false, "hang": true}"#)
        .await
        .unwrap_err();
    assert_eq!(
        timed_out.to_string(),
        ToolError::Timeout {
            after: Duration::from_millis(50)
        }
        .to_string()
    );
    let cancellation = CancellationToken::new();
    cancellation.cancel();
    let options = CallOptions::new().cancellation(cancellation);
    let call = ToolCall::new("f", "fragile", r#"{"panic": false, "hang": false}"#);
    let cancelled = runtime.call_with(call, options).await.outcome.unwrap_err();
    assert_eq!(cancelled.kind(), "cancelled");
}

/// A tool's typed routes, as (depth, floats, the arguments checked
/// against their schemas as they are read).
fn route_of(tool: &dyn Tool) -> Option<(usize, bool, Vec<&'static str>)> {
    let PlainArguments {
        depth,
        floats,
        checks,
    } = tool.__text_route()?;
    let checked = checks.map(|checks| behest::__private::plain::checked_names(&checks));
    Some((depth, floats, checked.unwrap_or_default()))
}

#[test]
fn the_typed_routes_read_plain_types_and_check_the_others() {
    assert_eq!(
        route_of(&Plain),
        Some((2, true, vec![])),
        "an object holding an array, and a float"
    );
    assert_eq!(route_of(&Nothing), Some((1, false, vec![])));
    // A default reads `null` as left out, as the checked route does.
    assert_eq!(route_of(&Defaulted), Some((1, false, vec![])));
    assert_eq!(route_of(&Structured), Some((1, false, vec!["point"])));
    assert_eq!(route_of(&AnyJson), Some((1, false, vec!["value"])));
    assert_eq!(route_of(&Map), Some((1, false, vec!["entries"])));
    assert_eq!(
        route_of(&Mixed),
        Some((
            2,
            false,
            vec!["address", "speed", "shape", "level", "extra"]
        ))
    );
    for (name, route) in [
        ("lenient", route_of(&Lenient)),
        // Past twelve arguments the struct is derived: it reads an array
        // too, and counts required fields by its own rules.
        ("wide", route_of(&support::Wide)),
        (
            "external",
            route_of(&behest::ExternalTool::new(
                "e",
                "E.",
                serde_json::json!({"type": "object"}),
            )),
        ),
    ] {
        assert_eq!(route, None, "`{name}` must take the checked route");
    }
}

fn runtime() -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(Plain))
        .unwrap()
        .register_tool(Arc::new(Nothing))
        .unwrap();
    ToolRuntime::new(registry)
}

/// How a call ended, as the model and a log see it.
fn ending(result: Result<behest::ToolOutput, behest::ToolError>) -> String {
    match result {
        Ok(output) => format!("ok: {}", output.to_text()),
        Err(error) => format!("{}: {error}", error.kind()),
    }
}

/// The call on the runtime's own route (the text or value route where it
/// applies: `arguments` is the model's text as a `Value::String`, or an
/// object as MCP sends it) and on the checked route alone.
fn both_routes(runtime: &ToolRuntime, tool: &str, arguments: impl Into<Value>) -> (String, String) {
    let arguments = arguments.into();
    let executor = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    executor.block_on(async {
        let routed = runtime
            .call(ToolCall::new("c", tool, arguments.clone()))
            .await
            .outcome;
        let checked = match runtime.prepare(tool, arguments) {
            Ok(prepared) => {
                runtime
                    .execute_prepared(prepared, "c", CallOptions::default())
                    .await
            }
            Err(error) => Err(error),
        };
        (ending(routed), ending(checked))
    })
}

/// Whether the tool's own read takes `arguments` under `limits`.
fn takes_value_route(tool: &dyn Tool, arguments: &Value, limits: &Limits) -> bool {
    let route = tool.__text_route().expect("a typed route");
    tool.__invoke_value(arguments, &route, limits, &|| ToolContext::new("c"))
        .is_some()
}

/// A runtime of `plain` under argument limits of `bytes` and `depth`.
fn limited(bytes: usize, depth: usize) -> ToolRuntime {
    let registry = ToolRegistry::new().with(Plain).unwrap();
    ToolRuntime::builder(registry)
        .max_argument_bytes(bytes)
        .max_argument_depth(depth)
        .build()
}

/// Whether the tool's own parse takes `text`. The runtime asks more before
/// it calls it (limits, and a negative zero for a tool with floats).
fn takes_text_route(tool: &dyn Tool, text: &str) -> bool {
    let route = tool.__text_route().expect("a typed route");
    tool.__invoke_text(text, &route, &Limits::default(), &|| ToolContext::new("c"))
        .is_some()
}

#[test]
fn texts_the_route_must_leave_to_the_checked_route() {
    let runtime = runtime();
    let good = r#"{"count": 1, "label": "a", "tags": [], "small": 2}"#;
    let cases = [
        // A derived struct reads an array in field order; the schema does not.
        (
            r#"[1, "a", null, [], null, 2]"#,
            false,
            "must be a JSON object",
        ),
        ("", false, "no arguments were sent"),
        ("null", false, "no arguments were sent"),
        ("7", false, "received the number 7"),
        (
            r#"{"count": 1.0, "label": "a", "tags": [], "small": 2}"#,
            false,
            "ok: 1 ",
        ),
        (
            r#"{"count": 1, "label": "a", "tags": [], "small": 256}"#,
            false,
            "`/small`",
        ),
        (
            r#"{"count": 1, "count": 2, "label": "a", "tags": [], "small": 2}"#,
            false,
            "ok: 2 ",
        ),
        (
            r#"{"count": 1, "label": "a", "tags": [], "small": 2, "x": 0}"#,
            false,
            "`x` is not an accepted field",
        ),
        (
            r#"{"count": 1, "label": "a", "tags": [], "small": 2} }"#,
            false,
            "trailing characters",
        ),
        (
            r#"{"count": 1, "label": "\ud800", "tags": [], "small": 2}"#,
            false,
            "surrogate",
        ),
        (good, true, "ok: 1 \"a\" None [] None 2"),
        (&format!(" \n\t{good}"), true, "ok: 1 "),
    ];
    for (text, taken, fragment) in cases {
        assert_eq!(takes_text_route(&Plain, text), taken, "{text}");
        let (routed, checked) = both_routes(&runtime, "plain", text);
        assert_eq!(routed, checked, "{text}");
        assert!(routed.contains(fragment), "{text}: {routed}");
    }
    // A negative zero for a float: the runtime leaves it to the checked
    // route, which reads it as `0` (the tool's own parse would give `-0.0`).
    for zero in ["-0", "-0.0", "-0e0"] {
        let text =
            format!(r#"{{"count": 1, "label": "a", "tags": [], "ratio": {zero}, "small": 2}}"#);
        let (routed, checked) = both_routes(&runtime, "plain", text.as_str());
        assert_eq!(routed, checked, "{text}");
        assert!(routed.contains("Some(0.0)"), "{text}: {routed}");
    }
    for text in ["", "null", "{}", "{ }"] {
        let (routed, checked) = both_routes(&runtime, "nothing", text);
        assert_eq!(
            (routed.as_str(), checked.as_str()),
            ("ok: done", "ok: done")
        );
    }
    let (routed, _) = both_routes(&runtime, "nothing", r#"{"x": 1}"#);
    assert!(
        routed.contains("`/x`: `x` is not an accepted field: none are accepted here"),
        "{routed}"
    );
}

#[test]
fn a_tool_without_floats_ends_negative_zeros_as_the_checked_route_does() {
    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(Whole)).unwrap();
    let runtime = ToolRuntime::new(registry);
    assert_eq!(route_of(&Whole), Some((2, false, vec![])));
    for zero in ["-0", "-0.0", "-0e0", "-0.000E+3", "0", "-0.5", "-00"] {
        for text in [
            format!(r#"{{"count": {zero}, "small": 1, "many": []}}"#),
            format!(r#"{{"count": 1, "small": {zero}, "many": []}}"#),
            format!(r#"{{"count": 1, "small": 1, "many": [1, {zero}]}}"#),
            format!(r#"{{"count": 1, "small": 1, "many": [], "maybe": {zero}}}"#),
        ] {
            let (routed, checked) = both_routes(&runtime, "whole", text.clone());
            assert_eq!(routed, checked, "{text}");
        }
    }
    // The checked route reads a negative zero as the integer 0.
    let text = r#"{"count": -0, "small": -0.0, "many": [-0e1], "maybe": -0}"#;
    assert_eq!(
        both_routes(&runtime, "whole", text).0,
        "ok: 0 0 [0] Some(0)"
    );
}

/// Raw JSON for one field: some valid for some field, most not.
fn fragment() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "0",
        "-1",
        "42",
        "255",
        "256",
        "-129",
        "9223372036854775807",
        "9223372036854775808",
        "-9223372036854775809",
        "18446744073709551616",
        "1.0",
        "2.5",
        "1e2",
        "1e400",
        "-0.0",
        "-0",
        "-0e0",
        "true",
        "false",
        "null",
        r#""x""#,
        r#""""#,
        r#""\ud800""#,
        "[]",
        r#"["a", "b"]"#,
        "[1, 2]",
        r#"["a", null]"#,
        "{}",
        r#"{"k": 1}"#,
    ])
    .prop_map(str::to_owned)
}

/// A field: mostly a value valid for it, sometimes any fragment.
fn field(valid: &'static [&'static str], present: u32) -> impl Strategy<Value = Option<String>> {
    let value = prop_oneof![
        3 => prop::sample::select(valid).prop_map(str::to_owned),
        1 => fragment(),
    ];
    prop::option::weighted(f64::from(present) / 100.0, value)
}

/// The text of a call of `plain`, sometimes not an object at all.
fn call_text() -> impl Strategy<Value = String> {
    let fields = (
        field(&["0", "42", "-7", "9223372036854775807"], 95),
        field(&[r#""apples""#, r#""""#, r#""é\n""#], 95),
        field(&["true", "false", "null"], 50),
        field(&["[]", r#"["a", "b"]"#], 95),
        field(&["0.5", "1", "null", "-1e300"], 50),
        field(&["0", "255", "7"], 95),
        field(&["1"], 5),
    );
    let names = [
        "count", "label", "verbose", "tags", "ratio", "small", "extra",
    ];
    (fields, 0..20u8).prop_map(move |(fields, shape)| {
        let (a, b, c, d, e, f, g) = fields;
        let present: Vec<(&str, String)> = names
            .iter()
            .zip([a, b, c, d, e, f, g])
            .filter_map(|(name, value)| value.map(|value| (*name, value)))
            .collect();
        let members: Vec<String> = present
            .iter()
            .map(|(name, value)| format!("\"{name}\": {value}"))
            .collect();
        let values: Vec<&str> = present.iter().map(|(_, value)| value.as_str()).collect();
        match shape {
            0 => format!("[{}]", values.join(", ")),
            1 => format!("{{{}}} x", members.join(", ")),
            2 => format!("\n {{{}}}", members.join(",")),
            3 if !members.is_empty() => {
                format!("{{{}, {}}}", members.join(", "), members[0])
            }
            _ => format!("{{{}}}", members.join(", ")),
        }
    })
}

/// How a call's arguments arrive: as the model's text, or as a parsed
/// object (as MCP sends them; the texts that are not objects are the text
/// route's).
#[derive(Clone, Copy)]
enum Given {
    Text,
    Parsed,
}

impl Given {
    /// The arguments of a call whose text is `text`, as they arrive.
    fn arguments(self, text: &str) -> Option<Value> {
        match self {
            Given::Text => Some(Value::String(text.to_owned())),
            Given::Parsed => parsed_object(text),
        }
    }

    /// Whether the tool's own read takes `arguments`.
    fn taken(self, tool: &dyn Tool, arguments: &Value) -> bool {
        match self {
            Given::Text => takes_text_route(tool, arguments.as_str().unwrap_or_default()),
            Given::Parsed => takes_value_route(tool, arguments, &Limits::default()),
        }
    }
}

/// Over generated calls of `tool` (`calls` makes their text), given as
/// `given` says: a call the route takes is one the schema accepts (once
/// `null`s for optional fields are left out, as the checked route leaves
/// them), and every call ends as on the checked route. Both outcomes must
/// be common, or the property says little.
fn route_property(
    tool: Arc<dyn Tool>,
    calls: impl Strategy<Value = String>,
    given: Given,
    least: u32,
) {
    let mut registry = ToolRegistry::new();
    registry.register_tool(tool.clone()).unwrap();
    let runtime = ToolRuntime::new(registry);
    let schema = tool.spec().parameters;
    let validator = ArgumentValidator::compile(&schema).unwrap();
    let mut runner = TestRunner::new(Config {
        cases: 1_000,
        failure_persistence: None,
        ..Config::default()
    });
    let taken = Cell::new(0u32);
    let left = Cell::new(0u32);
    runner
        .run(&calls, |text| {
            let Some(arguments) = given.arguments(&text) else {
                return Ok(());
            };
            if given.taken(&*tool, &arguments) {
                taken.set(taken.get() + 1);
                let mut value: Value = serde_json::from_str(&text).unwrap();
                behest::arguments::drop_optional_nulls(&mut value, &schema);
                prop_assert!(validator.is_valid(&value), "the schema refuses {text}");
            } else {
                left.set(left.get() + 1);
            }
            let (routed, checked) = both_routes(&runtime, tool.name(), arguments);
            prop_assert_eq!(routed, checked, "{}", text);
            Ok(())
        })
        .unwrap();
    let (taken, left) = (taken.get(), left.get());
    println!("{} taken {taken} times, left {left} times", tool.name());
    assert!(
        taken >= least && left >= least / 2,
        "taken {taken}, left {left}"
    );
}

/// The parsed objects among generated texts: what arrives on the value
/// route (the rest is the text route's).
fn parsed_object(text: &str) -> Option<Value> {
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(Value::is_object)
}

#[test]
fn the_text_route_accepts_nothing_the_schema_refuses_and_changes_no_result() {
    route_property(Arc::new(Plain), call_text(), Given::Text, 150);
}

#[test]
fn the_value_route_accepts_nothing_the_schema_refuses_and_changes_no_result() {
    route_property(Arc::new(Plain), call_text(), Given::Parsed, 100);
}

/// A field of `mixed`: mostly a value valid for it, sometimes one its
/// type reads and its schema refuses, or one neither takes.
fn mixed_field(
    valid: &'static [&'static str],
    refused: &'static [&'static str],
    present: u32,
) -> impl Strategy<Value = Option<String>> {
    let value = prop_oneof![
        12 => prop::sample::select(valid).prop_map(str::to_owned),
        1 => prop::sample::select(refused).prop_map(str::to_owned),
        1 => fragment(),
    ];
    prop::option::weighted(f64::from(present) / 100.0, value)
}

/// The text of a call of `mixed`. The refused values are those where a
/// type's `Deserialize` and its schema part: an enum's variant as a map,
/// a range the schema adds, an integral float where serde wants an
/// integer, a negative zero inside a struct.
fn mixed_call_text() -> impl Strategy<Value = String> {
    let fields = (
        mixed_field(&["0", "7", "255"], &["7.0", "256", "-0"], 95),
        mixed_field(
            &[
                r#"{"street": "a"}"#,
                r#"{"street": "b", "zip": 7}"#,
                r#"{"street": "c", "zip": null, "floors": [1, 2.5]}"#,
                r#"{"street": "d", "other": true}"#,
                r#"{"street": "k", "limit": null}"#,
                r#"{"street": "l", "limit": 3}"#,
            ],
            &[
                r#"{"street": "e", "zip": 7.0}"#,
                r#"{"street": "f", "floors": [-0.0, 1.0]}"#,
                r#"{"street": 1}"#,
                r#"{"zip": 1}"#,
                r#"{"street": "g", "zip": 4294967296}"#,
                r#"{"street": "h", "street": "i"}"#,
            ],
            95,
        ),
        mixed_field(
            &[r#""slow""#, r#""fast""#, "null"],
            &[r#"{"slow": null}"#, r#""SLOW""#, r#"{"fast": []}"#],
            60,
        ),
        mixed_field(
            &[
                r#"{"kind": "Dot"}"#,
                r#"{"kind": "Circle", "r": 1}"#,
                r#"{"kind": "Square", "side": 3}"#,
                "null",
            ],
            &[
                r#"{"kind": "Square", "side": 0}"#,
                r#"{"kind": "Square", "side": 0, "note": 1.5}"#,
                r#"{"kind": "Square", "side": 0, "note": null}"#,
                r#"{"kind": "Circle"}"#,
                r#"{"kind": "Circle", "r": -0.0}"#,
                r#"{"kind": "Square", "side": 3.0}"#,
            ],
            50,
        ),
        mixed_field(
            &[r#""low""#, r#""high""#, "null", r#""lo\u0077""#],
            &[r#""LOW""#, r#"{"low": null}"#, r#""""#],
            50,
        ),
        mixed_field(&["1", "null", "4294967295"], &["-1", "2.0"], 40),
        mixed_field(
            &[r#"{"a": [1, {"b": null}]}"#, "null", r#""x""#],
            &["1.0", r#"[-0.0, {"c": 2.0}]"#],
            40,
        ),
        mixed_field(&["[]", r#"["a"]"#], &[r#"[1]"#, "null"], 95),
    );
    let names = [
        "count", "address", "speed", "shape", "level", "copies", "extra", "tags",
    ];
    (fields, prop::option::weighted(0.05, Just(()))).prop_map(move |(fields, unknown)| {
        let (a, b, c, d, l, e, f, g) = fields;
        let mut members: Vec<String> = names
            .iter()
            .zip([a, b, c, d, l, e, f, g])
            .filter_map(|(name, value)| value.map(|value| format!("\"{name}\": {value}")))
            .collect();
        if unknown.is_some() {
            members.push(r#""other": 1"#.to_owned());
        }
        format!("{{{}}}", members.join(", "))
    })
}

#[test]
fn checked_arguments_on_the_text_route_accept_nothing_the_schema_refuses() {
    route_property(Arc::new(Mixed), mixed_call_text(), Given::Text, 150);
}

#[test]
fn checked_arguments_on_the_value_route_accept_nothing_the_schema_refuses() {
    route_property(Arc::new(Mixed), mixed_call_text(), Given::Parsed, 150);
}

/// A checked argument is read as the checked route would read it, so
/// what that route accepts after normalising is taken; what its type
/// reads and its schema refuses is not.
#[test]
fn checked_arguments_are_normalised_as_on_the_checked_route() {
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Mixed).unwrap());
    let call = |address: &str, rest: &str| {
        format!(r#"{{"count": 1, "address": {address}, "tags": []{rest}}}"#)
    };
    for (text, (taken, value_taken), ending) in [
        // `null` for a defaulted field inside a struct: left out. (The value
        // route reads the object where it is and leaves this one to the
        // checked route.)
        (
            call(r#"{"street": "a", "floors": null}"#, ""),
            (true, false),
            "floors: [], limit: Some(10) }",
        ),
        // `null` for a field whose default is `Some`: left out, so the
        // default, on every route (the value route leaves it to the
        // checked route).
        (
            call(r#"{"street": "a", "limit": null}"#, ""),
            (true, false),
            "limit: Some(10) }",
        ),
        // An integral float for an integer inside a struct.
        (
            call(r#"{"street": "a", "zip": 7.0}"#, ""),
            (true, true),
            "zip: Some(7)",
        ),
        // A negative zero inside a struct is the integer 0.
        (
            call(r#"{"street": "a", "floors": [-0.0]}"#, ""),
            (true, true),
            "floors: [0.0]",
        ),
        // `null` for a defaulted argument: its default.
        (
            call(r#"{"street": "a"}"#, r#", "shape": null"#),
            (true, true),
            "Dot Low 2",
        ),
        // A variant given with an escape.
        (
            call(r#"{"street": "a"}"#, r#", "level": "hig\u0068""#),
            (true, true),
            "High 2",
        ),
        // Read by the types, refused by the schemas.
        (
            call(r#"{"street": "a"}"#, r#", "level": {"high": null}"#),
            (false, false),
            "invalid_arguments",
        ),
        (
            call(r#"{"street": "a"}"#, r#", "speed": {"slow": null}"#),
            (false, false),
            "invalid_arguments",
        ),
        (
            call(
                r#"{"street": "a"}"#,
                r#", "shape": {"kind": "Square", "side": 0}"#,
            ),
            (false, false),
            "invalid_arguments",
        ),
    ] {
        assert_eq!(takes_text_route(&Mixed, &text), taken, "{text}");
        let (routed, checked) = both_routes(&runtime, "mixed", text.as_str());
        assert_eq!(routed, checked, "{text}");
        assert!(routed.contains(ending), "{text}: {routed}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            takes_value_route(&Mixed, &value, &Limits::default()),
            value_taken,
            "{text} as a value"
        );
        let (routed, checked) = both_routes(&runtime, "mixed", value);
        assert_eq!(routed, checked, "{text} as a value");
        assert!(routed.contains(ending), "{text} as a value: {routed}");
    }
    // Each kind of enum, read by the value route from where it is.
    let text = call(
        r#"{"street": "a"}"#,
        r#", "speed": "fast", "shape": {"kind": "Circle", "r": 2}, "extra": {"k": [1]}"#,
    );
    let value: Value = serde_json::from_str(&text).unwrap();
    assert!(takes_value_route(&Mixed, &value, &Limits::default()));
    assert!(takes_text_route(&Mixed, &text));
}

/// Depth and size limits hold on checked arguments as on the checked
/// route: any JSON nested past the depth limit is refused on both.
#[test]
fn checked_arguments_keep_the_depth_and_size_limits() {
    let nested = |levels: usize| {
        let inner = "[".repeat(levels) + &"]".repeat(levels);
        format!(r#"{{"count": 1, "address": {{"street": "a"}}, "tags": [], "extra": {inner}}}"#)
    };
    for depth in 2..6 {
        let registry = ToolRegistry::new().with(Mixed).unwrap();
        let runtime = ToolRuntime::builder(registry)
            .max_argument_depth(depth)
            .build();
        for levels in 1..7 {
            let text = nested(levels);
            let (routed, checked) = both_routes(&runtime, "mixed", text.as_str());
            assert_eq!(routed, checked, "{text} under {depth} levels");
            // The object is level 1, `extra`'s arrays the levels below.
            let within = levels < depth;
            assert_eq!(routed.starts_with("ok"), within, "{text}: {routed}");
            let value: Value = serde_json::from_str(&text).unwrap();
            let (routed, checked) = both_routes(&runtime, "mixed", value);
            assert_eq!(routed, checked, "{text} as a value under {depth} levels");
        }
    }
    let registry = ToolRegistry::new().with(Mixed).unwrap();
    let runtime = ToolRuntime::builder(registry)
        .max_argument_bytes(60)
        .build();
    let long = format!(
        r#"{{"count": 1, "address": {{"street": "{}"}}, "tags": []}}"#,
        "a".repeat(40)
    );
    let (routed, checked) = both_routes(&runtime, "mixed", long.as_str());
    assert_eq!(routed, checked);
    assert!(routed.starts_with("limit_exceeded"), "{routed}");
}

/// Integral floats, a negative zero and nulls for optional fields end as
/// on the checked route; limits still hold on the value route.
#[test]
fn parsed_arguments_the_value_route_must_normalise_or_leave() {
    let runtime = runtime();
    for arguments in [
        serde_json::json!({"count": 1.0, "label": "a", "tags": [], "small": 2}),
        serde_json::json!({"count": -0.0, "label": "a", "tags": [], "small": 2, "ratio": -0.0}),
        serde_json::json!({"count": 1, "label": "a", "tags": [], "small": 2, "verbose": null}),
        serde_json::json!({"count": 1, "label": "a", "tags": [], "small": 300}),
        serde_json::json!({"count": 1, "label": "a", "tags": [], "small": 2, "extra": 1}),
        serde_json::json!({"count": 9007199254740993.0, "label": "a", "tags": [], "small": 2}),
    ] {
        let (routed, checked) = both_routes(&runtime, "plain", arguments.clone());
        assert_eq!(routed, checked, "{arguments}");
    }
    // The route is taken where the tool's types read the object as it
    // comes, so the comparisons above are not the checked route twice.
    let plain =
        serde_json::json!({"count": 1, "label": "a", "tags": [], "small": 2, "verbose": null});
    assert!(takes_value_route(&Plain, &plain, &Limits::default()));
    let depth = Limits::default().max_argument_depth;
    let long = serde_json::json!({"count": 1, "label": "a".repeat(100), "tags": [], "small": 2});
    let (routed, checked) = both_routes(&limited(64, depth), "plain", long);
    assert_eq!(routed, checked);
    assert!(routed.starts_with("limit_exceeded"), "{routed}");
    // Integral floats are counted as floats (24 bytes each) before they
    // are read as integers (20): an object over the limit only as floats
    // is over it on both routes, the value route handing the checked
    // route its object as it came.
    // (80 bytes flat as they came, 72 as integers; 90 and 82 nested.)
    let flat = serde_json::json!({"count": 1.0, "label": "a", "small": 2.0});
    let nested = serde_json::json!({"count": 1.0, "label": "a", "small": 2.0, "tags": []});
    // Over the limit, its error; within it, the flat object lacks `tags`.
    for (floats, limit, ending) in [
        (&flat, 70, "limit_exceeded"),
        (&flat, 75, "limit_exceeded"),
        (&flat, 80, "invalid_arguments"),
        (&nested, 80, "limit_exceeded"),
        (&nested, 87, "limit_exceeded"),
        (&nested, 90, "ok"),
    ] {
        let (routed, checked) = both_routes(&limited(limit, depth), "plain", floats.clone());
        assert_eq!(routed, checked, "{floats} under a limit of {limit}");
        assert!(
            routed.starts_with(ending),
            "{floats} under {limit}: {routed}"
        );
    }
}

/// Under limits around the size and depth of the objects, a call given
/// as a parsed object ends as on the checked route: over a limit on both,
/// or within it on both and then alike.
#[test]
fn the_value_route_ends_as_the_checked_route_under_any_limits() {
    let mut runner = TestRunner::new(Config {
        cases: 800,
        failure_persistence: None,
        ..Config::default()
    });
    let (over, within, taken) = (Cell::new(0u32), Cell::new(0u32), Cell::new(0u32));
    runner
        .run(
            &(call_text(), 60..240usize, 1..4usize),
            |(text, bytes, depth)| {
                let Some(arguments) = serde_json::from_str::<Value>(&text)
                    .ok()
                    .filter(Value::is_object)
                else {
                    return Ok(());
                };
                let runtime = limited(bytes, depth);
                let read = takes_value_route(&Plain, &arguments, runtime.limits());
                let (routed, checked) = both_routes(&runtime, "plain", arguments);
                let count = if checked.starts_with("limit_exceeded") {
                    &over
                } else if read {
                    &taken
                } else {
                    &within
                };
                count.set(count.get() + 1);
                prop_assert_eq!(
                    routed,
                    checked,
                    "{} under {} bytes, {} levels",
                    text,
                    bytes,
                    depth
                );
                Ok(())
            },
        )
        .unwrap();
    let (over, within, taken) = (over.get(), within.get(), taken.get());
    println!("over a limit {over}, read by the route {taken}, left within {within}");
    assert!(
        over >= 100 && taken >= 40 && within >= 100,
        "over {over}, taken {taken}, within {within}"
    );
}

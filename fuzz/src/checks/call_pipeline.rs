//! Arbitrary argument text through `ToolRuntime::call`, against tools
//! whose arguments cover the shapes models send (numbers, strings, lists of
//! objects, enums, options) and a tool that panics. Every call yields one
//! result for its id; the text route (a `#[tool]`'s own parse of the
//! model's text) and the checked route (decode, validate, typed parse: the
//! same tool behind a wrapper that offers no text route) agree on every
//! input, outcome and message.

use std::sync::OnceLock;

use behest::{
    Tool, ToolCall, ToolContext, ToolOutput, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
};
use serde_json::Value;

/// Add two numbers.
#[behest::tool]
async fn add(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// A point.
#[behest::data(input)]
struct Point {
    x: f64,
    y: f64,
}

/// Describe a shape.
#[behest::tool]
fn shape(name: String, points: Vec<Point>, closed: Option<bool>, tags: Vec<String>) -> String {
    let first = points.first().map_or(0.0, |point| point.x + point.y);
    format!(
        "{name}: {} points from {first}, closed: {closed:?}, {tags:?}",
        points.len()
    )
}

/// How to pick.
#[behest::data(input)]
#[derive(Debug)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Fast,
    Slow,
}

/// Pick something.
#[behest::tool]
fn pick(mode: Mode, limit: Option<u8>, ratio: f32, note: Option<String>) -> String {
    format!("{mode:?} {limit:?} {ratio} {note:?}")
}

/// Count words.
#[behest::tool]
fn tally(words: Vec<String>, weights: Option<Vec<f64>>, strict: bool, cap: Option<u16>) -> String {
    format!("{} words, {weights:?}, {strict}, {cap:?}", words.len())
}

/// Always panics.
#[behest::tool]
fn explode(reason: String) -> String {
    panic!("exploded: {reason}")
}

/// `T` without its text route: every call takes the checked route.
struct Checked<T>(T);

impl<T: Tool> Tool for Checked<T> {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn spec(&self) -> ToolSpec {
        self.0.spec()
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        self.0.execute(arguments).await
    }

    async fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        self.0.execute_with_context(arguments, context).await
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        self.0.timeout()
    }

    fn strict(&self) -> bool {
        self.0.strict()
    }

    fn reveals_panics(&self) -> bool {
        self.0.reveals_panics()
    }
}

const NAMES: [&str; 5] = ["add", "shape", "pick", "explode", "tally"];

fn runtimes() -> &'static (ToolRuntime, ToolRuntime) {
    static RUNTIMES: OnceLock<(ToolRuntime, ToolRuntime)> = OnceLock::new();
    RUNTIMES.get_or_init(|| {
        // `explode`'s panic is caught by the runtime, as it should be; the
        // fuzzer's hook would count it as a crash. Any other panic still
        // reaches the hook.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<String>()
                .map(String::as_str)
                .unwrap_or_default();
            if !message.starts_with("exploded: ") {
                previous(info);
            }
        }));
        // The differential needs the first runtime to take the typed routes
        // (`shape` and `pick` read a struct and an enum, held to their
        // schemas as they are read).
        for tool in [&Add as &dyn Tool, &Tally, &Explode, &Shape, &Pick] {
            assert!(
                tool.__text_route().is_some(),
                "{} has no text route",
                tool.name()
            );
        }
        let text = ToolRegistry::new()
            .with(Add)
            .and_then(|r| r.with(Shape))
            .and_then(|r| r.with(Pick))
            .and_then(|r| r.with(Explode))
            .and_then(|r| r.with(Tally))
            .expect("the tools register");
        let checked = ToolRegistry::new()
            .with(Checked(Add))
            .and_then(|r| r.with(Checked(Shape)))
            .and_then(|r| r.with(Checked(Pick)))
            .and_then(|r| r.with(Checked(Explode)))
            .and_then(|r| r.with(Checked(Tally)))
            .expect("the tools register");
        (ToolRuntime::new(text), ToolRuntime::new(checked))
    })
}

/// The first byte picks the tool (or an unknown name) and whether the
/// rest is sent as text or, when it is JSON, as a value.
pub fn check(data: &[u8]) {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest).into_owned();
    let name = match usize::from(selector % 8) {
        index @ 0..=4 => NAMES[index].to_owned(),
        5 => text.chars().take(80).collect(),
        _ => NAMES[usize::from(selector) % NAMES.len()].to_owned(),
    };
    let arguments = match serde_json::from_str::<Value>(&text) {
        Ok(value) if selector & 0x80 != 0 => value,
        _ => Value::String(text),
    };
    let (text_route, checked_route) = runtimes();
    super::block_on(async {
        let call = ToolCall::new("call-1", name.as_str(), arguments.clone());
        let fast = text_route.call(call.clone()).await;
        let slow = checked_route.call(call).await;
        for result in [&fast, &slow] {
            assert_eq!(result.call_id, "call-1");
            assert_eq!(result.tool_name, name);
        }
        assert_eq!(
            fast.is_error(),
            slow.is_error(),
            "the routes disagree on {name} {arguments}: {fast:?} / {slow:?}"
        );
        assert_eq!(
            fast.to_model_text(),
            slow.to_model_text(),
            "the routes word {name} {arguments} differently"
        );
        // A batch answers each call once, in order.
        let batch = [
            ToolCall::new("b1", name.as_str(), arguments.clone()),
            ToolCall::new("b2", "add", arguments.clone()),
        ];
        let results = text_route.call_batch(batch).await;
        let ids: Vec<&str> = results.iter().map(|r| r.call_id.as_str()).collect();
        assert_eq!(ids, ["b1", "b2"]);
    });
}

//! Tools shared by the integration tests.
#![allow(dead_code)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use behest::{Tool, ToolContext, ToolOutput, ToolResult, ToolSpec};
use serde::Deserialize;
use serde_json::{json, Value};

/// Adds two integers; the typical typed tool.
pub struct Add;

#[derive(Deserialize)]
struct AddArgs {
    a: i64,
    b: i64,
}

impl Tool for Add {
    fn name(&self) -> &str {
        "add"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "add",
            "Add two integers.",
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "integer", "format": "int64"},
                    "b": {"type": "integer", "format": "int64"}
                },
                "required": ["a", "b"],
                "additionalProperties": false
            }),
        )
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let args: AddArgs = behest::arguments::parse(arguments)?;
        let sum = args
            .a
            .checked_add(args.b)
            .ok_or_else(|| behest::ToolError::execution("the sum overflows a 64-bit integer"))?;
        Ok(ToolOutput::json(json!({"sum": sum})))
    }
}

/// Takes anything under `nested`, returns how deep it was.
pub struct Deep;

impl Tool for Deep {
    fn name(&self) -> &str {
        "deep"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "deep",
            "Accepts a nested value.",
            json!({"type": "object", "properties": {"nested": {}, "text": {"type": "string"}}}),
        )
    }
    async fn execute(&self, _arguments: Value) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text("ok"))
    }
}

/// A tool without parameters.
pub struct Now;

impl Tool for Now {
    fn name(&self) -> &str {
        "now"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "now",
            "The current time.",
            json!({"type": "object", "properties": {}}),
        )
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        assert_eq!(
            arguments,
            json!({}),
            "the runtime passes `{{}}` for no arguments"
        );
        Ok(ToolOutput::text("12:00"))
    }
}

/// How a [`Panics`] tool panics.
#[derive(Clone, Copy)]
pub enum PanicKind {
    /// In the synchronous part, before any `.await`.
    BeforeAwait,
    /// After an `.await`.
    AfterAwait,
    /// With a payload that is not a string.
    OddPayload,
    /// While building the future, in a hand-written `execute`.
    WhileBuilding,
}

/// Panics, as configured.
pub struct Panics {
    pub name: &'static str,
    pub kind: PanicKind,
    pub reveal: bool,
}

impl Tool for Panics {
    fn name(&self) -> &str {
        self.name
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(self.name, "Panics.", json!({"type": "object"}))
    }
    fn reveals_panics(&self) -> bool {
        self.reveal
    }
    #[allow(clippy::manual_async_fn)]
    fn execute(
        &self,
        _arguments: Value,
    ) -> impl std::future::Future<Output = ToolResult<ToolOutput>> + Send {
        if let PanicKind::WhileBuilding = self.kind {
            panic!("deliberate panic while building with secret /etc/passwd");
        }
        let kind = self.kind;
        async move {
            match kind {
                PanicKind::BeforeAwait => panic!("deliberate panic with secret /etc/passwd"),
                PanicKind::AfterAwait => {
                    tokio::task::yield_now().await;
                    panic!("deliberate panic after await: {}", 42)
                }
                PanicKind::OddPayload => std::panic::panic_any(7_u32),
                PanicKind::WhileBuilding => unreachable!(),
            }
        }
    }
}

/// Never finishes.
pub struct Hangs {
    pub timeout: Option<Duration>,
}

impl Tool for Hangs {
    fn name(&self) -> &str {
        "hangs"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("hangs", "Never finishes.", json!({"type": "object"}))
    }
    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
    async fn execute(&self, _arguments: Value) -> ToolResult<ToolOutput> {
        std::future::pending().await
    }
}

/// Counts how many of its calls run at once; each call yields a few times.
pub struct Gauge {
    pub running: Arc<AtomicUsize>,
    pub peak: Arc<AtomicUsize>,
}

impl Gauge {
    pub fn new() -> Self {
        Self {
            running: Arc::default(),
            peak: Arc::default(),
        }
    }
}

impl Tool for Gauge {
    fn name(&self) -> &str {
        "gauge"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "gauge",
            "Echoes `n`.",
            json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
        )
    }
    async fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        let now = self.running.fetch_add(1, Ordering::SeqCst) + 1;
        self.peak.fetch_max(now, Ordering::SeqCst);
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        self.running.fetch_sub(1, Ordering::SeqCst);
        Ok(ToolOutput::json(
            json!({"n": arguments["n"], "call_id": context.call_id()}),
        ))
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        self.execute_with_context(arguments, ToolContext::new("direct"))
            .await
    }
}

/// Silences the panic messages of the tests' deliberate panics, keeping
/// every other panic message.
pub fn quiet_deliberate_panics() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        let odd = info.payload().downcast_ref::<u32>().is_some();
        if !text.starts_with("deliberate") && !odd {
            previous(info);
        }
    }));
}

/// Takes more arguments than the generated impls and the text route do:
/// its arguments struct derives `Deserialize` and `JsonSchema`.
#[behest::tool]
#[allow(clippy::too_many_arguments)]
pub fn wide(
    a: u8,
    b: u8,
    c: u8,
    d: u8,
    e: u8,
    f: u8,
    g: u8,
    h: u8,
    i: u8,
    j: u8,
    k: u8,
    l: u8,
    /// The last one.
    m: Option<u8>,
) -> u32 {
    [a, b, c, d, e, f, g, h, i, j, k, l, m.unwrap_or(0)]
        .iter()
        .map(|&n| u32::from(n))
        .sum()
}

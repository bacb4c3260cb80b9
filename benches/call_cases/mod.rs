//! The tool, the inputs, the cases and the floors that `call_overhead`
//! and `call_ratios` measure, and the batch timer both use.

#![allow(dead_code)]

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use behest::{
    ExternalTool, Tool, ToolCall, ToolCallResult, ToolOutput, ToolRegistry, ToolResult,
    ToolRuntime, ToolSpec,
};
use serde::Deserialize;
use serde_json::{json, Value};

/// Describe a count.
#[behest::tool]
pub async fn describe(count: i64, label: String, verbose: Option<bool>) -> String {
    let mut text = label;
    text.push_str(if verbose.unwrap_or(false) {
        ": many "
    } else {
        ": "
    });
    text.push_str(&count.to_string());
    text
}

/// The arguments as a plain `serde_derive` struct: what (b) reads.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Args {
    pub count: i64,
    pub label: String,
    pub verbose: Option<bool>,
}

/// The same tool written by hand on `Value`: the runtime takes the checked
/// route (decode into a `Value`, validate, typed parse) for it.
pub struct DescribeByHand;

impl Tool for DescribeByHand {
    fn name(&self) -> &str {
        "describe"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("describe", "Describe a count.", schema())
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let args: Args = behest::arguments::parse(arguments)?;
        Ok(ToolOutput::text(
            describe(args.count, args.label, args.verbose).await,
        ))
    }
}

pub fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "count": {"type": "integer", "format": "int64"},
            "label": {"type": "string"},
            "verbose": {"type": ["boolean", "null"]}
        },
        "required": ["count", "label"],
        "additionalProperties": false
    })
}

pub const TEXT: &str = r#"{"count": 42, "label": "apples", "verbose": true}"#;

/// The arguments of (b50) and (c50): a 50 KB label.
pub fn long_text() -> String {
    let line = r#"A well-known, long-standing rule: \"measure twice\" - then cut.\n"#;
    let label = line.repeat(50_000 / line.len());
    format!(r#"{{"count": 42, "label": "{label}", "verbose": true}}"#)
}

pub fn runtime_with(tools: usize, tool: Arc<dyn Tool>) -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    for i in 0..tools - 1 {
        let name = format!("filler_{i}");
        registry
            .register(
                name.clone(),
                Arc::new(ExternalTool::new(name, "Filler.", schema())),
            )
            .unwrap();
    }
    registry.register_tool(tool).unwrap();
    ToolRuntime::new(registry)
}

/// How many calls one timed stretch makes.
pub const BATCH: usize = 1024;

/// Buffers of one case's inputs and outputs, kept from batch to batch: a
/// fresh buffer for every batch has its pages mapped in as it is first
/// written, inside the timed part, which charges each case for the size of
/// what it returns rather than for what it does.
pub struct Batches<I, O> {
    inputs: Vec<I>,
    outputs: Vec<O>,
}

impl<I, O> Batches<I, O> {
    pub fn new() -> Self {
        Self {
            inputs: Vec::with_capacity(BATCH),
            outputs: Vec::with_capacity(BATCH),
        }
    }

    /// Times `count` (at most [`BATCH`]) calls of `routine` on inputs made
    /// by `setup` beforehand; their outputs are dropped after.
    pub fn time<F: Future<Output = O>>(
        &mut self,
        rt: &tokio::runtime::Runtime,
        count: usize,
        setup: &mut impl FnMut() -> I,
        routine: &mut impl FnMut(I) -> F,
    ) -> Duration {
        debug_assert!(count <= BATCH);
        self.inputs.extend((0..count).map(|_| setup()));
        let outputs = &mut self.outputs;
        let inputs = &mut self.inputs;
        let start = Instant::now();
        rt.block_on(async {
            for input in inputs.drain(..) {
                outputs.push(routine(input).await);
            }
        });
        let elapsed = start.elapsed();
        self.outputs.clear();
        elapsed
    }
}

/// (b), the floor of a call from JSON text: `serde_json::from_str` of the
/// model's text into the derived struct, and the call.
pub async fn from_str_floor(text: String) -> String {
    let args: Args = serde_json::from_str(black_box(&text)).unwrap();
    describe(args.count, args.label, args.verbose).await
}

/// `parts/value_floor`, the floor of a call from a parsed `Value`: a
/// compiled `jsonschema` check, `serde_json::from_value` and the call.
pub async fn value_floor(compiled: &jsonschema::Validator, value: Value) -> String {
    assert!(compiled.is_valid(black_box(&value)));
    let args: Args = serde_json::from_value(value).unwrap();
    describe(args.count, args.label, args.verbose).await
}

/// (c) and (d): one call through the runtime, which must succeed.
pub async fn through(runtime: &ToolRuntime, call: ToolCall) -> ToolCallResult {
    let result = runtime.call(black_box(call)).await;
    assert!(result.outcome.is_ok());
    result
}

//! What the runtime's pipeline costs per call, side by side with calling the
//! tool's function directly.
//!
//! (a) `direct`: the async function with a built argument struct.
//! (b) `from_str`: `serde_json::from_str` of the model's JSON text, then (a).
//! (c) `runtime/N`: `ToolRuntime::call` with the same JSON text (lookup,
//!     decode, validation, typed parse, concurrency limit, timeout, panic
//!     isolation, span) in a registry of N tools.
//!
//! Inputs are made and outputs dropped outside the timed part in all three.
//!
//! `parts/*` measure the pipeline's unavoidable steps alone, to read (c)
//! against; `parts/floor` is all of them together: what any runtime that
//! hands a tool a validated `serde_json::Value` pays at the least.
//!
//! Run: `cargo bench --bench call_overhead`.

use std::hint::black_box;
use std::sync::Arc;

use behest::{
    ExternalTool, Tool, ToolCall, ToolOutput, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
struct Args {
    count: i64,
    label: String,
    verbose: Option<bool>,
}

async fn describe(args: Args) -> String {
    let mut text = args.label;
    text.push_str(if args.verbose.unwrap_or(false) {
        ": many "
    } else {
        ": "
    });
    text.push_str(&args.count.to_string());
    text
}

struct Describe;

impl Tool for Describe {
    fn name(&self) -> &str {
        "describe"
    }
    fn spec(&self) -> ToolSpec {
        ToolSpec::new("describe", "Describe a count.", schema())
    }
    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let args: Args = behest::arguments::parse(arguments)?;
        Ok(ToolOutput::text(describe(args).await))
    }
}

fn schema() -> Value {
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

const TEXT: &str = r#"{"count": 42, "label": "apples", "verbose": true}"#;

fn runtime_with(tools: usize) -> ToolRuntime {
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
    registry.register_tool(Arc::new(Describe)).unwrap();
    ToolRuntime::new(registry)
}

fn call_overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("call");

    // Each case's input is made outside the timed part, as it arrives from
    // the caller (a built struct; the model's JSON text; a `ToolCall` holding
    // that text), and each output is dropped outside it.
    group.bench_function("a_direct", |b| {
        b.to_async(&rt).iter_batched(
            || Args {
                count: 42,
                label: "apples".to_owned(),
                verbose: Some(true),
            },
            |args| async move { describe(black_box(args)).await },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("b_from_str", |b| {
        b.to_async(&rt).iter_batched(
            || TEXT.to_owned(),
            |text| async move {
                let args: Args = serde_json::from_str(black_box(&text)).unwrap();
                describe(args).await
            },
            BatchSize::SmallInput,
        )
    });
    for tools in [10, 10_000] {
        let runtime = runtime_with(tools);
        group.bench_function(format!("c_runtime/{tools}_tools"), |b| {
            b.to_async(&rt).iter_batched(
                || ToolCall::new("call_1", "describe", TEXT),
                |call| async {
                    let result = runtime.call(black_box(call)).await;
                    assert!(result.outcome.is_ok());
                    result
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

/// The steps that any validating runtime on `serde_json::Value` pays, alone
/// (parsing into a `Value`, validating it, the tool's typed parse of it) and
/// together (`floor`).
fn pipeline_parts(c: &mut Criterion) {
    let mut group = c.benchmark_group("parts");
    group.bench_function("parse_value", |b| {
        b.iter(|| black_box(serde_json::from_str::<Value>(black_box(TEXT)).unwrap()))
    });
    let validator = behest::validation::ArgumentValidator::compile(&schema()).unwrap();
    let value: Value = serde_json::from_str(TEXT).unwrap();
    group.bench_function("validate", |b| {
        b.iter(|| black_box(validator.is_valid(black_box(&value))))
    });
    group.bench_function("typed_from_value", |b| {
        b.iter(|| black_box(behest::arguments::parse::<Args>(black_box(value.clone())).unwrap()))
    });
    // What any runtime that hands the tool a validated `Value` pays at the
    // least: parse, validate, run; no lookup, limits, isolation or span.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    group.bench_function("floor", |b| {
        b.to_async(&rt).iter_batched(
            || TEXT.to_owned(),
            |text| {
                let validator = &validator;
                async move {
                    let value: Value = serde_json::from_str(black_box(&text)).unwrap();
                    assert!(validator.is_valid(&value));
                    Describe.execute(value).await.unwrap()
                }
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, call_overhead, pipeline_parts);
criterion_main!(benches);

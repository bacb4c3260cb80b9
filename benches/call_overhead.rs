//! What the runtime's pipeline costs per call, side by side with calling the
//! tool's function directly. The tool is a `#[tool]` with three arguments
//! (`i64`, `String`, `Option<bool>`).
//!
//! (a) `direct`: the async function with built arguments.
//! (b) `from_str`: `serde_json::from_str` of the model's JSON text into a
//!     `#[derive(Deserialize)]` struct of the three arguments, then (a).
//! (c) `runtime/N`: `ToolRuntime::call` with the same JSON text in a
//!     registry of N tools: lookup, the text route (the tool's typed parse,
//!     which for these argument types accepts exactly what the schema
//!     accepts), concurrency limit, timeout, panic isolation, span.
//! (c') `checked_route/N`: the same through a hand-written `Tool` on
//!     `Value`: decode into a `Value`, validate it, typed parse, and the rest
//!     of (c).
//!
//! (b50) `from_str_50kb` and (c50) `runtime_50kb`: (b) and (c) with a
//!     50 KB `label` (prose with hyphens and escapes), where reading the
//!     text dominates.
//!
//! (d) `value_route/N`: `ToolRuntime::call` with the arguments as a parsed
//!     `Value` object, as MCP delivers them, for the `#[tool]` of (c).
//!
//! In the `call/*` cases and `parts/floor` and `parts/value_floor`, inputs
//! are made and outputs dropped outside the timed part, in batches of 1 024
//! calls whose buffers are kept from batch to batch
//! ([`timed`]): criterion's own `iter_batched` makes a new buffer for every
//! batch of up to tens of thousands, and the page faults and cache misses
//! of filling it weighed on the small floors far more than on the calls
//! (`parts/value_floor` read 244 ns with it, 151 ns without).
//!
//! `parts/*` measure the checked route's unavoidable steps alone, to read
//! (c') against; `parts/floor` is all of them together: what any runtime
//! that hands a tool a validated `serde_json::Value` pays at the least.
//! `parts/parse_tool_args` and `parts/parse_derived_args` are the typed
//! parse alone, of the `#[tool]`'s arguments struct (its `Deserialize` is
//! generic code in `behest`) and of `serde_derive`'s (b).
//! `parts/value_floor` is `parts/floor` from a parsed `Value`: what (d) is read
//! against (`serde_json::from_value`, a compiled `jsonschema` check, the
//! call).
//!
//! Run: `cargo bench --bench call_overhead`.

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use behest::{Tool, ToolCall};
use criterion::{criterion_group, criterion_main, Bencher, Criterion};
use serde_json::Value;

#[path = "call_cases/mod.rs"]
mod call_cases;

use call_cases::{
    describe, from_str_floor, long_text, runtime_with, schema, through, value_floor, Args, Batches,
    Describe, DescribeArgs, DescribeByHand, BATCH, TEXT,
};

/// Times `routine` on inputs made by `setup`, in batches whose inputs are
/// made outside the timed part, as criterion's `iter_batched` does, but
/// into a buffer kept from batch to batch, and whose outputs are dropped
/// inside it ([`Batches`]).
fn timed<I, O, F>(
    b: &mut Bencher<'_>,
    rt: &tokio::runtime::Runtime,
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I) -> F,
) where
    F: Future<Output = O>,
{
    let mut batches = Batches::new();
    b.iter_custom(|iters| {
        let mut elapsed = Duration::ZERO;
        let mut left = iters;
        while left > 0 {
            let count = left.min(BATCH as u64);
            elapsed += batches.time(rt, count as usize, &mut setup, &mut routine);
            left -= count;
        }
        elapsed
    });
}

fn call_overhead(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("call");
    // Longer than criterion's default, so that the bursts of a shared
    // machine weigh less in each case's estimate.
    group.measurement_time(std::time::Duration::from_secs(10));

    // Each case's input is made outside the timed part, as it arrives from
    // the caller (a built struct; the model's JSON text; a `ToolCall` holding
    // that text), and each output is dropped outside it.
    group.bench_function("a_direct", |b| {
        timed(
            b,
            &rt,
            || (42, "apples".to_owned(), Some(true)),
            |(count, label, verbose)| async move {
                describe(black_box(count), black_box(label), black_box(verbose)).await
            },
        )
    });
    group.bench_function("b_from_str", |b| timed(b, &rt, || TEXT, from_str_floor));
    let routes: [(&str, Arc<dyn Tool>); 2] = [
        ("c_runtime", Arc::new(Describe)),
        ("c_checked_route", Arc::new(DescribeByHand)),
    ];
    for (case, tool) in routes {
        for tools in [10, 10_000] {
            let runtime = runtime_with(tools, tool.clone());
            group.bench_function(format!("{case}/{tools}_tools"), |b| {
                timed(
                    b,
                    &rt,
                    || ToolCall::new("call_1", "describe", TEXT),
                    |call| through(&runtime, call),
                )
            });
        }
    }
    let long = long_text();
    group.bench_function("b50_from_str_50kb", |b| {
        timed(b, &rt, || long.as_str(), from_str_floor)
    });
    let runtime = runtime_with(10, Arc::new(Describe));
    group.bench_function("c50_runtime_50kb", |b| {
        timed(
            b,
            &rt,
            || ToolCall::new("call_1", "describe", long.as_str()),
            |call| through(&runtime, call),
        )
    });
    for tools in [10, 10_000] {
        let runtime = runtime_with(tools, Arc::new(Describe));
        group.bench_function(format!("d_value_route/{tools}_tools"), |b| {
            timed(
                b,
                &rt,
                || {
                    ToolCall::new(
                        "call_1",
                        "describe",
                        serde_json::from_str::<Value>(TEXT).unwrap(),
                    )
                },
                |call| through(&runtime, call),
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
    // The typed parse alone: the `#[tool]`'s arguments struct (its
    // `Deserialize` is generic code in `behest`) beside `serde_derive`'s.
    group.bench_function("parse_tool_args", |b| {
        b.iter(|| black_box(serde_json::from_str::<DescribeArgs>(black_box(TEXT)).unwrap()))
    });
    group.bench_function("parse_derived_args", |b| {
        b.iter(|| black_box(serde_json::from_str::<Args>(black_box(TEXT)).unwrap()))
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
        timed(
            b,
            &rt,
            || TEXT.to_owned(),
            |text| {
                let validator = &validator;
                async move {
                    let value: Value = serde_json::from_str(black_box(&text)).unwrap();
                    assert!(validator.is_valid(&value));
                    DescribeByHand.execute(value).await.unwrap()
                }
            },
        )
    });
    // The same from a parsed `Value`, as MCP delivers arguments: the
    // tool's typed read of it, a compiled `jsonschema` check, the call.
    let compiled = jsonschema::validator_for(&schema()).unwrap();
    group.bench_function("value_floor", |b| {
        timed(
            b,
            &rt,
            || serde_json::from_str::<Value>(TEXT).unwrap(),
            |value| value_floor(&compiled, value),
        )
    });
    group.finish();
}

criterion_group!(benches, call_overhead, pipeline_parts);
criterion_main!(benches);

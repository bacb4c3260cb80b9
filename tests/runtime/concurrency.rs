//! Thousands of mixed calls against a small concurrency limit: each gets
//! exactly one result, under its own id, and the limit holds.

use crate::support;

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use behest::{CallOptions, CancellationToken, ToolCall, ToolError, ToolRegistry, ToolRuntime};
use serde_json::json;
use support::{Gauge, Hangs, PanicKind, Panics};

fn mixed_call(i: usize) -> ToolCall {
    let id = format!("call_{i}");
    match i % 4 {
        0 => ToolCall::new(id, "gauge", json!({"n": i})),
        1 => ToolCall::new(id, "gauge", json!({"n": "not a number"})),
        2 => ToolCall::new(id, "panics", json!({})),
        _ => ToolCall::new(id, "gaueg", json!({"n": i})),
    }
}

fn check(i: usize, result: &behest::ToolCallResult) {
    assert_eq!(result.call_id, format!("call_{i}"));
    match (i % 4, &result.outcome) {
        (0, Ok(output)) => {
            let value = output.structured.as_ref().unwrap();
            assert_eq!(value["n"], json!(i));
            assert_eq!(
                value["call_id"],
                json!(format!("call_{i}")),
                "the tool saw its own call id"
            );
        }
        (1, Err(ToolError::InvalidArguments { .. }))
        | (2, Err(ToolError::Panicked { .. }))
        | (3, Err(ToolError::NotFound { .. })) => {}
        (kind, outcome) => panic!("call {i} (kind {kind}): unexpected {outcome:?}"),
    }
}

fn runtime(gauge: Gauge) -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(gauge))
        .unwrap()
        .register_tool(Arc::new(Panics {
            name: "panics",
            kind: PanicKind::AfterAwait,
            reveal: false,
        }))
        .unwrap();
    ToolRuntime::builder(registry)
        .max_concurrent_calls(8)
        .build()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_spawned_calls_each_get_one_result() {
    support::quiet_deliberate_panics();
    let gauge = Gauge::new();
    let peak = gauge.peak.clone();
    let runtime = runtime(gauge);
    let handles: Vec<_> = (0..2000)
        .map(|i| {
            let runtime = runtime.clone();
            tokio::spawn(async move { runtime.call(mixed_call(i)).await })
        })
        .collect();
    let mut ids = HashSet::new();
    for (i, handle) in handles.into_iter().enumerate() {
        let result = handle.await.expect("the runtime never panics");
        check(i, &result);
        assert!(ids.insert(result.call_id));
    }
    assert_eq!(ids.len(), 2000);
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        (1..=8).contains(&peak),
        "peak concurrency {peak} breaks the limit of 8"
    );
}

#[tokio::test]
async fn a_batch_of_two_thousand_keeps_call_order_and_the_limit() {
    support::quiet_deliberate_panics();
    let gauge = Gauge::new();
    let peak = gauge.peak.clone();
    let runtime = runtime(gauge);
    let results = runtime.call_batch((0..2000).map(mixed_call)).await;
    assert_eq!(results.len(), 2000);
    for (i, result) in results.iter().enumerate() {
        check(i, result);
    }
    let peak = peak.load(Ordering::SeqCst);
    assert!(peak > 1, "batch calls overlap (peak {peak})");
    assert!(peak <= 8, "peak concurrency {peak} breaks the limit of 8");
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_ignores_cancellation_is_dropped_after_the_grace() {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(Hangs { timeout: None }))
        .unwrap();
    let runtime = ToolRuntime::builder(registry)
        .cancellation_grace(Duration::from_millis(50))
        .build();
    let token = CancellationToken::new();
    let call = runtime.call_with(
        ToolCall::new("c", "hangs", json!({})),
        CallOptions::new().cancellation(token.clone()),
    );
    let started = tokio::time::Instant::now();
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(10)).await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(call, cancel);
    assert!(matches!(result.outcome, Err(ToolError::Cancelled)));
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(60),
        "10 ms, then the 50 ms grace"
    );
}

//! Soak: 1 000 000 calls through `ToolRuntime` and 10 000 runs through
//! `Agent` with a scripted model, mixing good, invalid, unknown, panicking,
//! timing-out, cancelled and external calls. It checks, and prints:
//!
//! - every call has exactly one result, for its id, of the kind its mix
//!   asks for;
//! - resident memory, sampled every 100 000 calls, stays flat (the last
//!   sample against the first, after warm-up);
//! - tokio's count of live tasks returns to its baseline;
//! - no concurrency permit leaks: at the end, the limit still admits its
//!   full count of calls at once.
//!
//! Run: `cargo bench --bench soak` (about a minute in release; a failed
//! check exits non-zero).

use std::sync::Arc;
use std::time::{Duration, Instant};

use behest::prelude::*;
use behest::{CallOptions, CancellationToken, ExternalTool, ToolError};
use serde_json::json;

const CALLS: usize = 1_000_000;
const BATCH: usize = 1_000;
const SAMPLE_EVERY: usize = 100_000;
const RUNS: usize = 10_000;
const CONCURRENCY: usize = 64;

/// Add two numbers.
#[behest::tool]
async fn add(a: i64, b: i64) -> i64 {
    a.wrapping_add(b)
}

/// Always panics.
#[behest::tool]
fn explode(reason: String) -> String {
    panic!("{reason}")
}

/// Sleeps far past its timeout (a sleep that ends before the timeout is
/// next polled would finish: the timeout polls the call first).
#[behest::tool(timeout = "1ms")]
async fn dawdle() -> String {
    tokio::time::sleep(Duration::from_secs(3600)).await;
    "late".to_owned()
}

/// Waits until it is cancelled.
#[behest::tool]
async fn wait(#[ctx] context: behest::ToolContext) -> String {
    context.cancellation().cancelled().await;
    "cancelled".to_owned()
}

/// Waits at a barrier: as many at once as the limit admits.
#[behest::tool]
async fn gather(#[ctx] context: behest::ToolContext) -> String {
    let barrier = context.state::<Arc<tokio::sync::Barrier>>().expect("state");
    barrier.wait().await;
    "met".to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Good,
    Invalid,
    Unknown,
    Panicked,
    TimedOut,
    Cancelled,
    External,
}

const MIX: [Kind; 7] = [
    Kind::Good,
    Kind::Invalid,
    Kind::Unknown,
    Kind::Panicked,
    Kind::TimedOut,
    Kind::Cancelled,
    Kind::External,
];

fn call_of(kind: Kind, id: String) -> ToolCall {
    match kind {
        Kind::Good => ToolCall::new(id, "add", json!({"a": 1, "b": 2})),
        Kind::Invalid => ToolCall::new(id, "add", Value::String(r#"{"a": "one"}"#.into())),
        Kind::Unknown => ToolCall::new(id, "ad", json!({})),
        Kind::Panicked => ToolCall::new(id, "explode", json!({"reason": "boom"})),
        Kind::TimedOut => ToolCall::new(id, "dawdle", json!({})),
        Kind::Cancelled => ToolCall::new(id, "wait", json!({})),
        Kind::External => ToolCall::new(id, "lookup", json!({"key": "k"})),
    }
}

fn matches_kind(kind: Kind, outcome: &Result<ToolOutput, ToolError>) -> bool {
    matches!(
        (kind, outcome),
        (Kind::Good, Ok(_))
            | (Kind::Invalid, Err(ToolError::InvalidArguments { .. }))
            | (Kind::Unknown, Err(ToolError::NotFound { .. }))
            | (Kind::Panicked, Err(ToolError::Panicked { .. }))
            | (Kind::TimedOut, Err(ToolError::Timeout { .. }))
            | (Kind::Cancelled, Err(ToolError::Cancelled))
            | (Kind::External, Err(ToolError::NotImplemented))
    )
}

fn resident_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|field| field.parse().ok())
        .unwrap_or(0);
    pages * 4
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(Add)
        .and_then(|r| r.with(Explode))
        .and_then(|r| r.with(Dawdle))
        .and_then(|r| r.with(Wait))
        .and_then(|r| r.with(Gather))
        .and_then(|r| {
            r.with(ExternalTool::new(
                "lookup",
                "Look a key up elsewhere.",
                json!({"type": "object", "properties": {"key": {"type": "string"}}}),
            ))
        })
        .expect("the tools register")
}

fn main() {
    // 140 000 panics would each print a backtrace.
    std::panic::set_hook(Box::new(|_| {}));
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut failures = Vec::new();
    tokio.block_on(async {
        let barrier = Arc::new(tokio::sync::Barrier::new(CONCURRENCY));
        let runtime = ToolRuntime::builder(registry())
            .max_concurrent_calls(CONCURRENCY)
            .cancellation_grace(Duration::from_millis(1))
            .state(barrier)
            .build();
        let metrics = tokio::runtime::Handle::current().metrics();
        let tasks_before = metrics.num_alive_tasks();

        let started = Instant::now();
        let mut samples = Vec::new();
        let mut wrong = 0usize;
        for batch in 0..CALLS / BATCH {
            let kinds: Vec<Kind> = (0..BATCH).map(|i| MIX[(batch + i) % MIX.len()]).collect();
            let calls: Vec<ToolCall> = kinds
                .iter()
                .enumerate()
                .map(|(i, kind)| call_of(*kind, format!("{batch}-{i}")))
                .collect();
            // The `wait` calls share a token, cancelled a moment later
            // (before or after they start: either way they are cancelled).
            let token = CancellationToken::new();
            let running = calls.into_iter().zip(&kinds).map(|(call, kind)| {
                let mut options = CallOptions::new();
                if *kind == Kind::Cancelled {
                    options = options.cancellation(token.clone());
                }
                runtime.call_with(call, options)
            });
            let canceller = {
                let token = token.clone();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                    token.cancel();
                })
            };
            let results = futures::future::join_all(running).await;
            canceller.await.unwrap();
            if results.len() != BATCH {
                failures.push(format!("batch {batch}: {} results", results.len()));
            }
            for (i, (result, kind)) in results.iter().zip(&kinds).enumerate() {
                if result.call_id != format!("{batch}-{i}") || !matches_kind(*kind, &result.outcome)
                {
                    wrong += 1;
                    if wrong <= 5 {
                        failures.push(format!("{kind:?}: {result:?}"));
                    }
                }
            }
            let done = (batch + 1) * BATCH;
            if done.is_multiple_of(SAMPLE_EVERY) {
                samples.push((done, resident_kib()));
            }
        }
        let calls_took = started.elapsed();
        println!(
            "{CALLS} calls in {calls_took:.1?} ({:.0} calls/s), {wrong} with a wrong result",
            CALLS as f64 / calls_took.as_secs_f64()
        );
        for (done, kib) in &samples {
            println!("  after {done:>7} calls: resident {kib} KiB");
        }
        if wrong > 0 {
            failures.push(format!("{wrong} calls had a wrong result"));
        }
        // Flat: the last sample within 10% (and 8 MiB) of the second (the
        // first is still warming allocator pools).
        if let (Some(&(_, warm)), Some(&(_, last))) = (samples.get(1), samples.last()) {
            let growth = last.saturating_sub(warm);
            println!(
                "  growth after warm-up: {growth} KiB ({:.2}x)",
                last as f64 / warm as f64
            );
            if growth > (warm / 10).max(8 * 1024) {
                failures.push(format!("resident memory grew from {warm} to {last} KiB"));
            }
        }

        // Runs: the model calls a good, an invalid and an external tool,
        // then answers; the external call is answered by a handler.
        let started = Instant::now();
        let mut incomplete = 0usize;
        for run in 0..RUNS {
            let model = ScriptedModel::new([
                ScriptedTurn::tool_calls([
                    ToolCall::new("r1", "add", json!({"a": run, "b": 1})),
                    ToolCall::new("r2", "add", json!({"a": "x"})),
                    ToolCall::new("r3", "lookup", json!({"key": "k"})),
                    ToolCall::new("r4", "explode", json!({"reason": "r"})),
                ]),
                ScriptedTurn::text("done"),
            ]);
            let agent = Agent::new(model, runtime.clone());
            let invocation = agent.invoke([Message::user("go")]);
            invocation.on(|envelope, control| {
                if let EventKind::Tool(ToolStreamEvent::Call {
                    call,
                    external: true,
                }) = envelope.kind
                {
                    control
                        .resolve(&call.call_id, Ok(ToolOutput::text("v")))
                        .ok();
                }
            });
            let outcome = invocation.await;
            let results = outcome
                .transcript()
                .iter()
                .filter(|message| matches!(message, Message::ToolResult(_)))
                .count();
            if outcome.text() != Some("done") || results != 4 {
                incomplete += 1;
                if incomplete <= 3 {
                    failures.push(format!("run {run}: {outcome:?}"));
                }
            }
        }
        let runs_took = started.elapsed();
        println!(
            "{RUNS} runs in {runs_took:.1?} ({:.0} runs/s), {incomplete} incomplete; resident {} KiB",
            RUNS as f64 / runs_took.as_secs_f64(),
            resident_kib()
        );

        // Permits: the limit admits its full count at once (a leaked
        // permit would leave the barrier one short, forever).
        let gathering = (0..CONCURRENCY).map(|i| ToolCall::new(format!("g{i}"), "gather", json!({})));
        let gathered = tokio::time::timeout(Duration::from_secs(10), runtime.call_batch(gathering)).await;
        match gathered {
            Ok(results) if results.iter().all(|r| r.outcome.is_ok()) => {
                println!("  {CONCURRENCY} calls admitted at once at the end: no permit leaked");
            }
            other => failures.push(format!("the limit no longer admits {CONCURRENCY} calls: {other:?}")),
        }

        // Tasks: whatever calls spawned has ended.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let tasks_after = metrics.num_alive_tasks();
        println!("  live tokio tasks: {tasks_before} before, {tasks_after} after");
        if tasks_after > tasks_before {
            failures.push(format!("{} tasks outlived their calls", tasks_after - tasks_before));
        }
    });
    if failures.is_empty() {
        println!("soak: every check held");
    } else {
        for failure in &failures {
            eprintln!("soak: {failure}");
        }
        std::process::exit(1);
    }
}

//! The call rows of the performance table as paired ratios. Each case and
//! its floor (the cases of `call_overhead`) are timed in alternating
//! batches of 1 024 calls (16 for the 50 KB row), the order flipped every
//! round, and a row's ratio is the median of the rounds' ratios. A shared
//! machine's slow and fast stretches then fall on both sides of a ratio
//! alike, where criterion, timing one case for seconds and then the next,
//! lets them fall on one side.
//!
//! The rows:
//! 1. a call from JSON text (`c_runtime/10_tools`) against
//!    `serde_json::from_str` into a derived struct and the call
//!    (`b_from_str`);
//! 2. the same with a 50 KB string argument (`c50`, `b50`);
//! 3. a call from a parsed `Value` (`d_value_route/10_tools`) against a
//!    compiled `jsonschema` check, `serde_json::from_value` and the call
//!    (`parts/value_floor`).
//!
//! Run: `cargo bench --bench call_ratios [-- ROUNDS]`: 10 000 rounds by
//! default, after 200 not counted.

#[path = "call_cases/mod.rs"]
mod call_cases;

use std::future::Future;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use behest::ToolCall;
use call_cases::{describe, long_text, runtime_with, schema, Args, Batches, Describe, BATCH, TEXT};
use serde_json::Value;

/// Rounds run before those counted, to warm caches and the allocator.
const WARM_UP: usize = 200;

/// Calls a side in a round of the 50 KB row, whose calls take 150 times
/// longer than the others': a batch of 1 024 would hold 100 MB of inputs
/// and outputs, and making and dropping them would take most of the run.
const LONG_CALLS: usize = 16;

/// One side of a pair: its inputs, its routine and its buffers.
struct Side<I, O, S, R> {
    setup: S,
    routine: R,
    batches: Batches<I, O>,
}

impl<I, O, F, S, R> Side<I, O, S, R>
where
    S: FnMut() -> I,
    R: FnMut(I) -> F,
    F: Future<Output = O>,
{
    fn new(setup: S, routine: R) -> Self {
        Self {
            setup,
            routine,
            batches: Batches::new(),
        }
    }

    /// Nanoseconds a call in one batch of `calls`.
    fn batch(&mut self, rt: &tokio::runtime::Runtime, calls: usize) -> f64 {
        let elapsed: Duration = self
            .batches
            .time(rt, calls, &mut self.setup, &mut self.routine);
        elapsed.as_nanos() as f64 / calls as f64
    }
}

/// What a row measured: the medians of its two sides, in nanoseconds a
/// call, and its rounds' ratios, sorted.
struct Row {
    case: f64,
    floor: f64,
    ratios: Vec<f64>,
}

impl Row {
    fn ratio_at(&self, quantile: f64) -> f64 {
        self.ratios[((self.ratios.len() - 1) as f64 * quantile).round() as usize]
    }
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// Runs `case` and `floor` in `rounds` alternating rounds (after
/// [`WARM_UP`]) of `calls` calls a side.
fn paired<I1, O1, F1, S1, R1, I2, O2, F2, S2, R2>(
    rt: &tokio::runtime::Runtime,
    rounds: usize,
    calls: usize,
    mut case: Side<I1, O1, S1, R1>,
    mut floor: Side<I2, O2, S2, R2>,
) -> Row
where
    S1: FnMut() -> I1,
    R1: FnMut(I1) -> F1,
    F1: Future<Output = O1>,
    S2: FnMut() -> I2,
    R2: FnMut(I2) -> F2,
    F2: Future<Output = O2>,
{
    let (mut cases, mut floors, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..WARM_UP + rounds {
        let (c, f) = if round % 2 == 0 {
            let c = case.batch(rt, calls);
            (c, floor.batch(rt, calls))
        } else {
            let f = floor.batch(rt, calls);
            (case.batch(rt, calls), f)
        };
        if round >= WARM_UP {
            cases.push(c);
            floors.push(f);
            ratios.push(c / f);
        }
    }
    ratios.sort_by(f64::total_cmp);
    Row {
        case: median(cases),
        floor: median(floors),
        ratios,
    }
}

fn main() {
    // `cargo bench` passes `--bench`; a number among the arguments sets
    // the rounds.
    let rounds = std::env::args()
        .skip(1)
        .find_map(|arg| arg.parse::<usize>().ok())
        .unwrap_or(10_000)
        .max(1);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runtime = runtime_with(10, Arc::new(Describe));
    let runtime = &runtime;
    let long = long_text();
    let compiled = jsonschema::validator_for(&schema()).unwrap();
    let compiled = &compiled;

    let from_str = |text: String| async move {
        let args: Args = serde_json::from_str(black_box(&text)).unwrap();
        describe(args.count, args.label, args.verbose).await
    };
    let call = |call: ToolCall| async move {
        let result = runtime.call(black_box(call)).await;
        assert!(result.outcome.is_ok());
        result
    };

    println!(
        "{rounds} rounds of {BATCH} calls a side ({LONG_CALLS} for the 50 KB row); \
         ns a call (medians); ratio: median of the rounds' (quartiles)"
    );
    report(
        "1. call from JSON text, 3 small args",
        2.0,
        paired(
            &rt,
            rounds,
            BATCH,
            Side::new(|| ToolCall::new("call_1", "describe", TEXT), call),
            Side::new(|| TEXT.to_owned(), from_str),
        ),
    );
    report(
        "2. call from JSON text, 50 KB string arg",
        1.1,
        paired(
            &rt,
            rounds,
            LONG_CALLS,
            Side::new(|| ToolCall::new("call_1", "describe", long.as_str()), call),
            Side::new(|| long.clone(), from_str),
        ),
    );
    report(
        "3. call from a parsed Value, 3 small args",
        1.5,
        paired(
            &rt,
            rounds,
            BATCH,
            Side::new(
                || {
                    ToolCall::new(
                        "call_1",
                        "describe",
                        serde_json::from_str::<Value>(TEXT).unwrap(),
                    )
                },
                call,
            ),
            Side::new(
                || serde_json::from_str::<Value>(TEXT).unwrap(),
                |value: Value| async move {
                    assert!(compiled.is_valid(black_box(&value)));
                    let args: Args = serde_json::from_value(value).unwrap();
                    describe(args.count, args.label, args.verbose).await
                },
            ),
        ),
    );
}

fn report(name: &str, goal: f64, row: Row) {
    println!(
        "{name}: case {:.1} ns, floor {:.1} ns, ratio {:.3} ({:.3}–{:.3}), goal ≤ {goal}",
        row.case,
        row.floor,
        row.ratio_at(0.5),
        row.ratio_at(0.25),
        row.ratio_at(0.75),
    );
}

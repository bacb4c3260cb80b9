//! The call rows of the performance table as paired ratios. Each case and
//! its floor (the cases of `call_overhead`) are timed in alternating
//! batches, the order flipped every round, and a row's ratio is the median
//! of the rounds' ratios. A shared machine's slow and fast stretches then
//! fall on both sides of a ratio alike, where criterion, timing one case
//! for seconds and then the next, lets them fall on one side.
//!
//! Each side's inputs are made before its timed part, and each output is
//! dropped inside it, as a caller drops it. The tools sit in a registry of
//! 100.
//!
//! The rows:
//! 1. a call from JSON text (`describe`, three small arguments) against
//!    `serde_json::from_str` into a derived struct and the call;
//! 2. the same with a 50 KB string argument, in batches of 16 calls rather
//!    than 1 024;
//! 3. a call from a parsed `Value` against a compiled `jsonschema` check,
//!    `serde_json::from_value` and the call;
//! 4. a call from JSON text of the shape users write (`place_order`: nine
//!    arguments of mixed types, a nested struct, an enum, an optional and
//!    two defaulted ones) against `from_str` into a derived struct and the
//!    call;
//! 5. the same from a parsed `Value`, against the tool's own schema
//!    compiled by `jsonschema`, `from_value` and the call;
//! 6. and 7. rows 1 and 4 with the `ToolCall` made inside the timed part,
//!    as a harness that writes `runtime.call(ToolCall::new(..))` in its
//!    loop times it: three strings copied into place, which a model's
//!    answer, already parsed, has made before the call runs.
//!
//! Both sides of a row run on one Tokio runtime with its drivers enabled
//! (`call_overhead` runs its `parts/*` floors on one without; the figures
//! did not differ beyond the noise).
//!
//! Run: `cargo bench --bench call_ratios [-- ROUNDS] [rows=4,5]`: 10 000 rounds by
//! default, after 200 not counted. Run without `--bench` (as `cargo test
//! --benches` does), it makes a few rounds, to show that it works.

#[path = "call_cases/mod.rs"]
mod call_cases;

use std::future::Future;
use std::sync::Arc;

use behest::{ToolCall, ToolRuntime};
use call_cases::{
    from_str_floor, long_text, order_from_str_floor, order_value_floor, runtime_with, schema,
    through, value_floor, Batches, Describe, PlaceOrder, BATCH, ORDER, TEXT,
};
use serde_json::Value;
use tokio::runtime::Runtime;

/// Rounds run before those counted, to warm caches and the allocator.
const WARM_UP: usize = 200;

/// Calls a side in a round of the 50 KB row, whose calls take 150 times
/// longer than the others': a batch of 1 024 would hold 100 MB of inputs
/// and outputs, and making and dropping them would take most of the run.
const LONG_CALLS: usize = 16;

/// One side of a row: times a batch of `calls` calls of `routine` on
/// inputs made by `setup` (outside the timed part), in nanoseconds a call.
fn side<I, O, F>(
    mut setup: impl FnMut() -> I,
    mut routine: impl FnMut(I) -> F,
) -> impl FnMut(&Runtime, usize) -> f64
where
    F: Future<Output = O>,
{
    let mut batches = Batches::new();
    move |rt, calls| {
        let elapsed = batches.time(rt, calls, &mut setup, &mut routine);
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

/// Times `case` and `floor` in `warm_up + rounds` rounds of `calls` calls
/// a side, the first side alternating, and keeps the last `rounds`.
fn paired(
    rt: &Runtime,
    (warm_up, rounds): (usize, usize),
    calls: usize,
    mut case: impl FnMut(&Runtime, usize) -> f64,
    mut floor: impl FnMut(&Runtime, usize) -> f64,
) -> Row {
    let (mut cases, mut floors, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..warm_up + rounds {
        let (c, f) = if round % 2 == 0 {
            let c = case(rt, calls);
            (c, floor(rt, calls))
        } else {
            let f = floor(rt, calls);
            (case(rt, calls), f)
        };
        if round >= warm_up {
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

/// Measures and prints row `number` if it is among `selected` (all rows
/// when none is).
fn report(selected: &[usize], number: usize, name: &str, row: impl FnOnce() -> Row) {
    if !selected.is_empty() && !selected.contains(&number) {
        return;
    }
    let row = row();
    println!(
        "{number}. {name}: case {:.1} ns, floor {:.1} ns, ratio {:.3} ({:.3}–{:.3})",
        row.case,
        row.floor,
        row.ratio_at(0.5),
        row.ratio_at(0.25),
        row.ratio_at(0.75),
    );
}

/// A row of calls of `tool` from the JSON text `text` against `floor` on
/// the same text; with `in_loop`, each `ToolCall` is made inside the timed
/// part.
fn text_row<F: Future<Output = String>>(
    rt: &Runtime,
    rounds: (usize, usize),
    (runtime, tool): (&ToolRuntime, &'static str),
    text: &'static str,
    floor: impl FnMut(&'static str) -> F,
    in_loop: bool,
) -> Row {
    let floor = side(move || text, floor);
    if in_loop {
        let call = move |()| through(runtime, ToolCall::new("call_1", tool, text));
        paired(rt, rounds, BATCH, side(|| (), call), floor)
    } else {
        let call = ToolCall::new("call_1", tool, text);
        let case = side(move || call.clone(), |call| through(runtime, call));
        paired(rt, rounds, BATCH, case, floor)
    }
}

/// A row of calls of `tool` from the parsed `Value` of `text` against
/// `floor` on the same `Value`.
fn value_row<F: Future<Output = String>>(
    rt: &Runtime,
    rounds: (usize, usize),
    (runtime, tool): (&ToolRuntime, &'static str),
    text: &'static str,
    floor: impl FnMut(Value) -> F,
) -> Row {
    let parsed = move || serde_json::from_str::<Value>(text).unwrap();
    let case = side(
        move || ToolCall::new("call_1", tool, parsed()),
        |call| through(runtime, call),
    );
    paired(rt, rounds, BATCH, case, side(parsed, floor))
}

fn main() {
    // `cargo bench` passes `--bench`; a number among the arguments sets
    // the rounds, and `rows=4,5` picks rows (to profile one).
    let args: Vec<String> = std::env::args().skip(1).collect();
    let selected: Vec<usize> = args
        .iter()
        .filter_map(|arg| arg.strip_prefix("rows="))
        .flat_map(|rows| rows.split(','))
        .filter_map(|row| row.parse().ok())
        .collect();
    let rounds = if args.iter().any(|arg| arg == "--bench") {
        let rounds = args.iter().find_map(|arg| arg.parse::<usize>().ok());
        (WARM_UP, rounds.unwrap_or(10_000).max(1))
    } else {
        (0, 3)
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let small = runtime_with(100, Arc::new(Describe));
    let orders = runtime_with(100, Arc::new(PlaceOrder));
    let long = long_text();
    let compiled = jsonschema::validator_for(&schema()).unwrap();
    let order_schema = orders
        .registry()
        .spec("place_order")
        .unwrap()
        .parameters
        .clone();
    let order_compiled = jsonschema::validator_for(&order_schema).unwrap();

    println!(
        "{} rounds of {BATCH} calls a side ({LONG_CALLS} for the 50 KB row); \
         ns a call (medians); ratio: median of the rounds' (quartiles)",
        rounds.1
    );
    report(&selected, 1, "call from JSON text, 3 small args", || {
        text_row(
            &rt,
            rounds,
            (&small, "describe"),
            TEXT,
            from_str_floor,
            false,
        )
    });
    report(
        &selected,
        2,
        "call from JSON text, 50 KB string arg",
        || {
            paired(
                &rt,
                rounds,
                LONG_CALLS,
                side(
                    || ToolCall::new("call_1", "describe", long.as_str()),
                    |call| through(&small, call),
                ),
                side(|| long.as_str(), from_str_floor),
            )
        },
    );
    report(
        &selected,
        3,
        "call from a parsed Value, 3 small args",
        || {
            let floor = |value| value_floor(&compiled, value);
            value_row(&rt, rounds, (&small, "describe"), TEXT, floor)
        },
    );
    report(
        &selected,
        4,
        "call from JSON text, an order (9 args, nested struct, enum)",
        || {
            let order = (&orders, "place_order");
            text_row(&rt, rounds, order, ORDER, order_from_str_floor, false)
        },
    );
    report(&selected, 5, "call from a parsed Value, an order", || {
        let floor = |value| order_value_floor(&order_compiled, value);
        value_row(&rt, rounds, (&orders, "place_order"), ORDER, floor)
    });
    // A harness that writes `runtime.call(ToolCall::new(..))` in its loop
    // times the making of the call too: three strings copied into place,
    // which the model's answer, already parsed, has made before a call
    // runs. The floor reads the same text where it is.
    report(
        &selected,
        6,
        "row 1, the ToolCall made inside the timed part",
        || {
            text_row(
                &rt,
                rounds,
                (&small, "describe"),
                TEXT,
                from_str_floor,
                true,
            )
        },
    );
    report(
        &selected,
        7,
        "row 4, the ToolCall made inside the timed part",
        || {
            let order = (&orders, "place_order");
            text_row(&rt, rounds, order, ORDER, order_from_str_floor, true)
        },
    );
}

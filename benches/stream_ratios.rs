//! Stream assembly as a paired ratio: the 1 MB Chat answer of
//! `model_streams`' `assemble/*`, read streamed (about 12 300 server-sent
//! events, each parsed and pushed into the assembler, each piece sent to a
//! delta sink) and read whole, one request of each per round, the order
//! flipped every round. The same for Bedrock: the answer as ConverseStream's
//! AWS event-stream frames (each frame's checksums checked) against
//! Converse's whole JSON. And the cost of signing: an agent's streamed
//! Bedrock turn (a 40-message conversation and ten tools out, about a
//! thousand tokens back) signed with SigV4 against the same
//! turn with an API key (no signature): signing should cost no more than
//! 5 % of a turn's client-side work; measured in plain HTTP on loopback,
//! and over TLS (a local server with the certificate of `benches/data`), as
//! every Bedrock request goes. The ratio is the median of the rounds' ratios, which
//! a shared machine's slow stretches move far less than criterion's
//! one-case-after-another estimate.
//!
//! Run: `cargo bench --bench stream_ratios --features models [-- ROUNDS]`:
//! 500 rounds by default, after 20 not counted. Run without `--bench` (as
//! `cargo test --benches` does), it makes a few rounds, to show that it
//! works.

#[path = "stream_cases/mod.rs"]
mod stream_cases;

use std::future::Future;
use std::time::Instant;

use stream_cases::Reads;
use tokio::runtime::Runtime;

/// Rounds run before those counted, to warm the connections and caches.
const WARM_UP: usize = 20;

/// One read, timed.
type Read<'a> = &'a dyn Fn() -> f64;

/// Milliseconds of one read of the answer.
fn time(rt: &Runtime, read: impl Future<Output = ()>) -> f64 {
    let start = Instant::now();
    rt.block_on(read);
    start.elapsed().as_secs_f64() * 1e3
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a number among the arguments sets
    // the rounds.
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (warm_up, rounds) = if args.iter().any(|arg| arg == "--bench") {
        let rounds = args.iter().find_map(|arg| arg.parse::<usize>().ok());
        (WARM_UP, rounds.unwrap_or(500).max(1))
    } else {
        (0, 3)
    };
    let reads = Reads::new();
    let pairs: [(&str, Read<'_>, Read<'_>); 4] = [
        (
            "4. 1 MB Chat answer streamed",
            &|| time(&reads.rt, reads.streamed()),
            &|| time(&reads.rt, reads.whole()),
        ),
        (
            "5. 1 MB Bedrock answer in event-stream frames",
            &|| time(&reads.rt, reads.converse_streamed()),
            &|| time(&reads.rt, reads.converse_whole()),
        ),
        (
            "6. Bedrock turn signed (SigV4) against one with an API key",
            &|| time(&reads.rt, reads.short_turn(true)),
            &|| time(&reads.rt, reads.short_turn(false)),
        ),
        (
            "7. the same over TLS, as every Bedrock request goes",
            &|| time(&reads.rt, reads.short_turn_tls(true)),
            &|| time(&reads.rt, reads.short_turn_tls(false)),
        ),
    ];
    println!("{rounds} rounds; ms a read (medians); ratio: median of the rounds' (quartiles)");
    for (label, read_case, read_floor) in pairs {
        let (mut cases, mut floors, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..warm_up + rounds {
            let (case, floor) = if round % 2 == 0 {
                let case = read_case();
                (case, read_floor())
            } else {
                let floor = read_floor();
                (read_case(), floor)
            };
            if round >= warm_up {
                cases.push(case);
                floors.push(floor);
                ratios.push(case / floor);
            }
        }
        ratios.sort_by(f64::total_cmp);
        let at = |quantile: f64| ratios[((ratios.len() - 1) as f64 * quantile).round() as usize];
        println!(
            "{label}: case {:.3} ms, baseline {:.3} ms, ratio {:.3} ({:.3}–{:.3})",
            median(cases),
            median(floors),
            at(0.5),
            at(0.25),
            at(0.75),
        );
    }
}

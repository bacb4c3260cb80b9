//! What a run's loop costs as it grows, and what stopping costs.
//!
//! - **Per step**: scripted runs of 10, 100 and 1 000 rounds of one tool
//!   call; the time a round takes in the long runs against the short
//!   (flat: 1.0).
//! - **State size**: the JSON of a run stopped after 10, 100 and 1 000
//!   rounds, in bytes per round (linear: each against the shortest's, 1.0).
//! - **Stop and resume**: a run whose refund waits for an approval, stopped
//!   there, its state written to JSON, read back, approved and gone on from,
//!   against the same run approved in process by a handler.
//!
//! Ratios are against a baseline measured in the same run. Run:
//! `cargo bench --bench run_steps` (a number sets the rounds of each
//! measure, 30 unless given).

use std::future::IntoFuture;
use std::time::{Duration, Instant};

use behest::prelude::*;
use behest::run::{RunState, ScriptedTurn};

/// Look an order up.
#[behest::tool]
fn look_up(order: u32) -> String {
    format!("order {order}: paid")
}

/// Refund an order, once a person approves.
#[behest::tool(needs_approval)]
fn refund(order: u32) -> String {
    format!("refunded {order}")
}

fn tools() -> ToolRuntime {
    ToolRuntime::new(
        ToolRegistry::new()
            .with(LookUp)
            .unwrap()
            .with(Refund)
            .unwrap(),
    )
}

/// `rounds` look-ups, then a refund that waits (when `refund`), then the
/// answer.
fn agent(rounds: usize, refund: bool) -> Agent {
    let mut turns: Vec<ScriptedTurn> = (0..rounds)
        .map(|n| {
            ScriptedTurn::tool_calls([ToolCall::new(
                format!("c{n}"),
                "look_up",
                format!(r#"{{"order": {n}}}"#),
            )])
        })
        .collect();
    if refund {
        turns.push(ScriptedTurn::tool_calls([ToolCall::new(
            "r",
            "refund",
            r#"{"order": 1}"#,
        )]));
    }
    turns.push(ScriptedTurn::text("done"));
    Agent::new(ScriptedModel::new(turns), tools()).max_steps(rounds + 2)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rounds = if args.iter().any(|arg| arg == "--bench") {
        args.iter()
            .find_map(|arg| arg.parse::<usize>().ok())
            .unwrap_or(30)
            .max(1)
    } else {
        1
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    // Per step.
    let sizes = [10, 100, 1_000];
    let per_step: Vec<Duration> = sizes
        .iter()
        .map(|&steps| {
            let samples = (0..rounds)
                .map(|_| {
                    let agent = agent(steps, false);
                    let started = Instant::now();
                    let outcome = rt.block_on(agent.invoke([Message::user("go")]).into_future());
                    let took = started.elapsed();
                    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
                    took / steps as u32
                })
                .collect();
            median(samples)
        })
        .collect();
    println!("per step (median of {rounds}):");
    for (steps, took) in sizes.iter().zip(&per_step) {
        println!(
            "  {steps:>5} rounds: {:>8.2} us a round, {:.2}x the 10-round run's",
            took.as_secs_f64() * 1e6,
            took.as_secs_f64() / per_step[0].as_secs_f64()
        );
    }

    // State size.
    println!("state size:");
    let mut first = None;
    for steps in sizes {
        let outcome = rt.block_on(
            agent(steps, true)
                .invoke([Message::user("go")])
                .pause_at_waits()
                .into_future(),
        );
        let state = outcome.paused().expect("the refund waits");
        let bytes = serde_json::to_vec(state).unwrap().len();
        let per_round = bytes as f64 / steps as f64;
        let base = *first.get_or_insert(per_round);
        println!(
            "  {steps:>5} rounds: {bytes:>8} bytes, {per_round:.0} a round, {:.2}x the 10-round state's",
            per_round / base
        );
    }

    // Stop and resume, against approving in process.
    let steps = 10;
    let in_process: Vec<Duration> = (0..rounds)
        .map(|_| {
            let agent = agent(steps, true);
            let started = Instant::now();
            let run = agent.invoke([Message::user("go")]);
            run.on(|envelope, control| {
                if let EventKind::Tool(ToolStreamEvent::ApprovalRequested { call }) = envelope.kind
                {
                    control.approve(&call.call_id).unwrap();
                }
            });
            let outcome = rt.block_on(run.into_future());
            let took = started.elapsed();
            assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
            took
        })
        .collect();
    let stopped: Vec<Duration> = (0..rounds)
        .map(|_| {
            let agent = agent(steps, true);
            let started = Instant::now();
            let outcome = rt.block_on(
                agent
                    .invoke([Message::user("go")])
                    .pause_at_waits()
                    .into_future(),
            );
            let written = serde_json::to_string(outcome.paused().unwrap()).unwrap();
            let mut state: RunState = serde_json::from_str(&written).unwrap();
            state.approve("r").unwrap();
            let outcome = rt.block_on(agent.resume(state).into_future());
            let took = started.elapsed();
            assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
            took
        })
        .collect();
    let (in_process, stopped) = (median(in_process), median(stopped));
    println!(
        "stop and resume ({steps} rounds, then the approval): {:.1} us against {:.1} us approved in process: {:.2}x",
        stopped.as_secs_f64() * 1e6,
        in_process.as_secs_f64() * 1e6,
        stopped.as_secs_f64() / in_process.as_secs_f64()
    );
}

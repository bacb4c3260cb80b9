//! A run streamed to a chat front end against the run's event stream
//! alone, as a paired ratio: the same run (200 model turns, each streaming
//! its text in pieces and calling a tool) with its events drained as they
//! come, and with each event also turned into the AI SDK's UI message
//! chunks, or AG-UI's events, and framed as server-sent events. Each round
//! runs the three, the order turned every round; each ratio is the median
//! of the rounds' ratios.
//!
//! Run: `cargo bench --bench ui_stream --features ui [-- ROUNDS]`: 200
//! rounds by default, after 10 not counted. Run without `--bench` (as
//! `cargo test --benches` does), it makes a few rounds, to show that it
//! works.

use std::time::Instant;

use behest::prelude::*;
use behest::run::{Envelope, ScriptedTurn};
use behest::ui::ag_ui::AgUiStream;
use behest::ui::ai_sdk::UiMessageStream;
use futures::StreamExt;
use serde_json::json;
use tokio::runtime::Runtime;

const TURNS: u32 = 200;
const WARM_UP: usize = 10;

/// Look a number up.
#[tool(read_only)]
fn look_up(number: u32) -> String {
    format!("number {number} found")
}

fn agent() -> Agent {
    let text = "Let me look that number up for you, then I will tell you what I found there.";
    let turns = (1..=TURNS)
        .map(|n| {
            ScriptedTurn::reply(AssistantMessage::text(text).with_tool_calls([ToolCall::new(
                format!("c{n}"),
                "look_up",
                json!({ "number": n }),
            )]))
        })
        .chain([ScriptedTurn::text("All found.")]);
    Agent::new(
        ScriptedModel::new(turns).with_streaming(4),
        ToolRuntime::new(ToolRegistry::new().with(LookUp).unwrap()),
    )
    .max_steps(TURNS as usize + 1)
}

/// How a round's run treats each event.
#[derive(Clone, Copy)]
enum Treat {
    /// Drained: the floor.
    Drain,
    /// Turned into UI message chunks and framed.
    AiSdk,
    /// Turned into AG-UI events and framed.
    AgUi,
}

/// Runs the agent, treating each event so; milliseconds and events.
fn time(rt: &Runtime, treat: Treat) -> (f64, usize) {
    let start = Instant::now();
    let events = rt.block_on(async move {
        let run = agent().invoke([Message::user("Look them all up.")]);
        let mut events = run.events();
        let reading = tokio::spawn(async move {
            let mut ai_sdk = UiMessageStream::new("m1");
            let mut ag_ui = AgUiStream::new("t1", "r1");
            let (mut count, mut bytes) = (0, 0);
            while let Some(envelope) = events.next().await {
                count += 1;
                bytes += match treat {
                    Treat::Drain => std::hint::black_box(&envelope).sequence as usize % 2,
                    Treat::AiSdk => framed(ai_sdk.event(&envelope)),
                    Treat::AgUi => framed(ag_ui.event(&envelope)),
                };
                drop::<Envelope>(envelope);
            }
            std::hint::black_box(bytes);
            count
        });
        let outcome = run.await;
        assert!(outcome.text().is_some(), "{outcome:?}");
        reading.await.unwrap()
    });
    (start.elapsed().as_secs_f64() * 1e3, events)
}

/// The bytes of the frames the server sends.
fn framed<T: serde::Serialize>(values: Vec<T>) -> usize {
    std::hint::black_box(behest::ui::sse_frames(&values)).len()
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (warm_up, rounds) = if args.iter().any(|arg| arg == "--bench") {
        let rounds = args.iter().find_map(|arg| arg.parse::<usize>().ok());
        (WARM_UP, rounds.unwrap_or(200).max(1))
    } else {
        (0, 3)
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let order = [Treat::Drain, Treat::AiSdk, Treat::AgUi];
    let (mut floors, mut ai, mut ag, mut counts) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for round in 0..warm_up + rounds {
        let mut took = [0.0; 3];
        for step in 0..3 {
            // Turned each round, so that none always runs first.
            let index = (step + round) % 3;
            let (ms, events) = time(&rt, order[index]);
            took[index] = ms;
            counts = events;
        }
        if round >= warm_up {
            floors.push(took[0]);
            ai.push(took[1] / took[0]);
            ag.push(took[2] / took[0]);
        }
    }
    let floor = median(floors);
    println!(
        "a run of {TURNS} turns, {counts} events: the event stream alone {floor:.2} ms ({:.0} events/s)",
        counts as f64 / floor * 1e3
    );
    println!(
        "  AI SDK UI message stream: {:.3}x; AG-UI: {:.3}x (medians of {rounds} paired rounds)",
        median(ai),
        median(ag)
    );
}

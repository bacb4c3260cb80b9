//! The cost of a durable step: the same runs (three model turns, two tool
//! calls each) in process and through Restate, in one run of this binary,
//! reported per step and as a ratio. Needs `BEHEST_RESTATE_SERVER` (the
//! `restate-server` binary); without it, says skipped.
//!
//! Run: `BEHEST_RESTATE_SERVER=… cargo bench -p behest-restate --bench durable_steps`

use std::time::Instant;

use behest::run::{ModelError, ModelRequest};
use behest::{json, tool, Agent, AssistantMessage, Message, Model, ToolCall};
use behest::{ToolRegistry, ToolRuntime};
use behest_restate::DurableClient;
use server::{free_port, start_server};

#[path = "../tests/support/server.rs"]
mod server;

const RUNS: usize = 30;
/// Model turns and tool calls of one run.
const STEPS: usize = 5;

/// Two tallies, then the answer; instant, so that a step's cost is the
/// engine's.
struct Quick;

impl Model for Quick {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let n = request
            .conversation
            .iter()
            .filter(|message| matches!(message, Message::ToolResult(_)))
            .count();
        Ok(if n < 2 {
            AssistantMessage::text("").with_tool_calls([ToolCall::new(
                format!("c{n}"),
                "tally",
                json!({"step": n}),
            )])
        } else {
            AssistantMessage::text("done")
        })
    }
}

/// Count a step.
#[tool]
fn tally(step: u32) -> u32 {
    step + 1
}

fn agent() -> Agent {
    Agent::new(
        Quick,
        ToolRuntime::new(ToolRegistry::new().with(Tally).unwrap()),
    )
}

#[tokio::main]
async fn main() {
    let Some(binary) = std::env::var_os("BEHEST_RESTATE_SERVER") else {
        println!("durable_steps: skipped (BEHEST_RESTATE_SERVER is not set)");
        return;
    };
    let service = free_port();
    let server = start_server(&binary, "bench").await;
    let (ingress, admin) = (server.ingress, server.admin);
    let serving = behest_restate::serve(agent(), ([127, 0, 0, 1], service).into());
    let serving = tokio::spawn(serving);
    tokio::select! {
        served = serving => panic!("the bench's service stopped: {served:?}"),
        () = server.register(service) => {}
    }
    let client = DurableClient::new(
        format!("http://127.0.0.1:{ingress}"),
        format!("http://127.0.0.1:{admin}"),
    );
    let question = [Message::user("count")];
    // Warm both up.
    let _ = agent().invoke(question.clone()).await;
    client.start("warm", &question).await.unwrap();
    client.outcome("warm").await.unwrap();

    let started = Instant::now();
    for _ in 0..RUNS {
        let outcome = agent().invoke(question.clone()).await;
        assert_eq!(outcome.text(), Some("done"));
    }
    let in_process = started.elapsed() / RUNS as u32;
    let started = Instant::now();
    for n in 0..RUNS {
        let id = format!("bench-{n}");
        client.start(&id, &question).await.unwrap();
        let outcome = client.outcome(&id).await.unwrap();
        assert_eq!(outcome.text(), Some("done"));
    }
    let durable = started.elapsed() / RUNS as u32;
    let per_step = durable.saturating_sub(in_process) / STEPS as u32;
    println!("runs of {STEPS} steps (3 model turns, 2 tool calls), {RUNS} each, sequential");
    println!("| | per run | per step | ratio |");
    println!("|---|---|---|---|");
    println!(
        "| in process | {in_process:?} | {:?} | 1 |",
        in_process / STEPS as u32
    );
    println!(
        "| durable (Restate) | {durable:?} | {per_step:?} added | {:.0} |",
        durable.as_secs_f64() / in_process.as_secs_f64()
    );
}

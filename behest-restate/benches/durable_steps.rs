//! The cost of behest's durable runs against the same steps written on
//! restate-sdk alone, in one run of this binary against one
//! `restate-server`:
//!
//! - runs of 5 steps (3 model turns, 2 tool calls) through behest's
//!   `DurableAgent` and through `Bare`, a workflow that journals the same
//!   model turns and tool calls with `ctx.run` and nothing else, one of
//!   each per round, the order flipping every round: the median and
//!   quartiles of the rounds' ratios;
//! - the time per step of runs of 11, 201 and 1 001 steps, each way (the
//!   median of three runs), to show it flat;
//! - the bytes Restate keeps (journal and state) for a run of 1 001 steps.
//!
//! Both are served by one endpoint with Nagle's algorithm off, and called
//! the same way (one request that waits for the outcome). Needs
//! `BEHEST_RESTATE_SERVER`; without it, says skipped. Without `--bench`
//! (under `cargo test --benches`) it makes a few rounds only.
//!
//! Run: `BEHEST_RESTATE_SERVER=… cargo bench -p behest-restate --bench durable_steps`

use std::time::{Duration, Instant};

use behest::run::{ModelError, ModelRequest};
use behest::{json, tool, Agent, AssistantMessage, Message, Model, ToolCall};
use behest::{ToolRegistry, ToolRuntime};
use behest_restate::restate_sdk::prelude::Endpoint;
use behest_restate::DurableAgent;
use server::{free_port, http, start_server};

#[path = "../tests/support/server.rs"]
#[allow(dead_code)]
mod server;

/// As many tallies as the first message says (`count N`), one a turn,
/// then the answer; instant, so that a step's cost is the engine's.
struct Quick;

impl Model for Quick {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let asked = match request.conversation.first() {
            Some(Message::User { text }) => text
                .strip_prefix("count ")
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0),
            _ => 0,
        };
        let n = request
            .conversation
            .iter()
            .filter(|message| matches!(message, Message::ToolResult(_)))
            .count();
        Ok(if n < asked {
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
#[tool(idempotent)]
fn tally(step: u32) -> u32 {
    step + 1
}

/// The baseline, in a module of its own: the macro's generated client of
/// a workflow has undocumented methods.
mod bare {
    #![allow(missing_docs)]

    use super::{tally, Quick};
    use behest::conversation::ToolResultMessage;
    use behest::run::ModelRequest;
    use behest::{Message, Model, ToolCallResult, ToolOutput};
    use behest_restate::restate_sdk::prelude::*;

    /// The same steps on restate-sdk alone: each model turn and tool call a
    /// `ctx.run` entry, the transcript kept in memory.
    pub struct Bare;

    #[restate_sdk::workflow]
    impl Bare {
        /// Runs the conversation's steps to the model's answer.
        #[handler]
        async fn run(
            &self,
            ctx: WorkflowContext<'_>,
            conversation: Json<Vec<Message>>,
        ) -> Result<Json<String>, HandlerError> {
            let mut transcript = conversation.into_inner();
            for turn in 0.. {
                let reply = ctx
                    .run(|| async {
                        let request = ModelRequest::new(&transcript, &[]);
                        Ok(Json(Quick.complete(request).await?))
                    })
                    .name(format!("model turn {turn}"))
                    .await?
                    .into_inner();
                transcript.push(Message::Assistant(reply.clone()));
                if reply.tool_calls.is_empty() {
                    return Ok(Json(reply.text.unwrap_or_default()));
                }
                for call in reply.tool_calls {
                    let step = call.arguments["step"].as_u64().unwrap_or(0) as u32;
                    let output = ctx
                        .run(|| async { Ok(Json(tally(step))) })
                        .name(format!("call {}", call.call_id))
                        .await?
                        .into_inner();
                    let result = ToolCallResult {
                        call_id: call.call_id,
                        tool_name: call.tool_name,
                        outcome: Ok(ToolOutput::text(output.to_string())),
                    };
                    transcript.push(Message::ToolResult(ToolResultMessage::from(&result)));
                }
            }
            unreachable!("the loop returns")
        }
    }
}

use bare::Bare;

fn agent() -> Agent {
    Agent::new(
        Quick,
        ToolRuntime::new(ToolRegistry::new().with(Tally).unwrap()),
    )
    .max_steps(100_000)
}

/// Calls workflow `service`'s `run` for `key` and waits for its outcome.
struct Caller {
    ingress: String,
    http: reqwest::Client,
}

impl Caller {
    async fn run(&self, service: &str, key: &str, tallies: usize) -> Duration {
        let started = Instant::now();
        let answer = self
            .http
            .post(format!("{}/{service}/{key}/run", self.ingress))
            .json(&[Message::user(format!("count {tallies}"))])
            .send()
            .await
            .expect("the ingress answers");
        let status = answer.status();
        let body = answer.text().await.unwrap_or_default();
        assert!(status.is_success(), "{service} {key}: {status} {body}");
        assert!(body.contains("done"), "{service} {key}: {body}");
        started.elapsed()
    }
}

fn quartiles(mut values: Vec<f64>) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

#[tokio::main]
async fn main() {
    let Some(binary) = std::env::var_os("BEHEST_RESTATE_SERVER") else {
        println!("durable_steps: skipped (BEHEST_RESTATE_SERVER is not set)");
        return;
    };
    let full = std::env::args().any(|arg| arg == "--bench");
    let (rounds, sizes) = if full {
        (200, [5, 100, 500])
    } else {
        (4, [5, 20, 50])
    };
    let service = free_port();
    let server = start_server(&binary, "bench").await;
    let endpoint = Endpoint::builder()
        .bind(DurableAgent::new(agent()).definition())
        .bind(Bare)
        .build();
    let serving = tokio::spawn(behest_restate::serve_endpoint(
        endpoint,
        ([127, 0, 0, 1], service).into(),
    ));
    tokio::select! {
        served = serving => panic!("the bench's service stopped: {served:?}"),
        () = server.register(service) => {}
    }
    let caller = Caller {
        ingress: format!("http://127.0.0.1:{}", server.ingress),
        http: http(),
    };
    for n in 0..10 {
        caller.run("DurableAgent", &format!("warm-{n}"), 2).await;
        caller.run("Bare", &format!("warm-{n}"), 2).await;
    }

    // Runs of 5 steps, paired.
    let mut ratios = Vec::with_capacity(rounds);
    let (mut behest_times, mut bare_times) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let key = format!("five-{round}");
        let (behest, bare) = if round % 2 == 0 {
            let behest = caller.run("DurableAgent", &key, 2).await;
            (behest, caller.run("Bare", &key, 2).await)
        } else {
            let bare = caller.run("Bare", &key, 2).await;
            (caller.run("DurableAgent", &key, 2).await, bare)
        };
        ratios.push(behest.as_secs_f64() / bare.as_secs_f64());
        behest_times.push(behest.as_secs_f64() * 1e3);
        bare_times.push(bare.as_secs_f64() * 1e3);
    }
    let (low, ratio, high) = quartiles(ratios);
    println!("runs of 5 steps (3 model turns, 2 tool calls), {rounds} rounds, paired");
    println!(
        "behest-restate {:.2} ms, restate-sdk alone {:.2} ms (medians); ratio {ratio:.3} (quartiles {low:.3}-{high:.3})",
        quartiles(behest_times).1,
        quartiles(bare_times).1,
    );

    // Per step, by the run's length; and what Restate keeps.
    println!("| steps | behest-restate per step | restate-sdk alone per step | ratio | bytes kept, behest | bytes kept, alone |");
    println!("|---|---|---|---|---|---|");
    for tallies in sizes {
        let steps = 2 * tallies + 1;
        // Three runs each way, alternating: the median of each.
        let (mut behest, mut bare) = (Vec::new(), Vec::new());
        for run in 0..3 {
            let key = format!("long-{tallies}-{run}");
            behest.push(
                caller
                    .run("DurableAgent", &key, tallies)
                    .await
                    .as_secs_f64(),
            );
            bare.push(caller.run("Bare", &key, tallies).await.as_secs_f64());
        }
        let per_step = |times: Vec<f64>| Duration::from_secs_f64(quartiles(times).1 / steps as f64);
        let (behest, bare) = (per_step(behest), per_step(bare));
        let key = format!("long-{tallies}-0");
        let kept_behest = server.journal_bytes("DurableAgent", &key).await;
        let kept_bare = server.journal_bytes("Bare", &key).await;
        println!(
            "| {steps} | {behest:?} | {bare:?} | {:.3} | {kept_behest} | {kept_bare} |",
            behest.as_secs_f64() / bare.as_secs_f64()
        );
    }
}

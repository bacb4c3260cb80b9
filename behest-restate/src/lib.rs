//! Durable behest runs on [Restate](https://restate.dev).
//!
//! An in-process run ([`Agent::invoke`]) lives as long as its process: if
//! the process dies, its paid-for model turns and its pending approvals go
//! with it, and an approval can wait only as long as the process stays up.
//! This crate serves an [`Agent`]'s runs as the Restate workflow
//! `DurableAgent`, one workflow instance per run id, for runs that must
//! outlive a process, wait days for a person, or spread over machines.
//! In-process runs stay the default and lose nothing.
//!
//! # What is journaled
//! The run loop is behest's own (through
//! [`RunSteps`](behest::run::RunSteps)); Restate keeps its steps:
//! - **Every model turn** is a journal entry: after a crash, the turns the
//!   model answered come back from the journal, and the model is never
//!   asked again for them. Streaming deltas are not journaled (they are for
//!   live display); the assembled turn is.
//! - **Every tool call** is a journal entry: a call that completed never
//!   runs again. A call that was *running* when the process died runs again
//!   when the run is played back: mark tools for which that is safe
//!   `#[tool(idempotent)]`, and make the others so (an idempotency key from
//!   the call id). An error is kept as the text the model read.
//! - **External calls and approvals** are durable promises, raced against
//!   durable timers of the agent's
//!   [`external_deadline`](behest::Agent::external_deadline) and
//!   [`approval_deadline`](behest::Agent::approval_deadline): the run
//!   suspends (no process, no memory held) until someone answers through
//!   [`DurableClient::answer`] or [`DurableClient::approve`] (or Restate's
//!   ingress), whenever that is; a deadline fires even if it passed while
//!   no service ran.
//! - **Status**: [`DurableClient::status`] (the `status` handler) tells
//!   where a run stands at any time: running or waiting, the calls pending
//!   with their arguments, how many steps are done, the run's events (the
//!   `EventKind`s an in-process run emits, as JSON, streamed deltas and
//!   progress left out), and the transcript once it ended.
//! - **Cancel** through Restate ([`DurableClient::cancel`]): the run ends
//!   [`DurableOutcome::Cancelled`] with every call in its transcript
//!   answered, as in process.
//!
//! # Serving and calling
//! ```no_run
//! use behest::{Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
//! use behest_restate::DurableClient;
//!
//! # async fn demo(agent: Agent) -> Result<(), Box<dyn std::error::Error>> {
//! // The service: register http://127.0.0.1:9080 with the Restate server.
//! tokio::spawn(behest_restate::serve(agent, ([127, 0, 0, 1], 9080).into()));
//!
//! // A client, anywhere.
//! let client = DurableClient::new("http://127.0.0.1:8080", "http://127.0.0.1:9070");
//! client.start("order-42", &[Message::user("Refund order 42")]).await?;
//! let outcome = client.outcome("order-42").await?;
//! println!("{:?}", outcome.text());
//! # Ok(())
//! # }
//! ```
//! `examples/durable_agent.rs` runs a refund agent whose refunds wait for
//! approval, with the commands to try it.
//!
//! # Deploying
//! One `restate-server` binary (the npm package
//! `@restatedev/restate-server`, or Restate's own packages) serves a laptop;
//! a replicated Restate cluster serves production. The services that run
//! the agent hold no state: run as many as you like behind any load
//! balancer and register its address once; a service that dies has its runs
//! played back on another. Every service must run the same agent (tools,
//! model, options): a run played back is asked the same steps in the same
//! order.
//!
//! # Compared with running in process
//! A durable step costs a journal write (a round trip to the Restate
//! server) besides the step itself: worth it for model turns and tools that
//! take seconds, noticeable for microsecond tools: `cargo bench -p
//! behest-restate --bench durable_steps` measures it. Event handlers and
//! streams of one process's run are not shared with others: follow a
//! durable run through its status.
//!
//! [`Agent`]: behest::Agent
//! [`Agent::invoke`]: behest::Agent::invoke

mod client;
mod state;
mod steps;
mod wire;
mod workflow;

pub use client::{DurableClient, DurableClientError};
pub use wire::{Answer, Approval, DurableOutcome, Pending, Resolution, Resolve, Status};
pub use workflow::{serve, serve_endpoint, DurableAgent, DEFAULT_MAX_STEP_BYTES};

/// restate-sdk, at the version this crate builds on.
pub use restate_sdk;

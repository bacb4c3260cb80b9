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
//! [`RunSteps`](behest::run::RunSteps)), and so is the route of every
//! call: the runtime looks the tool up, validates the arguments and only
//! then routes the call (run it, ask an approval first, or wait for an
//! outside answer), as in process. Restate keeps the steps:
//! - **Every model turn** is a journal entry: after a crash, the turns the
//!   model answered come back from the journal, and the model is never
//!   asked again for them. Streaming deltas are not journaled (they are for
//!   live display); the assembled turn is.
//! - **Every tool call** is a journal entry: a call that completed never
//!   runs again, and a call with invalid arguments never reaches a person
//!   or a tool (the model reads why, as in process). Each call runs with
//!   an idempotency key, `RUN_ID/CALL_ID`
//!   ([`ToolContext::idempotency_key`](behest::ToolContext::idempotency_key)):
//!   the same each time the call is played again, different for every
//!   other call of every run (call ids repeat across runs and providers).
//!   Pass it to the service the tool changes.
//! - **A call cut by a crash.** A call that was *running* when its service
//!   died is played again. A tool marked `#[tool(idempotent)]` (or
//!   read-only) runs again, with the same key. Any other has its start
//!   journaled before it runs; played again, the run does not run it
//!   unasked: it waits with the call's outcome unknown (`waits_for:
//!   "outcome"`) until a person or a check says what it did
//!   ([`DurableClient::resolve`]: it ran, with its output; it failed; or
//!   run it again), within the agent's approval deadline. No peer we know
//!   of (the OpenAI Agents SDK, pydantic-ai, rig, the Vercel AI SDK) has
//!   this state: a call cut mid-run is run again, or left to the tool.
//! - **A call in two parts.** A tool that can be run in two parts
//!   ([`Tool::keeps_checkpoints`](behest::Tool::keeps_checkpoints),
//!   [`CallPart`](behest::CallPart)) has its start, which must happen
//!   once, journaled in an entry of its own (`start part of call ID`) and
//!   the rest in the call's entry. An imported MCP tool reached over HTTP
//!   is one: its start sends `tools/call` and keeps the result, or the
//!   task the server answered with; the rest awaits that task. Played
//!   again after a crash while it awaited (or an attempt Restate aborted),
//!   the run goes on awaiting the same task, which is not cancelled; the
//!   work is not started again. A start cut by a crash is what any call
//!   cut by one is: run again for a tool marked idempotent, else of an
//!   unknown outcome for a person to resolve. A server that no longer
//!   knows the task (restarted, or past the task's time to live) makes the
//!   call's outcome unknown, and the call says so. Each part has the
//!   tool's timeout.
//! - **Agents run as tools** are journaled step by step, as the root is:
//!   each nested model turn, call and decision is an entry of its own,
//!   named under the path of the calls that lead to it
//!   (`billing#c3/model turn 0`, `billing#c3/call c1`), and the nested
//!   agents' approvals and external calls wait, and are answered, by
//!   their paths (`billing#c3/refund#c1`), under the root's deadlines. A
//!   nested call's idempotency key is `RUN_ID/PATH`.
//! - **External calls, approvals and decisions** are durable promises made
//!   for each wait, raced against durable timers of the agent's
//!   [`external_deadline`](behest::Agent::external_deadline) and
//!   [`approval_deadline`](behest::Agent::approval_deadline) (300 s by
//!   default: set it to what a person needs): the run suspends (no
//!   process, no memory held) until someone answers, whenever that is; a
//!   deadline fires even if it passed while no service ran. An answer is
//!   taken only by the call that waits for it: one sent before the run
//!   reaches the call, for a call id the run never made, or a second time
//!   is refused (HTTP 404, or 409 for an answer where an approval is
//!   awaited, or one given already), with a message that says what the
//!   run waits for. (Two answers that arrive at once for the same call
//!   may both be accepted; the first to land is used.) An outside answer
//!   meets the runtime's output limit, as a tool's own output does.
//! - **Cancel** through Restate ([`DurableClient::cancel`]): the run ends
//!   [`DurableOutcome::Cancelled`] with every call in its transcript
//!   answered, as in process. A tool that was running when the
//!   cancellation came is not stopped, and its result is the call's: Restate
//!   tells the attempt of the cancellation rather than of the tool's entry,
//!   so the attempt, which saw the tool end, journals what it did in an
//!   entry of its own (`call ID (after the cancellation)`). Only when that
//!   entry is missing (the service stopped before it) does the transcript
//!   say that the tool may have finished, and name the entry that holds its
//!   outcome. A service that stops while a cancelled run ends may leave
//!   that run's invocation retrying with a journal mismatch (RT0016):
//!   restate-sdk 0.13 replays the cancellation at an earlier step than the
//!   attempt met it. Kill such an invocation
//!   (`curl -X PATCH localhost:9070/invocations/ID/kill`); its status says
//!   `killed`.
//!
//! # Status
//! [`DurableClient::status`] tells where a run stands at any time: running
//! or waiting, the calls pending with their validated arguments (a nested
//! agent's by path, as its call id), how many steps are done, the events
//! the rest does not tell (a guardrail's refusal, an approval asked, a
//! nested agent's steps) and the transcript. It reads Restate's own record
//! of the run (its invocation, its state and its journal) through the
//! admin API, so it answers while no service runs, and says `killed` for a
//! run whose invocation was killed and `paused` for one Restate stopped
//! retrying.
//! [`DurableClient::pending`] reads what a run waits for alone, without
//! the transcript: what a page that polls for approvals needs.
//!
//! A run keeps its transcript once. Its journal already holds the input,
//! each model turn's answer and each call's result: the transcript is
//! read from there. The run's state is a small header (where it stands,
//! what it waits for), written when that changes, and a page every 8
//! steps and whenever the run waits or ends, which says how the transcript
//! goes on ("the next 8 messages the journal's entries give", a message no
//! entry gives, such as a reminder or a call refused before it ran, or a
//! change in place: instructions put first, a guardrail's rewrite, a
//! compaction) and holds the events. A nested agent's replies and results
//! are kept in its events as well as in the journal: they are not the
//! root's transcript. The outcome the `run` handler returns leaves the
//! transcript out; [`DurableClient::outcome`] reads it back. A run of
//! 1 001 steps keeps about 100 KB, 1.4 times what the same steps
//! journaled with restate-sdk alone keep (the `durable_steps` bench).
//!
//! The journal of an ended run is kept as long as its outcome: one day
//! unless [`DurableAgent::retention`] says, whatever the server's own
//! default retention. While the run works, a guardrail's rewrite of the
//! final answer shows once it ends.
//!
//! # Limits
//! A step keeps at most [`DurableAgent::max_step_bytes`]
//! ([`DEFAULT_MAX_STEP_BYTES`], 4 MiB), well within Restate's message
//! limit (32 MiB by default): a tool output over it is the call's error,
//! which the model reads (the run goes on); an answer over it, or over the
//! runtime's output limit ([`Limits::max_output_bytes`](behest::Limits),
//! 1 MiB by default), is refused to its sender (413), who may send another;
//! a model turn over it fails the run.
//!
//! # Answering
//! [`DurableClient::answer`], [`approve`](DurableClient::approve) and
//! [`resolve`](DurableClient::resolve) wait for the service's verdict, and
//! return the refusal when there is one; while no service runs they wait
//! for one. [`answer_later`](DurableClient::answer_later) and
//! [`approve_later`](DurableClient::approve_later) hand it to Restate,
//! which keeps it at once and delivers it when a service runs; the verdict
//! then reaches nobody unless asked for: [`DurableClient::delivered`]
//! waits for it. With curl (the ingress on 8080, the admin API on 9070; a
//! run id percent-encoded, `shop/order-42` as `shop%2Forder-42`):
//!
//! ```text
//! curl localhost:8080/DurableAgent/order-42/run/send --json '[{"role":"user","text":"Refund order 42"}]'
//! curl localhost:8080/DurableAgent/order-42/answer --json '{"call_id":"lookup-42","output":{"text":"paid"}}'
//! curl localhost:8080/DurableAgent/order-42/approve --json '{"call_id":"refund-42","approved":false,"reason":"not yet"}'
//! curl localhost:8080/DurableAgent/order-42/resolve --json '{"call_id":"refund-42","resolution":"run_again"}'
//! curl localhost:8080/DurableAgent/order-42/approve/send --json '{"call_id":"refund-42","approved":true}'
//! curl localhost:8080/restate/invocation/INVOCATION_ID/attach     # the verdict on what /send delivered
//! curl localhost:8080/restate/workflow/DurableAgent/order-42/attach   # the outcome
//! curl -X PATCH localhost:9070/invocations/INVOCATION_ID/cancel   # the id run/send gave
//! ```
//!
//! A resolution is `{"ran": {"text": ..}}`, `{"failed": "why"}` or
//! `"run_again"`.
//!
//! # Restate's own behaviour
//! - **Retries.** Restate retries an invocation whose service does not
//!   answer. Its default policy (70 attempts, at most a minute apart, then
//!   pause) would pause an answer sent with `/send` during an outage of an
//!   hour or more, and the run's deadline would pass without it. The
//!   workflow sets its own: at most a minute apart for about 30 days,
//!   then pause. A paused invocation (status `paused`) goes on once
//!   resumed: `curl -X PATCH localhost:9070/invocations/ID/resume`
//!   (`SELECT id, target FROM sys_invocation WHERE status = 'paused'`
//!   through `/query` lists them).
//! - **Retention.** Restate keeps an ended run one day by default
//!   (`default-workflow-completion-retention`); after that its id starts
//!   a new run from nothing, and its status is gone. Keep runs longer with
//!   [`DurableAgent::retention`].
//! - **Versions.** Tested with `restate-server` 1.7.12
//!   (`npx @restatedev/restate-server@1.7.12`) and restate-sdk 0.13.
//!
//! # Serving and calling
//! ```no_run
//! use behest::{Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
//! use behest_restate::DurableClient;
//!
//! # async fn demo(agent: Agent) -> Result<(), Box<dyn std::error::Error>> {
//! // The service: register http://127.0.0.1:9080 with the Restate server
//! // (`curl localhost:9070/deployments --json '{"uri": "http://127.0.0.1:9080"}'`).
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
//! `examples/durable_agent.rs` runs a refund agent that looks the order up
//! (an external tool) and refunds it once approved, with the commands to
//! try it.
//!
//! # Deploying
//! One `restate-server` binary (the npm package
//! `@restatedev/restate-server`, or Restate's own packages) serves a laptop;
//! a replicated Restate cluster serves production. The services that run
//! the agent hold no state: run as many as you like behind any load
//! balancer and register its address once; a service that dies has its runs
//! played back on another. Every service must run the same agent (tools,
//! model, options): a run played back is asked the same steps in the same
//! order. [`DurableAgent::definition`] binds the workflow beside other
//! services of an endpoint of one's own ([`serve_endpoint`]).
//!
//! A cluster of three nodes, each running every role, with the log and
//! partitions on two nodes so that it goes on when one dies (the tests run
//! the killing tests on one, on one machine; give each node its own ports
//! and folder):
//!
//! ```text
//! # restate.toml of node 1 (nodes 2 and 3: their names, ports and
//! # auto-provision = false)
//! node-name = "n1"
//! cluster-name = "agents"
//! auto-provision = true            # on exactly one node
//! default-replication = 2          # log and partitions on 2 of the 3 nodes
//! bind-address = "127.0.0.1:5122"
//! advertised-address = "http://127.0.0.1:5122"
//! [metadata-client]
//! addresses = ["http://127.0.0.1:5122", "http://127.0.0.1:6122", "http://127.0.0.1:7122"]
//! [admin]
//! bind-address = "127.0.0.1:9070"
//! [ingress]
//! bind-address = "127.0.0.1:8080"
//! ```
//!
//! `restate-server --config-file restate.toml` on each; register the
//! service once, on any node. A run waiting for an approval two agents
//! down survives its service and the node that provisioned the cluster
//! dying, and is answered through another node.
//!
//! # Durable MCP tasks
//! With the `mcp` feature, a behest MCP server's task tools (the MCP tasks
//! extension, [`McpTasks`](behest::mcp::McpTasks)) can run as the Restate
//! workflow [`DurableTasks`], one instance per task id, reached through
//! [`RestateTasks`] given to
//! [`McpTasks::backend`](behest::mcp::McpTasks::backend):
//! - **The call is a journal entry.** A task whose service dies while its
//!   tool works is played again on the next service Restate reaches: the
//!   tool runs again, with the task id as its idempotency key
//!   ([`ToolContext::idempotency_key`](behest::ToolContext::idempotency_key));
//!   once it ended, its result comes from Restate's record and never runs
//!   again.
//! - **Any replica answers.** `tasks/get` and `tasks/cancel` go to
//!   Restate's ingress, so a client's poll may land on any replica of the
//!   server; a task is kept before its creation is answered, so a poll
//!   right after finds it. Only its caller (the identity or bearer token
//!   that started it) sees it.
//! - **Cancel** is at once for the client; Restate does not interrupt a
//!   step, so a tool already working runs to its end, and its result is
//!   not kept.
//! - **Not yet**: a durable task's tool cannot ask its client (elicitation,
//!   sampling: it has no MCP caller), and reports no progress.
//!
//! `examples/durable_mcp_tasks.rs` serves one; `tests/tasks.rs` kills its
//! service in the middle of a task and reads the result on another replica.
//! rmcp and FastMCP keep a task in the server that made it; we know of no
//! peer whose task, cut by a crash, is played back from a journal.
//!
//! # Compared with running in process
//! A durable step costs a journal write (a round trip to the Restate
//! server) besides the step itself: worth it for model turns and tools that
//! take seconds, noticeable for microsecond tools. `cargo bench -p
//! behest-restate --bench durable_steps` measures it against the same steps
//! written on restate-sdk alone: 1.00 to 1.06 times its time for a run of
//! 5 steps (the median of 200 paired rounds, over several runs on a
//! shared 2-core machine), and a time per step that stays flat from 11 to
//! 1 001 steps (about 0.9 ms against restate-sdk's 0.85).
//! Event handlers and streams of one process's run are not shared with
//! others: follow a durable run through its status.
//!
//! [`Agent`]: behest::Agent
//! [`Agent::invoke`]: behest::Agent::invoke

mod client;
mod state;
mod steps;
#[cfg(feature = "mcp")]
mod tasks;
mod transcript;
mod wire;
mod workflow;

pub use client::{register, DurableClient, DurableClientError, Sent};
#[cfg(feature = "mcp")]
pub use tasks::{DurableTasks, RestateTasks};
pub use wire::{Answer, Approval, DurableOutcome, Pending, Resolution, Resolve, Status};
pub use workflow::{serve, serve_endpoint, DurableAgent, DEFAULT_MAX_STEP_BYTES};

/// restate-sdk, at the version this crate builds on.
pub use restate_sdk;

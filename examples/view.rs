//! The run viewer: a page that shows run logs, recorded or still being
//! written.
//!
//! `cargo run --example view --features ui -- runs/` serves the logs of
//! `runs/` (files a `RunLog` writes, `*.jsonl`, and `Recorder`
//! recordings, `*.json`) at <http://127.0.0.1:4000>. Without a folder it
//! writes three demo runs into a fresh one and serves that: a run with a
//! nested agent, a call refused for its arguments, a model that falls
//! back to a spare and a transfer a guardrail stops; a handoff to the agent
//! `billing`, whose refund a person approves; and a run that is still
//! going, which the page follows as it grows. `PORT` sets the port.
//!
//! It is an example rather than a binary of its own: the viewer is
//! [`behest::ui::RunViewer`], a router to mount in any service (an admin
//! port, say), and this is the few lines that serve it alone.

use std::path::PathBuf;
use std::time::Duration;

use behest::prelude::*;
use behest::run::{FallbackModel, ModelError, RunLog, ScriptedTurn, Verdict};
use behest::ui::RunViewer;
use serde_json::json;

/// Look an order up.
#[tool(read_only)]
fn lookup_order(
    /// The order's number.
    order: u32,
) -> String {
    format!("order {order}: a kettle, paid 42 EUR")
}

/// The refund policy for an order.
#[tool(read_only)]
fn refund_policy(order: u32) -> String {
    format!("order {order} may be refunded within 30 days")
}

/// Move money between accounts.
#[tool]
fn transfer(
    /// Euros.
    amount: u32,
) -> String {
    format!("{amount} EUR moved")
}

/// Wait a moment, as a slow service does.
#[tool(read_only)]
async fn slow_step(step: u32) -> String {
    tokio::time::sleep(Duration::from_millis(700)).await;
    format!("step {step} done")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = match args.next() {
        Some(flag) if flag == "--demo" => {
            let dir = PathBuf::from(args.next().ok_or("--demo needs a folder")?);
            demo(&dir).await?;
            dir
        }
        Some(dir) => PathBuf::from(dir),
        None => {
            let dir = std::env::temp_dir().join(format!("behest-runs-{}", std::process::id()));
            demo(&dir).await?;
            dir
        }
    };
    let port = std::env::var("PORT").unwrap_or_else(|_| "4000".to_owned());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    eprintln!("showing the run logs of {}", dir.display());
    axum::serve(listener, RunViewer::new(dir).router()).await?;
    Ok(())
}

/// Writes the demo runs into `dir`: two ended, one still going.
async fn demo(dir: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    std::fs::create_dir_all(dir)?;
    let log = RunLog::create(dir.join("support.jsonl"))?;
    let run = support().invoke([Message::user(
        "Refund order 42, then move 5000 EUR to my savings.",
    )]);
    run.on(log.handler());
    let id = run.run_id();
    let outcome = run.await;
    log.outcome(&id, &outcome)?;

    // A handoff, and a refund a person approves while the run waits.
    let log = RunLog::create(dir.join("refund.jsonl"))?;
    let run = triage().invoke([Message::user("I want my money back for order 42.")]);
    run.on(log.handler());
    run.on(|envelope, control| {
        if let behest::run::EventKind::Tool(behest::run::ToolStreamEvent::ApprovalRequested {
            call,
        }) = &envelope.kind
        {
            // Where a page would show Approve, the demo approves.
            let _ = control.approve(&call.call_id);
        }
    });
    let id = run.run_id();
    let outcome = run.await;
    log.outcome(&id, &outcome)?;

    // A run that goes on while the page shows it.
    let live = RunLog::create(dir.join("live.jsonl"))?;
    let turns = (1..=6).map(|step| {
        ScriptedTurn::tool_calls([ToolCall::new(
            format!("s{step}"),
            "slow_step",
            json!({ "step": step }),
        )])
    });
    let model = ScriptedModel::new(turns.chain([ScriptedTurn::text("All six steps are done.")]));
    let agent =
        Agent::new(model, ToolRuntime::new(ToolRegistry::new().with(SlowStep)?)).name("worker");
    let run = agent.invoke([Message::user("Run the six steps.")]);
    run.on(live.handler());
    let id = run.run_id();
    tokio::spawn(async move {
        let outcome = run.await;
        let _ = live.outcome(&id, &outcome);
    });
    Ok(())
}

/// Refund an order.
#[tool]
fn refund(order: u32) -> String {
    format!("order {order} refunded")
}

/// The agent `triage`, which hands a refund to `billing`, whose refunds a
/// person approves.
fn triage() -> Agent {
    let billing = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("r1", "refund", json!({ "order": 42 }))]),
            ScriptedTurn::text("Order 42 is refunded."),
        ]),
        ToolRuntime::new(ToolRegistry::new().with(Refund).expect("one tool")),
    )
    .name("billing")
    .require_approval("refund");
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
        "h1",
        "transfer_to_billing",
        json!({}),
    )])]);
    Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
        .name("triage")
        .handoff("billing", "Refunds and payments.", billing)
}

fn tokens(input: u64, output: u64) -> behest::conversation::Usage {
    behest::conversation::Usage {
        input_tokens: input,
        output_tokens: output,
        ..Default::default()
    }
}

/// The agent `support`: its model falls back to a spare, it asks the
/// agent `billing`, and a guardrail stops transfers over 1000 EUR.
fn support() -> Agent {
    let billing = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new(
                "b1",
                "refund_policy",
                json!({ "order": 42 }),
            )]),
            ScriptedTurn::text("Order 42 may be refunded: it is within 30 days."),
        ]),
        ToolRuntime::new(ToolRegistry::new().with(RefundPolicy).expect("one tool")),
    )
    .name("billing");
    let primary = ScriptedModel::new([
        ScriptedTurn::reply(
            AssistantMessage::text("Let me check.")
                .with_tool_calls([
                    // The model writes the number out: the call is refused.
                    ToolCall::new("c1", "lookup_order", json!({ "order": "forty-two" })),
                    ToolCall::new(
                        "c2",
                        "billing",
                        json!({ "input": "Is order 42 refundable?" }),
                    ),
                ])
                .with_usage(tokens(1200, 80)),
        ),
        ScriptedTurn::error(ModelError::new("rate limited").with_status(429)),
    ]);
    let spare = ScriptedModel::new([ScriptedTurn::reply(
        AssistantMessage::tool_calls([ToolCall::new("c3", "transfer", json!({ "amount": 5000 }))])
            .with_usage(tokens(1500, 40)),
    )]);
    // Named as the models a real run would use, so that the viewer prices
    // their turns.
    let model = FallbackModel::new("gpt-4.1-mini", primary).then("claude-haiku-4-5", spare);
    let tools = ToolRegistry::new()
        .with(LookupOrder)
        .and_then(|tools| tools.with(Transfer))
        .and_then(|tools| {
            tools.with(billing.as_tool("billing", "Answers questions about refunds."))
        })
        .expect("distinct tools");
    Agent::new(model, ToolRuntime::new(tools))
        .name("support")
        .tool_guardrail("transfer_limit", |call: ToolCall| async move {
            let amount = call.arguments["amount"].as_u64().unwrap_or(0);
            if call.tool_name == "transfer" && amount > 1000 {
                Verdict::Stop(format!(
                    "a transfer of {amount} EUR is over the 1000 EUR limit"
                ))
            } else {
                Verdict::Allow
            }
        })
}

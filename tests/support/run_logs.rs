//! Run logs of real runs, for the viewer's test and bench.

use std::path::Path;

use behest::prelude::*;
use behest::run::{RunLog, ScriptedTurn};
use serde_json::json;

/// Count a step.
#[tool(read_only)]
fn step(number: u32) -> String {
    format!("step {number}")
}

/// Runs `agent` on one message with its events logged to `path`.
pub async fn logged(agent: Agent, path: &Path) {
    let log = RunLog::create(path).unwrap();
    let run = agent.invoke([Message::user("go")]);
    run.on(log.handler());
    let id = run.run_id();
    let outcome = run.await;
    assert!(outcome.text().is_some(), "{outcome:?}");
    log.outcome(&id, &outcome).unwrap();
}

/// Logs a run of `steps` model turns, each calling a tool, then an answer.
pub async fn log_steps(steps: u32, path: &Path) {
    let turns = (1..=steps)
        .map(|n| {
            ScriptedTurn::tool_calls([ToolCall::new(
                format!("s{n}"),
                "step",
                json!({ "number": n }),
            )])
        })
        .chain([ScriptedTurn::text("all done")]);
    let agent = Agent::new(
        ScriptedModel::new(turns),
        ToolRuntime::new(ToolRegistry::new().with(Step).unwrap()),
    )
    .max_steps(steps as usize + 1);
    logged(agent, path).await;
}

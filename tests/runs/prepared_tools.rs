//! Tools prepared per step.

use std::sync::{Arc, Mutex};

use behest::run::{Model, ModelError, ModelRequest, ScriptedTurn};
use behest::{
    tool, Agent, AssistantMessage, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime,
};

/// Look an order up.
#[tool]
fn look_up(order: u32) -> String {
    format!("order {order}: paid")
}

/// Refund an order.
#[tool]
fn refund(order: u32) -> String {
    format!("order {order} refunded")
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(LookUp)
        .unwrap()
        .with(Refund)
        .unwrap()
}

/// No refund is offered before a look-up, and one called anyway is
/// not run.
#[tokio::test]
async fn tools_are_offered_by_the_runs_state_and_others_are_not_run() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "refund", r#"{"order": 1}"#)])
            .expect_tools(["look_up"]),
        ScriptedTurn::tool_calls([ToolCall::new("c2", "look_up", r#"{"order": 1}"#)])
            .expect_tools(["look_up"])
            .expect_error("c1", "not offered at this step"),
        ScriptedTurn::tool_calls([ToolCall::new("c3", "refund", r#"{"order": 1}"#)])
            .expect_tools(["look_up", "refund"]),
        ScriptedTurn::text("done").expect_ok("c3", "refunded"),
    ]);
    let agent = Agent::new(model, ToolRuntime::new(registry())).prepare_tools(|step, tools| {
        // What was spent before this step's request: one a turn so far.
        assert_eq!(step.usage.requests, step.turn as u64);
        let looked_up = step.transcript.iter().any(|message| {
            matches!(message, Message::ToolResult(result)
                if result.tool_name == "look_up" && !result.is_error)
        });
        tools
            .into_iter()
            .filter(|tool| looked_up || tool.name != "refund")
            .collect()
    });
    let outcome = agent.invoke([Message::user("refund order 1")]).await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
}

/// A model that keeps the descriptions it was offered.
struct Watches(Arc<Mutex<Vec<String>>>);
impl Model for Watches {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let mut seen = self.0.lock().unwrap();
        seen.extend(request.tools.iter().map(|tool| tool.description.clone()));
        Ok(AssistantMessage::text("ok"))
    }
}

#[tokio::test]
async fn a_preparation_can_reshape_what_the_model_reads() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::new(Watches(seen.clone()), ToolRuntime::new(registry())).prepare_tools(
        |step, tools| {
            tools
                .into_iter()
                .map(|mut tool| {
                    tool.description = format!("{} (step {})", tool.description, step.turn);
                    tool
                })
                .collect()
        },
    );
    agent.invoke([Message::user("hi")]).await;
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        ["Look an order up. (step 0)", "Refund an order. (step 0)"]
    );
}

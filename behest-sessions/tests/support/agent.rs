//! An agent whose model answers by what the conversation says, so that
//! any process gives the same turns: "refund N [M …]" calls `refund` for
//! each order (an approval each), "ask" calls the external tool `ask`, a
//! tool's results are summed up, anything else is heard and counted.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use behest::conversation::AssistantMessage;
use behest::run::{Message, Model, ModelError, ModelRequest};
use behest::tool::ToolResult;
use behest::{
    Agent, ExternalTool, Tool, ToolCall, ToolOutput, ToolRegistry, ToolRuntime, ToolSpec,
};

pub struct ByConversation;

impl Model for ByConversation {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let conversation = request.conversation;
        let turn = conversation
            .iter()
            .filter(|message| matches!(message, Message::Assistant(_)))
            .count();
        let results: Vec<String> = conversation
            .iter()
            .rev()
            .take_while(|message| matches!(message, Message::ToolResult(_)))
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.clone()),
                _ => None,
            })
            .collect();
        if !results.is_empty() {
            let mut results = results;
            results.reverse();
            return Ok(AssistantMessage::text(format!(
                "done: {}",
                results.join("; ")
            )));
        }
        let said = conversation.iter().rev().find_map(|message| match message {
            Message::User { text } => Some(text.clone()),
            _ => None,
        });
        let said = said.unwrap_or_default();
        let heard = conversation
            .iter()
            .filter(|message| matches!(message, Message::User { .. }))
            .count();
        if let Some(orders) = said.strip_prefix("refund ") {
            let calls = orders.split_whitespace().enumerate().map(|(at, order)| {
                ToolCall::new(
                    format!("t{turn}c{at}"),
                    "refund",
                    format!(r#"{{"order": {order}}}"#),
                )
            });
            return Ok(AssistantMessage::tool_calls(calls));
        }
        if said == "ask" {
            return Ok(AssistantMessage::tool_calls([ToolCall::new(
                format!("t{turn}c0"),
                "ask",
                "{}",
            )]));
        }
        Ok(AssistantMessage::text(format!("heard {heard}: {said}")))
    }
}

/// Refunds an order; counts its runs.
pub struct Refund(pub Arc<AtomicUsize>);

impl Tool for Refund {
    fn name(&self) -> &str {
        "refund"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "refund",
            "Refund an order.",
            serde_json::json!({"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}),
        )
    }

    async fn execute(&self, arguments: serde_json::Value) -> ToolResult<ToolOutput> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("refunded {}", arguments["order"])))
    }
}

/// The agent (each refund needs an approval), and the count of refunds
/// it made.
pub fn agent() -> (Agent, Arc<AtomicUsize>) {
    let refunds = Arc::new(AtomicUsize::new(0));
    (agent_counting(refunds.clone()), refunds)
}

/// The agent, counting its refunds into `refunds`.
pub fn agent_counting(refunds: Arc<AtomicUsize>) -> Agent {
    let mut tools = ToolRegistry::new().with(Refund(refunds)).unwrap();
    tools
        .register(
            "ask",
            Arc::new(ExternalTool::new(
                "ask",
                "Ask a person.",
                serde_json::json!({"type": "object"}),
            )),
        )
        .unwrap();
    Agent::new(ByConversation, ToolRuntime::new(tools)).require_approval("refund")
}

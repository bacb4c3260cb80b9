//! A durable refund agent: each run is a Restate workflow. The agent looks
//! the order up (an external tool: the back office answers), then refunds
//! it once a person approves (a destructive tool). Both wait for as long
//! as it takes, through crashes and restarts of this process.
//!
//! Try it: Restate's server from npm (the version behest-restate is tested
//! with), then this example, which serves on 127.0.0.1:9080 and registers
//! itself with the server (the `curl` to the admin API below does the
//! same by hand):
//!
//! ```text
//! npx @restatedev/restate-server@1.7.12
//! cargo run -p behest-restate --example durable_agent
//! curl localhost:9070/deployments --json '{"uri": "http://127.0.0.1:9080"}'
//! ```
//!
//! Start a run (its id is `order-42`; the answer gives the invocation's id,
//! to cancel it), see what it waits for, answer the look-up, approve the
//! refund, and read the outcome. Stop and start the example in between:
//! nothing is asked or refunded twice.
//!
//! ```text
//! curl localhost:8080/DurableAgent/order-42/run/send --json '[{"role":"user","text":"Please refund order 42"}]'
//! curl -X POST localhost:9070/query --json '{"query": "SELECT key, value_utf8 FROM state WHERE service_key = '\''order-42'\''"}'
//! curl localhost:8080/DurableAgent/order-42/answer --json '{"call_id":"lookup-42","output":{"text":"paid on 30 Nov, 59 EUR"}}'
//! curl localhost:8080/DurableAgent/order-42/approve --json '{"call_id":"refund-42","approved":true}'
//! curl localhost:8080/restate/workflow/DurableAgent/order-42/attach
//! ```
//!
//! - The status: `DurableClient::status` reads it from Restate's own
//!   record through the admin API, which answers whatever runs. The query
//!   above shows the run's state: what it waits for, and pages of how its
//!   transcript goes on from its journal, which holds each model turn and
//!   call (`SELECT name, entry_json FROM sys_journal WHERE id = 'ID'`).
//! - An answer or approval for a call that does not wait for one (a typo
//!   in its id, a run not started yet) is refused with 404 and says what
//!   the run waits for. With `/answer/send` or `/approve/send` Restate
//!   keeps it at once and delivers it when a service runs, but the refusal
//!   reaches nobody: attach to the invocation id it gives
//!   (`curl localhost:8080/restate/invocation/ID/attach`) to see it.
//! - Cancel: `curl -X PATCH localhost:9070/invocations/ID/cancel`, with the
//!   invocation id `run/send` gave; the run ends `cancelled`.
//! - A run id with `/` or other reserved characters is percent-encoded in
//!   the path: the run `shop/order-42` is `DurableAgent/shop%2Forder-42`.
//! - Approvals here wait 30 days (`approval_deadline`; the default is 300
//!   seconds), answers as long (`external_deadline`); Restate keeps an
//!   ended run one day by default (`DurableAgent::retention`).

use std::time::Duration;

use behest::run::{ModelError, ModelRequest};
use behest::{external_tool, json, tool, Agent, AssistantMessage, Message, Model, ToolCall};
use behest::{ToolContext, ToolRegistry, ToolRuntime};
use behest_restate::DurableAgent;

/// Refund an order.
#[tool(destructive, idempotent)]
fn refund(order: u32, #[ctx] cx: ToolContext) -> String {
    // The payment service is told the call's idempotency key (the run's id
    // and the call's): a refund played again after a crash cut it is the
    // same refund, not a second one.
    let key = cx.idempotency_key().unwrap_or("none");
    println!("refunding order {order} (idempotency key {key})");
    format!("order {order} refunded")
}

/// Look an order up in the back office: when it was paid, and how much.
#[external_tool]
struct LookUpOrder {
    order: u32,
}

/// Stands in for a model client (`behest::models::Messages` and the others
/// work the same): looks up the order the user names, refunds it, then
/// says it is done. Its answer follows from the conversation, as a real
/// model's does when a run is played back.
struct Clerk;

impl Model for Clerk {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let asked = request
            .conversation
            .iter()
            .find_map(|message| match message {
                Message::User { text } => Some(text.as_str()),
                _ => None,
            });
        let Some(order) = asked.and_then(order_named) else {
            return Ok(AssistantMessage::text(
                "Which order should I refund? Please give its number.",
            ));
        };
        let results: Vec<&str> = request
            .conversation
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.as_str()),
                _ => None,
            })
            .collect();
        let call = |id: &str, name: &str| {
            AssistantMessage::text("").with_tool_calls([ToolCall::new(
                format!("{id}-{order}"),
                name,
                json!({"order": order}),
            )])
        };
        Ok(match results.as_slice() {
            [] => call("lookup", "look_up_order"),
            [_looked_up] => call("refund", "refund"),
            [looked_up, refunded, ..] => {
                AssistantMessage::text(format!("Order {order} ({looked_up}): {refunded}."))
            }
        })
    }
}

/// The first number in `text`: the order the user names.
fn order_named(text: &str) -> Option<u32> {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|word| !word.is_empty())?
        .parse()
        .ok()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new()
        .with(Refund)?
        .with(LookUpOrder::external_tool())?;
    let a_month = Duration::from_secs(30 * 24 * 60 * 60);
    // Destructive tools wait for a person's approval.
    let agent = Agent::new(Clerk, ToolRuntime::new(registry))
        .approve_destructive(true)
        .approval_deadline(a_month)
        .external_deadline(a_month);
    let durable = DurableAgent::new(agent).retention(Duration::from_secs(7 * 24 * 60 * 60));
    let serving = tokio::spawn(durable.serve(([127, 0, 0, 1], 9080).into()));
    behest_restate::register("http://127.0.0.1:9070", "http://127.0.0.1:9080").await?;
    println!("DurableAgent is registered; start a run through localhost:8080");
    serving.await??;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The clerk refunds the order the user names, after looking it up,
    /// and asks when none is named.
    #[tokio::test]
    async fn the_clerk_refunds_the_order_the_user_names() {
        let registry = ToolRegistry::new()
            .with(Refund)
            .unwrap()
            .with(LookUpOrder::external_tool())
            .unwrap();
        let agent = Agent::new(Clerk, ToolRuntime::new(registry));
        let invocation = agent.invoke([Message::user("Please refund order 7, thanks")]);
        invocation.on(|envelope, control| {
            if let behest::EventKind::Tool(behest::ToolStreamEvent::Call {
                call,
                external: true,
            }) = envelope.kind
            {
                assert_eq!(call.arguments, json!({"order": 7}));
                let _ = control.resolve(&call.call_id, Ok(behest::ToolOutput::text("paid")));
            }
        });
        let outcome = invocation.await;
        assert_eq!(outcome.text(), Some("Order 7 (paid): order 7 refunded."));
        assert_eq!(order_named("no number"), None);
    }
}

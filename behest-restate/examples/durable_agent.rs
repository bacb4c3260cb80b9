//! A durable refund agent: each run is a Restate workflow, and a refund
//! waits for a person's approval for as long as it takes, through crashes
//! and restarts of this process.
//!
//! Try it (Restate's server from npm, then this example, which serves on
//! 127.0.0.1:9080 and registers itself with the server):
//!
//! ```text
//! npx @restatedev/restate-server
//! cargo run -p behest-restate --example durable_agent
//! ```
//!
//! Then start a run, see it wait, approve the refund, and read the outcome
//! (stop and start the example in between: nothing is asked or refunded
//! twice):
//!
//! ```text
//! curl localhost:8080/DurableAgent/order-42/run/send --json '[{"role":"user","text":"Refund order 42"}]'
//! curl -X POST localhost:8080/DurableAgent/order-42/status
//! curl localhost:8080/DurableAgent/order-42/approve/send --json '{"call_id":"refund-1","approved":true}'
//! curl localhost:8080/restate/workflow/DurableAgent/order-42/attach
//! ```

use behest::run::{ModelError, ModelRequest};
use behest::{json, tool, Agent, AssistantMessage, Message, Model, ToolCall};
use behest::{ToolRegistry, ToolRuntime};

/// Refund an order.
#[tool(destructive, idempotent)]
fn refund(order: u32) -> String {
    println!("refunding order {order}");
    format!("order {order} refunded")
}

/// Stands in for a model client (`behest::models::Messages` and the others
/// work the same): asks for the refund, then says it is done. Its answer
/// follows from the conversation, as a real model's does in a replay.
struct Clerk;

impl Model for Clerk {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let result = request
            .conversation
            .iter()
            .find_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.clone()),
                _ => None,
            });
        Ok(match result {
            None => AssistantMessage::text("").with_tool_calls([ToolCall::new(
                "refund-1",
                "refund",
                json!({"order": 42}),
            )]),
            Some(result) => AssistantMessage::text(format!("Done: {result}.")),
        })
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new().with(Refund)?;
    // Destructive tools wait for a person's approval.
    let agent = Agent::new(Clerk, ToolRuntime::new(registry)).approve_destructive(true);
    let serving = tokio::spawn(behest_restate::serve(agent, ([127, 0, 0, 1], 9080).into()));
    register("http://127.0.0.1:9070", "http://127.0.0.1:9080").await?;
    println!("DurableAgent is registered; start a run through localhost:8080");
    serving.await??;
    Ok(())
}

/// Tells the Restate server at `admin` of the service at `service`.
async fn register(admin: &str, service: &str) -> Result<(), Box<dyn std::error::Error>> {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let body = serde_json::json!({"uri": service, "force": true});
    for _ in 0..50 {
        if let Ok(answer) = http
            .post(format!("{admin}/deployments"))
            .json(&body)
            .send()
            .await
        {
            if answer.status().is_success() {
                return Ok(());
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    Err(format!("could not register with the Restate server at {admin}; is it running?").into())
}

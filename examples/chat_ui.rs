//! A chat page in the browser, served by behest: the page speaks the AI
//! SDK's UI message stream (what `useChat` reads), and AG-UI clients
//! (CopilotKit, `@ag-ui/client`) reach the same agent at `/ag-ui`.
//!
//! Run: `cargo run --example chat_ui --features ui`, then open
//! <http://127.0.0.1:3000>. Ask "What's the weather in Paris?", or "Please
//! refund order 42": the refund waits for your approval in the page.
//! `PORT` sets the port (default 3000).
//!
//! The page is plain HTML and a little JavaScript, embedded in the
//! binary: no build step, nothing fetched from the network. Offline, the
//! model is a stand-in that reads the conversation; for a real one, swap
//! the line that makes it (for example
//! `behest::models::openai::Chat::new("gpt-4.1-mini")` with the `models`
//! feature and `OPENAI_API_KEY`).

use axum::response::Html;
use axum::routing::get;
use behest::prelude::*;
use behest::run::{Model, ModelError, ModelRequest};
use behest::ui::ChatUi;
use behest::ModelDelta;
use serde_json::json;

/// Get the current weather for a city.
#[tool(read_only)]
fn get_weather(
    /// The city, e.g. "Paris".
    city: String,
) -> String {
    format!("Sunny in {city}, 21 °C.")
}

/// Refund an order. A person approves each refund.
#[tool]
fn refund(
    /// The order's number.
    order: u32,
) -> String {
    format!("order {order} refunded")
}

/// A stand-in for a real model: it calls the tool a message asks for,
/// reports a tool's result, and otherwise says what it heard. It streams
/// its text, as a real model does.
struct StandIn;

impl Model for StandIn {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let reply = answer(request.conversation);
        if let Some(text) = &reply.text {
            for word in text.split_inclusive(' ') {
                request.send_delta(ModelDelta::Text(word.to_owned()));
                tokio::time::sleep(std::time::Duration::from_millis(15)).await;
            }
        }
        Ok(reply)
    }
}

fn answer(conversation: &[Message]) -> AssistantMessage {
    match conversation.last() {
        Some(Message::ToolResult(result)) if result.is_error => {
            AssistantMessage::text(format!("That did not work: {}", result.content))
        }
        Some(Message::ToolResult(result)) => {
            AssistantMessage::text(format!("Done: {}.", result.content.trim_end_matches('.')))
        }
        Some(Message::User { text }) => {
            let lower = text.to_lowercase();
            let orders: Vec<u32> = text
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|word| word.parse().ok())
                .collect();
            let turn = conversation.len();
            if lower.contains("refund") && !orders.is_empty() {
                // One call per order, each waiting for its own approval.
                let calls = orders.iter().enumerate().map(|(at, order)| {
                    ToolCall::new(
                        format!("refund-{turn}-{at}"),
                        "refund",
                        json!({ "order": order }),
                    )
                });
                return AssistantMessage::text("I will refund once you approve. ")
                    .with_tool_calls(calls);
            }
            if let Some(city) = lower.split("weather in ").nth(1) {
                let city: String = city.trim_end_matches(['?', '.', '!']).to_owned();
                let city = capitalized(&city);
                let call = ToolCall::new(
                    format!("weather-{turn}"),
                    "get_weather",
                    json!({ "city": city }),
                );
                return AssistantMessage::tool_calls([call]);
            }
            AssistantMessage::text(format!("You said: {text}"))
        }
        _ => AssistantMessage::text("How can I help?"),
    }
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = ToolRegistry::new().with(GetWeather)?.with(Refund)?;
    // For a real model, this line: `let model = behest::models::openai::Chat::new("gpt-4.1-mini");`
    let model = StandIn;
    let agent = Agent::new(model, ToolRuntime::new(tools))
        .instructions("You help customers with the weather and their orders.")
        .require_approval("refund");
    let app = ChatUi::new(agent)
        .router()
        .route(
            "/",
            get(|| async { Html(include_str!("chat_ui_page/index.html")) }),
        )
        // The browser asks for an icon whatever the page says.
        .route(
            "/favicon.ico",
            get(|| async { axum::http::StatusCode::NO_CONTENT }),
        );
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

//! A run exported over OTLP, for tests/telemetry/test_semconv.py: the
//! agent `support` asks a local OpenAI-compatible server (which answers as
//! OpenAI's Chat Completions does), calls `get_weather` and the agent
//! `poet`, and answers. The collector's base URL and the user's message are
//! the arguments; exits non-zero when the run or the export fails.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use axum::routing::post;
use axum::Json;
use behest::models::openai::Chat;
use behest::prelude::*;
use behest::telemetry::Otlp;
use serde_json::{json, Value};

/// Get the current weather for a city.
#[tool(read_only)]
fn get_weather(city: String) -> String {
    format!("Sunny in {city}, 21 °C.")
}

/// The answers of the three requests, in order, each with its usage.
fn answers() -> VecDeque<Value> {
    let usage = |input: u64, output: u64| json!({"prompt_tokens": input, "completion_tokens": output, "total_tokens": input + output});
    VecDeque::from([
        json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-semconv-2026",
            "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
                "role": "assistant", "content": null,
                "tool_calls": [
                    {"id": "call_w", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                    {"id": "call_p", "type": "function", "function": {"name": "poet", "arguments": "{\"input\":\"a poem about sun\"}"}}
                ]
            }}],
            "usage": usage(10, 1),
        }),
        json!({
            "id": "chatcmpl-2", "object": "chat.completion", "model": "gpt-semconv-2026",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "The sun is warm."}}],
            "usage": usage(20, 2),
        }),
        json!({
            "id": "chatcmpl-3", "object": "chat.completion", "model": "gpt-semconv-2026",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "It is sunny; here is a poem."}}],
            "usage": usage(30, 3),
        }),
    ])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let collector = args.next().ok_or("give the collector's base URL")?;
    let prompt = args.next().ok_or("give the user's message")?;
    let telemetry = Otlp::new("behest-semconv-check")
        .endpoint(collector)
        .install()?;
    let runtime = tokio::runtime::Runtime::new()?;
    let text = runtime.block_on(run(prompt))?;
    drop(runtime);
    telemetry.shutdown()?;
    println!("{text}");
    Ok(())
}

async fn run(prompt: String) -> Result<String, Box<dyn std::error::Error>> {
    let queue = Arc::new(Mutex::new(answers()));
    let app = axum::Router::new().route(
        "/v1/chat/completions",
        post(move |Json(_request): Json<Value>| {
            let queue = queue.clone();
            async move {
                let next = queue.lock().unwrap().pop_front();
                Json(next.unwrap_or_else(|| json!({"error": {"message": "no more answers"}})))
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}/v1", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, app).await });
    let model = || {
        Chat::new("gpt-semconv")
            .api_key("sk-local")
            .base_url(base.clone())
            .stream(false)
    };
    let poet = Agent::new(model(), ToolRuntime::new(ToolRegistry::new())).name("poet");
    let tools = ToolRegistry::new()
        .with(GetWeather)?
        .with(poet.as_tool("poet", "Writes a short poem."))?;
    let outcome = Agent::new(model(), ToolRuntime::new(tools))
        .name("support")
        .invoke([Message::user(prompt)])
        .await;
    match outcome.text() {
        Some(text) => Ok(text.to_owned()),
        None => Err(format!("the run did not complete: {outcome:?}").into()),
    }
}

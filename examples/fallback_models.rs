//! Fallback models: a main model that is rate limited, then a spare that
//! answers. Each turn asks the main model first. The turn says which model gave it, and a `tracing` span
//! (`gen_ai.fallback`, with `gen_ai.response.model`) covers each try.
//!
//! Offline, the models are scripted: the main one answers 429 as OpenAI
//! does when rate limited. With real clients, swap the two lines that
//! make them, for example
//! `behest::models::openai::Chat::new("gpt-4.1").retry(RetryPolicy::none())`
//! and `behest::models::anthropic::Messages::new("claude-haiku-4-5")`
//! (the `models` feature and the providers' keys). Each client keeps its
//! own retry policy: the fallback comes after a model's own retries.
//!
//! Run: `cargo run --example fallback_models`

use behest::prelude::*;
use behest::run::{Failure, FallbackModel, ScriptedTurn};

/// Get the current weather for a city.
#[tool(read_only)]
fn get_weather(city: String) -> String {
    format!("Sunny and 21 °C in {city}.")
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Every turn asks the main model first: it is rate limited for both.
    let rate_limited = || {
        ScriptedTurn::error(
            ModelError::new("Rate limit reached for gpt-4.1 on tokens per min (TPM)")
                .with_status(429)
                .with_kind("rate_limit_exceeded")
                .retryable(true),
        )
    };
    let main_model = ScriptedModel::new([rate_limited(), rate_limited()]);
    let spare_model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "get_weather", r#"{"city": "Paris"}"#)]),
        ScriptedTurn::text("It is sunny and 21 °C in Paris."),
    ]);
    let model = FallbackModel::new("gpt-4.1", main_model)
        .then("claude-haiku-4-5", spare_model)
        .on([
            Failure::RateLimit,
            Failure::Overloaded,
            Failure::Timeout,
            Failure::ServerError,
            Failure::ContextWindow,
        ]);
    let registry = ToolRegistry::new().with(GetWeather)?;
    let agent = Agent::new(model, ToolRuntime::new(registry));
    let outcome = agent
        .invoke([Message::user("What is the weather in Paris?")])
        .await;
    for message in outcome.transcript() {
        if let Message::Assistant(reply) = message {
            let said = reply.text.as_deref().unwrap_or("(tool calls)");
            let model = reply.model.as_deref().unwrap_or("?");
            println!("{model}: {said}");
        }
    }
    println!("answer: {}", outcome.text().unwrap_or("none"));
    Ok(())
}

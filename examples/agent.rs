//! A real agent: a model behind an API calls two `#[tool]` functions.
//!
//! Which model it talks to comes from the environment:
//!
//! - `OPENAI_API_KEY` (and optionally `OPENAI_MODEL`): OpenAI Chat Completions;
//! - `ANTHROPIC_API_KEY` (and `ANTHROPIC_MODEL`): Anthropic Messages;
//! - `GEMINI_API_KEY` or `GOOGLE_API_KEY` (and `GEMINI_MODEL`): Gemini;
//! - `BEHEST_BASE_URL` and `BEHEST_MODEL` (and `BEHEST_API_KEY` if the
//!   server wants one): any OpenAI-compatible server, a local Ollama for
//!   instance. `OPENAI_API_KEY` is sent only to OpenAI's own API.
//!
//! Without any of them it says how to run it and exits.
//!
//! Run: `cargo run --example agent --features models`

use std::sync::Arc;

use behest::models::anthropic::Messages;
use behest::models::gemini::Gemini;
use behest::models::openai::Chat;
use behest::prelude::*;
use behest::ModelDelta;

/// Get the current weather for a city.
#[tool(read_only)]
fn get_weather(
    /// City name, e.g. "Paris".
    city: String,
) -> String {
    format!("Sunny and 21 °C in {city}.")
}

/// Convert an amount of euros to US dollars.
#[tool]
fn euros_to_dollars(amount: f64) -> f64 {
    (amount * 1.08 * 100.0).round() / 100.0
}

fn env(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// The model the environment names, and what it is.
fn model_from_env() -> Option<(Arc<dyn Model>, String)> {
    if let (Some(url), Some(model)) = (env("BEHEST_BASE_URL"), env("BEHEST_MODEL")) {
        let label = format!("{model} at {url}");
        let mut chat = Chat::new(model).base_url(url);
        if let Some(key) = env("BEHEST_API_KEY") {
            chat = chat.api_key(key);
        }
        return Some((Arc::new(chat), label));
    }
    if env("OPENAI_API_KEY").is_some() {
        let model = env("OPENAI_MODEL").unwrap_or_else(|| "gpt-4.1-mini".into());
        return Some((
            Arc::new(Chat::new(model.clone())),
            format!("OpenAI {model}"),
        ));
    }
    if env("ANTHROPIC_API_KEY").is_some() {
        let model = env("ANTHROPIC_MODEL").unwrap_or_else(|| "claude-sonnet-4-5".into());
        return Some((
            Arc::new(Messages::new(model.clone())),
            format!("Anthropic {model}"),
        ));
    }
    if env("GEMINI_API_KEY")
        .or_else(|| env("GOOGLE_API_KEY"))
        .is_some()
    {
        let model = env("GEMINI_MODEL").unwrap_or_else(|| "gemini-2.5-flash".into());
        return Some((
            Arc::new(Gemini::new(model.clone())),
            format!("Gemini {model}"),
        ));
    }
    None
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some((model, label)) = model_from_env() else {
        println!(
            "No model configured. Set one of:\n\
             \x20 OPENAI_API_KEY=...            (optionally OPENAI_MODEL)\n\
             \x20 ANTHROPIC_API_KEY=...         (optionally ANTHROPIC_MODEL)\n\
             \x20 GEMINI_API_KEY=...            (optionally GEMINI_MODEL)\n\
             or, for a local Ollama (`ollama pull llama3.2`):\n\
             \x20 BEHEST_BASE_URL=http://127.0.0.1:11434/v1 BEHEST_MODEL=llama3.2\n\
             (another OpenAI-compatible server: add BEHEST_API_KEY=... if it wants a key)\n\
             then run `cargo run --example agent --features models`."
        );
        return Ok(());
    };
    println!("model: {label}");

    let mut registry = ToolRegistry::new();
    registry.register_tool(Arc::new(GetWeather))?;
    registry.register_tool(Arc::new(EurosToDollars))?;
    let agent = Agent::from_arc(model, ToolRuntime::new(registry));

    let invocation = agent.invoke([
        Message::system("Answer briefly. Use the tools for facts."),
        Message::user("What's the weather in Paris, and how much is 40 euros in dollars?"),
    ]);
    invocation.on(|envelope, _control| match envelope.kind {
        EventKind::ModelDelta(ModelDelta::Text(text)) => print!("{text}"),
        EventKind::Tool(ToolStreamEvent::Call { call, .. }) => {
            println!("\n-> {} {}", call.tool_name, call.arguments);
        }
        EventKind::Tool(ToolStreamEvent::Result { result }) => {
            println!("<- {}", result.to_model_text());
        }
        _ => {}
    });
    match invocation.await {
        RunOutcome::Completed { text, .. } => {
            println!("\n\nanswer: {text}");
            Ok(())
        }
        RunOutcome::Failed { error, .. } => Err(format!("the run failed: {error}").into()),
        RunOutcome::Cancelled { .. } => Err("the run was cancelled".into()),
    }
}

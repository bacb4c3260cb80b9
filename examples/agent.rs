//! A real agent: a model behind an API calls two `#[tool]` functions.
//!
//! Which model it talks to comes from the environment:
//!
//! - `OPENAI_API_KEY` or `OPENAI_BASE_URL` (and optionally `OPENAI_MODEL`):
//!   OpenAI Chat Completions, or any OpenAI-compatible server the base URL
//!   names (a local Ollama: `OPENAI_BASE_URL=http://127.0.0.1:11434/v1
//!   OPENAI_MODEL=llama3.2`, no key);
//! - `ANTHROPIC_API_KEY` (and `ANTHROPIC_MODEL`, `ANTHROPIC_BASE_URL` for a
//!   proxy): Anthropic Messages;
//! - `GEMINI_API_KEY` or `GOOGLE_API_KEY` (and `GEMINI_MODEL`): Gemini;
//! - `AZURE_OPENAI_ENDPOINT` with `AZURE_OPENAI_API_KEY` and
//!   `AZURE_OPENAI_DEPLOYMENT`: a deployment on Azure OpenAI (v1 API);
//! - `BEDROCK_MODEL` (a model id or inference profile) with `AWS_REGION` and
//!   AWS credentials as the AWS SDKs find them (`AWS_ACCESS_KEY_ID`, a
//!   profile of `~/.aws`, or a Bedrock API key in `AWS_BEARER_TOKEN_BEDROCK`):
//!   AWS Bedrock's Converse API;
//! - `VERTEX_MODEL` with `GOOGLE_CLOUD_PROJECT` (and `GOOGLE_CLOUD_LOCATION`)
//!   and Google's credentials (`GOOGLE_APPLICATION_CREDENTIALS`, or
//!   `gcloud auth application-default login`): Gemini on Vertex AI, or
//!   Anthropic's model when the name starts with `claude`.
//!
//! These are the official SDKs' variables: the environment's key goes to
//! the provider's API or to the base URL the environment names, nowhere
//! else.
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
    if let Some(model) = env("BEDROCK_MODEL") {
        let region = env("AWS_REGION")
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "(region from ~/.aws/config)".into());
        return Some((
            Arc::new(behest::models::bedrock::Converse::new(model.clone())),
            format!("Bedrock {model} in {region}"),
        ));
    }
    if let (Some(model), Some(project)) = (env("VERTEX_MODEL"), env("GOOGLE_CLOUD_PROJECT")) {
        let label = format!("Vertex AI {model} in {project}");
        let client: Arc<dyn Model> = if model.starts_with("claude") {
            Arc::new(behest::models::vertex::VertexAnthropic::new(model))
        } else {
            Arc::new(behest::models::vertex::VertexGemini::new(model))
        };
        return Some((client, label));
    }
    if let (Some(endpoint), Some(deployment)) =
        (env("AZURE_OPENAI_ENDPOINT"), env("AZURE_OPENAI_DEPLOYMENT"))
    {
        return Some((
            Arc::new(behest::models::azure::AzureChat::new(deployment.clone())),
            format!("Azure OpenAI {deployment} at {endpoint}"),
        ));
    }
    if env("OPENAI_API_KEY").is_some() || env("OPENAI_BASE_URL").is_some() {
        let model = env("OPENAI_MODEL").unwrap_or_else(|| "gpt-4.1-mini".into());
        let at = env("OPENAI_BASE_URL").unwrap_or_else(|| "OpenAI".into());
        return Some((
            Arc::new(Chat::new(model.clone())),
            format!("{model} at {at}"),
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
             \x20 AZURE_OPENAI_ENDPOINT=... AZURE_OPENAI_API_KEY=... AZURE_OPENAI_DEPLOYMENT=...\n\
             \x20 BEDROCK_MODEL=... AWS_REGION=...      (AWS credentials as the AWS CLI finds them)\n\
             \x20 VERTEX_MODEL=... GOOGLE_CLOUD_PROJECT=... (Google credentials as gcloud finds them)\n\
             or, for a local Ollama (`ollama pull llama3.2`):\n\
             \x20 OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.2\n\
             (another OpenAI-compatible server: add OPENAI_API_KEY=... if it wants a key)\n\
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
        other => Err(format!("the run ended {:?}", other.state()).into()),
    }
}

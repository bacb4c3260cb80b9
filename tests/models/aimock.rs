//! Every client against aimock (`@copilotkit/aimock` on the npm registry),
//! a stand-in of the providers nobody here wrote: OpenAI's Chat Completions
//! and Responses, Anthropic's Messages, Gemini, Azure OpenAI, Bedrock's
//! Converse (its streams in AWS event-stream frames) and Gemini on Vertex
//! AI answer the same fixtures (`tests/data/aimock/fixtures.json`): a
//! greeting, streamed and whole, a run that calls a tool and answers with
//! its result, and a refusal as the provider sends it. `BEHEST_AIMOCK`
//! names aimock's `llmock` script (`.ci/run` installs it); without it these
//! tests say "skipped". aimock has no Claude on Vertex AI (`rawPredict`),
//! which `tests/models/vertex.rs` checks against a local server.

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use behest::models::anthropic::Messages;
use behest::models::azure::AzureChat;
use behest::models::bedrock::Converse;
use behest::models::gemini::Gemini;
use behest::models::openai::{Chat, Responses};
use behest::models::vertex::VertexGemini;
use behest::models::{AccessToken, AwsCredentials, Client, Format, RetryPolicy, TokenSource};
use behest::{Agent, Message, Model, ToolRegistry, ToolRuntime};
use tokio::io::{AsyncBufReadExt, BufReader};

const FIXTURES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aimock/fixtures.json"
);

/// A running aimock, stopped when dropped.
struct Aimock {
    origin: String,
    _process: tokio::process::Child,
}

impl Aimock {
    async fn start() -> Self {
        let script = std::env::var_os("BEHEST_AIMOCK").expect("BEHEST_AIMOCK");
        // A free port, asked of the system and given back for aimock.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut process = tokio::process::Command::new("node")
            .arg(script)
            .args(["--port", &port.to_string(), "--host", "127.0.0.1"])
            .args(["--fixtures", FIXTURES])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node runs aimock");
        let mut lines = BufReader::new(process.stdout.take().unwrap()).lines();
        let listening = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if line.contains("listening") {
                    return true;
                }
            }
            false
        })
        .await;
        assert_eq!(listening.ok(), Some(true), "aimock did not start");
        // The rest of its log is read, so that it never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            origin: format!("http://127.0.0.1:{port}"),
            _process: process,
        }
    }
}

/// Get the weather of a city.
#[behest::tool]
fn get_weather(
    /// The city.
    city: String,
) -> String {
    format!("12 °C in {city}")
}

/// A token source for Vertex AI that counts what it was asked.
struct Fixed(Arc<AtomicUsize>);

impl TokenSource for Fixed {
    fn token(&self) -> futures::future::BoxFuture<'_, Result<AccessToken, behest::ModelError>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async {
            Ok(AccessToken {
                token: "ya29.aimock".to_owned(),
                expires_at: std::time::SystemTime::now() + std::time::Duration::from_secs(3600),
            })
        })
    }
}

/// The same three exchanges with one client: a greeting streamed and
/// whole (with the fixture's token counts), a run whose tool call is
/// answered, and the provider's refusal as an error with its status.
async fn exchanges<F: Format>(name: &str, client: Client<F>) {
    let hello = [Message::user("Say hello")];
    for stream in [true, false] {
        let turn = client
            .clone()
            .stream(stream)
            .respond(&hello, &[])
            .await
            .unwrap_or_else(|error| panic!("{name} (stream {stream}): {error}"));
        assert_eq!(
            turn.text.as_deref(),
            Some("Hello from aimock!"),
            "{name} (stream {stream})"
        );
        let usage = turn.usage.unwrap_or_else(|| panic!("{name}: no usage"));
        assert_eq!(
            (usage.input_tokens, usage.output_tokens),
            (5, 4),
            "{name} (stream {stream})"
        );
    }
    let runtime = ToolRuntime::new(ToolRegistry::new().with(GetWeather).unwrap());
    let outcome = Agent::new(client.clone(), runtime)
        .invoke([Message::user("What is the weather in Oslo?")])
        .await;
    assert_eq!(
        outcome.text(),
        Some("It is 12 °C in Oslo."),
        "{name}: {outcome:?}"
    );
    let results: Vec<&str> = outcome
        .transcript()
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.content.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(results, ["12 °C in Oslo"], "{name}");
    let error = client
        .retry(RetryPolicy::none())
        .respond(&[Message::user("fail please")], &[])
        .await
        .unwrap_err();
    assert_eq!(error.status, Some(503), "{name}: {error}");
    assert!(error.retryable, "{name}: {error}");
    assert!(error.message.contains("overloaded"), "{name}: {error}");
}

#[tokio::test]
#[cfg_attr(
    not(behest_aimock),
    ignore = "skipped: BEHEST_AIMOCK does not name aimock's script (.ci/run installs it)"
)]
async fn every_client_answers_aimock_s_fixtures() {
    let aimock = Aimock::start().await;
    let origin = &aimock.origin;
    let v1 = format!("{origin}/v1");
    exchanges("chat", Chat::new("gpt-4.1").api_key("k").base_url(&v1)).await;
    exchanges(
        "responses",
        Responses::new("gpt-4.1").api_key("k").base_url(&v1),
    )
    .await;
    exchanges(
        "messages",
        Messages::new("claude-sonnet-4-5")
            .api_key("k")
            .base_url(&v1)
            .max_tokens(512),
    )
    .await;
    exchanges(
        "gemini",
        Gemini::new("gemini-2.5-flash")
            .api_key("k")
            .base_url(format!("{origin}/v1beta")),
    )
    .await;
    exchanges(
        "azure",
        AzureChat::new("gpt41-prod")
            .api_key("k")
            .base_url(origin)
            .api_version("2024-10-21"),
    )
    .await;
    exchanges(
        "bedrock",
        Converse::new("anthropic.claude-sonnet-4-5-20250929-v1:0")
            .region("us-east-1")
            .base_url(origin)
            .credentials(AwsCredentials::new("AKIDAIMOCK", "secret")),
    )
    .await;
    let asked = Arc::new(AtomicUsize::new(0));
    exchanges(
        "vertex gemini",
        VertexGemini::new("gemini-2.5-flash")
            .project("behest-test")
            .location("us-central1")
            .base_url(&v1)
            .token_source(Fixed(asked.clone())),
    )
    .await;
    assert_eq!(asked.load(Ordering::SeqCst), 1);
}

//! Model clients over HTTP: OpenAI Chat Completions (and any
//! OpenAI-compatible server), OpenAI Responses, Anthropic Messages and
//! Gemini, each a [`Model`](crate::Model) a run can drive.
//!
//! Each client writes its request with [`behest::providers`](crate::providers)
//! and reads the answer with the same module's parser or stream assembler:
//! one place per format. Turns stream by default (server-sent events, read
//! as they arrive); a run shows the pieces as
//! [`EventKind::ModelDelta`](crate::EventKind::ModelDelta) events, and the
//! assembled message is the one the whole response would give.
//!
//! Failures are [`ModelError`](crate::ModelError)s with the HTTP status, the
//! provider's error type and request id and whether a retry may help.
//! Requests that fail before an answer starts are retried with backoff
//! ([`RetryPolicy`]), and so is a stream that breaks off before its end:
//! the turn is asked again from its start, and a run's stream of pieces
//! says so with [`ModelDelta::Restart`](crate::ModelDelta::Restart).
//! Dropping the future (cancelling the run) aborts the request.
//!
//! Each client sits behind its cargo feature: `openai`, `anthropic`,
//! `gemini`, or `models` for all.

#[cfg(feature = "bedrock")]
mod aws;
#[cfg(any(feature = "anthropic", feature = "bedrock"))]
mod claude;
mod client;
mod config;
#[cfg(feature = "bedrock")]
mod eventstream;
mod exchange;
mod http;
#[cfg(feature = "otel")]
mod metrics;
mod sse;
pub(crate) mod tokens;
mod tools;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "azure")]
pub mod azure;
#[cfg(feature = "bedrock")]
pub mod bedrock;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "vertex")]
pub mod google;
#[cfg(feature = "openai")]
pub mod openai;
#[cfg(feature = "vertex")]
pub mod vertex;

#[cfg(feature = "bedrock")]
pub use aws::AwsCredentials;
pub use client::{Client, Format, NativeOutput};
pub(crate) use config::Config;
pub use config::{ApiKey, RetryPolicy, ToolChoice};
#[cfg(feature = "bedrock")]
#[doc(hidden)]
pub use http::eventstream_events;
#[doc(hidden)]
pub use http::{sse_data, sse_events};
pub use tokens::{AccessToken, TokenSource};

/// What a provider's explicit cache holds, for the requests that use it
/// to leave out ([`gemini::GeminiCache`](crate::models::gemini::GeminiCache)).
#[doc(hidden)]
#[derive(Clone, PartialEq)]
pub struct CachedPrefix {
    /// The cache's name.
    pub name: String,
    /// The conversation's first messages it holds.
    pub messages: Vec<crate::Message>,
    /// The tools' declarations it holds, as sent (`tools`).
    pub tools: Option<serde_json::Value>,
    /// Their calling config, as sent (`toolConfig`).
    pub tool_config: Option<serde_json::Value>,
}

/// Its name and size: the messages may hold what a log must not.
impl std::fmt::Debug for CachedPrefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedPrefix")
            .field("name", &self.name)
            .field("messages", &self.messages.len())
            .field("tools", &self.tools.is_some())
            .finish()
    }
}

/// Runs one model request in a span as the OpenTelemetry GenAI semantic
/// conventions name it: `chat {model}` (the field `otel.name`, which
/// `tracing-opentelemetry` takes as the span's name), of kind client,
/// with `gen_ai.operation.name`, `gen_ai.provider.name` (`openai`,
/// `anthropic`, `gcp.gemini`; its older name `gen_ai.system` too),
/// `gen_ai.request.model`, the usage (`gen_ai.usage.input_tokens`,
/// `gen_ai.usage.cache_read.input_tokens`, …, recorded as `i64`: the
/// conventions' type, where `u64` would be exported as text),
/// `gen_ai.response.model` and `error.type`. Prompts and answers are not
/// recorded.
pub(crate) async fn traced(
    system: &'static str,
    cache_apart: bool,
    model: &str,
    base_url: &str,
    turn: impl std::future::Future<Output = Result<crate::AssistantMessage, crate::ModelError>>,
) -> Result<crate::AssistantMessage, crate::ModelError> {
    use tracing::field::Empty;
    use tracing::Instrument;

    let span = tracing::info_span!(
        "chat",
        otel.name = format!("chat {model}"),
        otel.kind = "client",
        gen_ai.system = system,
        gen_ai.provider.name = system,
        gen_ai.operation.name = "chat",
        gen_ai.request.model = model,
        gen_ai.response.model = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        gen_ai.usage.cache_read.input_tokens = Empty,
        gen_ai.usage.cache_creation.input_tokens = Empty,
        gen_ai.usage.reasoning.output_tokens = Empty,
        server.address = Empty,
        server.port = Empty,
        "error.type" = Empty,
        otel.status_code = Empty,
    );
    if let Some((host, port)) = server(base_url) {
        span.record("server.address", host);
        span.record("server.port", i64::from(port));
    }
    let started = std::time::Instant::now();
    let result = turn.instrument(span.clone()).await;
    let mut error_type = None;
    match &result {
        Ok(message) => {
            if let Some(usage) = message.usage.map(|usage| conventional(cache_apart, usage)) {
                let count = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
                span.record("gen_ai.usage.input_tokens", count(usage.input_tokens));
                span.record("gen_ai.usage.output_tokens", count(usage.output_tokens));
                span.record(
                    "gen_ai.usage.cache_read.input_tokens",
                    count(usage.cached_tokens),
                );
                span.record(
                    "gen_ai.usage.cache_creation.input_tokens",
                    count(usage.cache_write_tokens),
                );
                span.record(
                    "gen_ai.usage.reasoning.output_tokens",
                    count(usage.reasoning_tokens),
                );
            }
            if let Some(model) = &message.model {
                span.record("gen_ai.response.model", model.as_str());
            }
        }
        Err(error) => {
            let kind = error
                .kind
                .clone()
                .or_else(|| error.status.map(|status| status.to_string()))
                .unwrap_or_else(|| "_OTHER".to_owned());
            span.record("error.type", kind.as_str());
            span.record("otel.status_code", "ERROR");
            error_type = Some(kind);
        }
    }
    #[cfg(feature = "otel")]
    metrics::record(
        &metrics::Request {
            provider: system,
            model,
            base_url,
        },
        started.elapsed(),
        result
            .as_ref()
            .ok()
            .and_then(|message| message.model.as_deref()),
        result
            .as_ref()
            .ok()
            .and_then(|message| message.usage.as_ref()),
        error_type.as_deref(),
    );
    #[cfg(not(feature = "otel"))]
    let _ = (started, error_type);
    result
}

/// A turn's usage as the conventions count it: `gen_ai.usage.input_tokens`
/// includes the tokens read from and written to a cache, which Anthropic
/// (wherever it is served) and Bedrock count apart from their input tokens
/// (`cache_apart`).
fn conventional(cache_apart: bool, mut usage: crate::usage::Usage) -> crate::usage::Usage {
    if cache_apart {
        usage.input_tokens = usage
            .input_tokens
            .saturating_add(usage.cached_tokens)
            .saturating_add(usage.cache_write_tokens);
    }
    usage
}

/// The host and port a base URL names (the scheme's port when it names
/// none), for `server.address` and `server.port`.
pub(crate) fn server(base_url: &str) -> Option<(&str, u16)> {
    let (scheme, rest) = base_url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let default = match scheme {
        "https" => 443,
        "http" => 80,
        _ => return None,
    };
    // An IPv6 host is bracketed: its colons are not the port's.
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !port.contains(']') => (host, port.parse().ok()?),
        _ => (authority, default),
    };
    (!host.is_empty()).then_some((host, port))
}

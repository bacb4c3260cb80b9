//! One turn's exchange, the same for every client: send the request, then
//! read the whole answer, or its stream event by event into the format's
//! assembler while the pieces go to the run.

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::config::Config;
use super::http;
use crate::conversation::{AssistantMessage, DeltaSink, ModelDelta};
use crate::providers::{anthropic, gemini, openai, ParseError};
use crate::run::ModelError;

/// A format's stream assembler.
pub(crate) trait Assemble {
    fn push(&mut self, event: &Value) -> Result<(), ParseError>;
    fn finish(self) -> AssistantMessage;
}

macro_rules! assemble {
    ($($stream:ty),*) => {$(
        impl Assemble for $stream {
            fn push(&mut self, event: &Value) -> Result<(), ParseError> {
                <$stream>::push(self, event)
            }
            fn finish(self) -> AssistantMessage {
                <$stream>::finish(self)
            }
        }
    )*};
}
assemble!(
    openai::ChatStream,
    openai::ResponsesStream,
    anthropic::Stream,
    gemini::Stream
);

/// What one stream event says besides its content.
pub(crate) struct Event {
    /// The pieces to show the run.
    pub deltas: Vec<ModelDelta>,
    /// Whether it is the format's end marker.
    pub ends: bool,
}

/// How a client reads its format.
pub(crate) struct Format<S> {
    /// The whole answer's parser.
    pub whole: fn(&Value) -> Result<AssistantMessage, ParseError>,
    /// A fresh stream assembler.
    pub stream: S,
    /// The end marker, for the error when a stream stops before it.
    pub end_marker: &'static str,
}

/// Sends `body` to `url` and reads the answer: whole, or (when the client
/// streams) event by event, `read_event` telling the pieces and the end
/// marker; an error event is its `Err`.
pub(crate) async fn exchange<S: Assemble>(
    config: &Config,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    format: Format<S>,
    deltas: Option<&DeltaSink>,
    mut read_event: impl FnMut(&Value) -> Result<Event, ModelError>,
) -> Result<AssistantMessage, ModelError> {
    let response = http::post(config, url, headers, body).await?;
    if !config.stream {
        let value = http::read_json(config, response).await?;
        return (format.whole)(&value).map_err(parse_error);
    }
    let mut stream = format.stream;
    let mut ended = false;
    http::read_events(config, response, |_, event| {
        let read = read_event(&event)?;
        ended |= read.ends;
        if let Some(deltas) = deltas {
            for delta in read.deltas {
                deltas.send(delta);
            }
        }
        stream.push(&event).map_err(parse_error)
    })
    .await?;
    if !ended {
        return Err(ModelError::new(format!(
            "the model's stream ended before {}",
            format.end_marker
        ))
        .retryable(true));
    }
    Ok(stream.finish())
}

/// An error the provider reported inside a stream.
pub(crate) fn stream_error(event: &Value) -> ModelError {
    let error = event
        .get("error")
        .or_else(|| event.pointer("/response/error"))
        .unwrap_or(event);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("the model's stream reported an error");
    let mut model_error =
        ModelError::new(format!("the model's stream reported an error: {message}"));
    // Anthropic says `type`, OpenAI `code`, Gemini `status` (its `code`
    // is the HTTP number).
    // Responses' own `error` event says `"type": "error"`: its `code` is
    // the kind.
    let kind = ["type", "code", "status"]
        .iter()
        .find_map(|key| error.get(*key).and_then(Value::as_str))
        .filter(|kind| *kind != "error")
        .or_else(|| error.get("code").and_then(Value::as_str));
    if let Some(kind) = kind {
        let retryable = matches!(
            kind,
            "overloaded_error"
                | "rate_limit_error"
                | "server_error"
                | "api_error"
                | "UNAVAILABLE"
                | "RESOURCE_EXHAUSTED"
                | "INTERNAL"
                | "DEADLINE_EXCEEDED"
        );
        model_error = model_error.with_kind(kind).retryable(retryable);
    }
    model_error
}

pub(crate) fn parse_error(error: ParseError) -> ModelError {
    ModelError::new(format!("the model's answer could not be read: {error}")).with_source(error)
}

//! One turn's exchange, the same for every client: send the request, then
//! read the whole answer, or its stream event by event into the format's
//! assembler while the pieces go to the run.

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::config::Config;
use super::http;
use crate::conversation::{AssistantMessage, DeltaSink};
use crate::providers::{ParseError, StreamAssembler};
use crate::run::ModelError;

/// Sends `body` to `url` and reads the answer: whole with `whole`, or
/// (when the client streams) event by event into a fresh `S`, its pieces
/// going to `deltas` as they come; an error event ends the turn with the
/// provider's error.
pub(crate) async fn exchange<S: StreamAssembler>(
    config: &Config,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    whole: fn(&Value) -> Result<AssistantMessage, ParseError>,
    deltas: Option<&DeltaSink>,
) -> Result<AssistantMessage, ModelError> {
    let response = http::post(config, url, headers, body).await?;
    if !config.stream {
        let value = http::read_json(config, response).await?;
        return whole(&value).map_err(parse_error);
    }
    let mut stream = S::default();
    let mut ended = false;
    http::read_events(config, response, |_, event| {
        let pushed = stream.push(&event).map_err(parse_error)?;
        if let Some(error) = &pushed.error {
            return Err(stream_error(error));
        }
        ended |= pushed.ended;
        if let Some(deltas) = deltas {
            for delta in pushed.deltas {
                deltas.send(delta);
            }
        }
        Ok(())
    })
    .await?;
    if !ended {
        return Err(
            ModelError::new(format!("the model's stream ended before {}", S::END_MARKER))
                .retryable(true),
        );
    }
    Ok(stream.finish())
}

/// An error the provider reported inside a stream.
fn stream_error(event: &Value) -> ModelError {
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

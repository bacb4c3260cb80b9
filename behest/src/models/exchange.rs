//! One turn's exchange, the same for every client: send the request, then
//! read the whole answer, or its stream event by event into the format's
//! assembler while the pieces go to the run.

use reqwest::header::HeaderMap;
use serde_json::Value;

use super::config::Config;
use super::http;
use crate::conversation::{AssistantMessage, DeltaSink, ModelDelta};
use crate::model::ModelError;
use crate::providers::{ParseError, StreamAssembler};

/// Sends `body` to `url` and reads the answer: whole with `whole`, or
/// (when the client streams) event by event into a fresh `S`, its pieces
/// going to `deltas` as they come; an error event ends the turn with the
/// provider's error. A stream that fails in a way worth trying again (cut
/// before its end marker, broken, paused too long, an overload reported in
/// it) is asked again under the client's [`RetryPolicy`](super::RetryPolicy),
/// the sink told with [`ModelDelta::Restart`] to drop what it showed.
pub(crate) async fn exchange<S: StreamAssembler>(
    config: &Config,
    framing: http::Framing,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    whole: fn(&Value) -> Result<AssistantMessage, ParseError>,
    deltas: Option<&DeltaSink>,
) -> Result<AssistantMessage, ModelError> {
    if !config.stream {
        let response = http::post(config, url, headers, body, deltas).await?;
        let value = http::read_json(config, response).await?;
        return whole(&value).map_err(parse_error);
    }
    let mut restarts: u32 = 0;
    loop {
        let mut shown = false;
        // Every restart spends a retry of the one budget: the requests a
        // turn may make stay within the policy's count.
        let mut left = config.retry.clone();
        left.max_retries = left.max_retries.saturating_sub(restarts);
        let attempt = stream_once::<S>(
            config,
            framing,
            &left,
            url,
            headers.clone(),
            body,
            deltas,
            &mut shown,
        )
        .await;
        let error = match attempt {
            Ok(message) => return Ok(message),
            Err(error) => error,
        };
        // A failure before the stream began was retried by `post` already.
        if !error.error.retryable || restarts >= config.retry.max_retries || !error.mid_stream {
            return Err(error.error);
        }
        let wait = config.retry.backoff(restarts).min(config.retry.max_backoff);
        tracing::warn!(
            attempt = restarts + 1,
            wait_ms = wait.as_millis() as u64,
            error = %error.error,
            "the model's stream failed; asking again"
        );
        if let Some(deltas) = deltas {
            if shown {
                deltas.send(ModelDelta::Restart);
            }
            deltas.send(ModelDelta::Retry {
                attempt: restarts.saturating_add(1),
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                error: error.error.to_string(),
            });
        }
        tokio::time::sleep(wait).await;
        restarts += 1;
    }
}

/// Why one streamed attempt failed, and whether its stream had begun.
struct Failed {
    error: ModelError,
    mid_stream: bool,
}

impl Failed {
    fn before_stream(error: ModelError) -> Self {
        Self {
            error,
            mid_stream: false,
        }
    }

    fn in_stream(error: ModelError) -> Self {
        Self {
            error,
            mid_stream: true,
        }
    }
}

/// One streamed attempt: `shown` says whether a piece reached the sink.
#[allow(clippy::too_many_arguments)]
async fn stream_once<S: StreamAssembler>(
    config: &Config,
    framing: http::Framing,
    policy: &super::RetryPolicy,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    deltas: Option<&DeltaSink>,
    shown: &mut bool,
) -> Result<AssistantMessage, Failed> {
    let response = http::post_retrying(config, policy, url, headers, body, deltas)
        .await
        .map_err(Failed::before_stream)?;
    let mut stream = S::default();
    let mut ended = false;
    // Each event's pieces, in one buffer for the whole stream.
    let mut pieces = Vec::new();
    let bytes = http::read_events(config, framing, response, |_, data| {
        // One parse per event: straight into the format's types where it
        // reads the event's shape, else into a `Value`.
        pieces.clear();
        let pushed = match stream.__push_json_into(data, &mut pieces) {
            Some(pushed) => pushed,
            None => stream.push(&http::json_data(data)?),
        };
        let mut pushed = pushed.map_err(parse_error)?;
        if let Some(error) = &pushed.error {
            return Err(stream_error(error));
        }
        ended |= pushed.ended;
        pieces.append(&mut pushed.deltas);
        if let Some(deltas) = deltas {
            for delta in pieces.drain(..) {
                *shown = true;
                deltas.send(delta);
            }
        }
        Ok(())
    })
    .await
    .map_err(Failed::in_stream)?;
    // A body with nothing in it, not even a comment or `[DONE]`.
    if !ended && bytes == 0 {
        return Err(Failed::in_stream(empty_stream(body)));
    }
    if !ended {
        return Err(Failed::in_stream(
            ModelError::new(format!("the model's stream ended before {}", S::END_MARKER))
                .retryable(true),
        ));
    }
    Ok(stream.finish())
}

/// A stream that ended without a byte: what servers of the OpenAI API
/// that cannot stream a turn with tools do (they answer 200 and close). Asking again would do the same; the setting that avoids it is
/// named.
fn empty_stream(body: &Value) -> ModelError {
    let tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|tools| !tools.is_empty());
    let why = if tools {
        "a server that cannot stream a turn with tools does this (some versions of llama.cpp's \
         server, Ollama and LM Studio)"
    } else {
        "the server may not stream at all"
    };
    ModelError::new(format!(
        "the server answered the streamed request and ended its stream without a single byte: \
         {why}; turn streaming off for this client (`.stream(false)`) to read the answer whole"
    ))
    .with_kind("empty_stream")
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
                // Bedrock's exceptions in a stream.
                | "throttlingException"
                | "serviceUnavailableException"
                | "internalServerException"
                | "modelStreamErrorException"
        );
        model_error = model_error.with_kind(kind).retryable(retryable);
    }
    model_error
}

pub(crate) fn parse_error(error: ParseError) -> ModelError {
    ModelError::new(format!("the model's answer could not be read: {error}")).with_source(error)
}

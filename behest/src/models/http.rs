//! The HTTP exchange every client shares: one request with retries, the
//! provider's error read into a [`ModelError`], and a stream of server-sent
//! events read incrementally.

use std::ops::ControlFlow;
use std::sync::OnceLock;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue, CONTENT_TYPE};
use reqwest::Response;
#[cfg(test)]
use reqwest::StatusCode;
use serde_json::Value;

use super::config::Config;
use super::sse;
use crate::conversation::{DeltaSink, ModelDelta};
use crate::model::ModelError;

/// Statuses worth another attempt: timeouts, conflicts, rate limits and
/// the servers' own failures (529: Anthropic's "overloaded").
const RETRYABLE: &[u16] = &[408, 409, 429, 500, 502, 503, 504, 529];

/// Headers providers put their request id in.
const REQUEST_ID_HEADERS: &[&str] = &[
    "x-request-id",
    "request-id",
    "x-goog-request-id",
    "x-amzn-requestid",
];

/// The process's HTTP client: one connection pool for every model client.
/// Building it fails only when its TLS setup does; that is then every
/// request's error, not a panic.
pub(crate) fn client() -> Result<&'static reqwest::Client, ModelError> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // rustls needs a crypto provider; ring is the one compiled in.
            // An application that installed its own keeps it.
            let _installed = rustls::crypto::ring::default_provider().install_default();
            // No redirect is followed: the APIs never redirect a POST, and
            // reqwest would carry every key header but `Authorization`
            // (`x-api-key`, `x-goog-api-key`, Azure's `api-key`) to
            // whatever host a redirect names.
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .map_err(|error| error.to_string())
        })
        .as_ref()
        .map_err(|error| ModelError::new(format!("the HTTP client could not start: {error}")))
}

/// Sends `body` to `url` with the client's headers, trying again on the
/// failures [`RetryPolicy`](super::RetryPolicy) covers. Returns the first
/// successful response, before its body is read.
pub(crate) async fn post(
    config: &Config,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    deltas: Option<&DeltaSink>,
) -> Result<Response, ModelError> {
    post_retrying(config, &config.retry, url, headers, body, deltas).await
}

/// [`post`] with retries out of `policy`: a stream asked for again spends
/// the same budget its restarts do.
pub(crate) async fn post_retrying(
    config: &Config,
    policy: &super::RetryPolicy,
    url: &str,
    headers: HeaderMap,
    body: &Value,
    deltas: Option<&DeltaSink>,
) -> Result<Response, ModelError> {
    send(
        config,
        policy,
        reqwest::Method::POST,
        url,
        headers,
        Some(body),
        deltas,
    )
    .await
}

/// `method` to `url` with the client's headers and `body` as JSON, tried
/// again under `policy` (told to `deltas`, when given); the first
/// successful response, before its body is read.
async fn send(
    config: &Config,
    policy: &super::RetryPolicy,
    method: reqwest::Method,
    url: &str,
    headers: HeaderMap,
    body: Option<&Value>,
    deltas: Option<&DeltaSink>,
) -> Result<Response, ModelError> {
    let mut headers = with_config_headers(headers, config)?;
    let body = match body {
        Some(body) => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            serde_json::to_vec(body).map_err(|error| {
                ModelError::new("the request could not be encoded").with_source(error)
            })?
        }
        None => Vec::new(),
    };
    let client = match &config.http {
        Some(own) => own,
        None => client()?,
    };
    retrying(policy, deltas, || {
        // Each attempt is signed anew (AWS): a signature is good for
        // minutes, and a retry may come later.
        let signed = signed(config, &method, url, headers.clone(), &body);
        let request = client.request(method.clone(), url).body(body.clone());
        async move {
            let headers = signed.map_err(|error| (error, None))?;
            answered(config, request.headers(headers).send()).await
        }
    })
    .await
}

/// `headers` with the request's AWS signature, for a client that signs
/// (Bedrock without an API key); as they are for the others.
#[cfg_attr(not(feature = "bedrock"), allow(clippy::unnecessary_wraps))]
fn signed(
    config: &Config,
    method: &reqwest::Method,
    url: &str,
    headers: HeaderMap,
    body: &[u8],
) -> Result<HeaderMap, ModelError> {
    #[cfg(feature = "bedrock")]
    if let Some(signer) = config.sigv4.as_ref().filter(|_| config.key().is_none()) {
        let mut headers = headers;
        signer.sign(
            method.as_str(),
            url,
            &mut headers,
            body,
            std::time::SystemTime::now(),
        )?;
        return Ok(headers);
    }
    let _unused = (config, method, url, body);
    Ok(headers)
}

/// The answer to one attempt: its response when it succeeded, else the
/// error and the wait the server asked for before another.
async fn answered(
    config: &Config,
    sent: impl std::future::Future<Output = reqwest::Result<Response>>,
) -> Result<Response, (ModelError, Option<Duration>)> {
    // The timeout covers the answer's head only: reqwest's own would also
    // cover the body, and so cut a long stream off.
    match tokio::time::timeout(config.time_limit(), sent).await {
        Err(_elapsed) => Err((not_in_time(config), None)),
        Ok(Ok(response)) if response.status().is_success() => Ok(response),
        Ok(Ok(response)) => {
            let header_wait = retry_after(response.headers());
            // OpenAI and Anthropic say themselves whether to retry.
            let should_retry = response
                .headers()
                .get("x-should-retry")
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.parse::<bool>().ok());
            let (mut error, body_wait) = failure(config, response).await;
            if let Some(should_retry) = should_retry {
                error = error.retryable(should_retry);
            }
            Err((error, header_wait.or(body_wait)))
        }
        Ok(Err(error)) => Err((connection_error(&error), None)),
    }
}

/// One request of a resource's API besides turns (a Gemini cache created,
/// changed or deleted): `method` to `url` with `body`, retried as a turn's
/// request is before its answer; the answer's JSON (`null` for an empty
/// body).
#[cfg(feature = "gemini")]
pub(crate) async fn call(
    config: &Config,
    method: reqwest::Method,
    url: &str,
    headers: HeaderMap,
    body: Option<&Value>,
) -> Result<Value, ModelError> {
    let response = send(config, &config.retry, method, url, headers, body, None).await?;
    let text = tokio::time::timeout(config.time_limit(), response.text())
        .await
        .map_err(|_| not_in_time(config))?
        .map_err(|error| connection_error(&error))?;
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&text)
        .map_err(|error| ModelError::new(format!("the answer is not JSON: {error}")))
}

/// Runs `attempt` until it succeeds, fails for good, or the policy's
/// retries run out; between attempts it waits as the server asked (the
/// `Duration` beside the error) or backs off, never longer than the
/// policy's longest wait.
async fn retrying<T, F, Fut>(
    policy: &super::RetryPolicy,
    deltas: Option<&DeltaSink>,
    mut attempt: F,
) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, (ModelError, Option<Duration>)>>,
{
    let mut retries: u32 = 0;
    loop {
        let (error, wait) = match attempt().await {
            Ok(answer) => return Ok(answer),
            Err(failed) => failed,
        };
        if !error.retryable || retries >= policy.max_retries {
            return Err(error);
        }
        let wait = wait
            .unwrap_or_else(|| policy.backoff(retries))
            .min(policy.max_backoff);
        tracing::warn!(
            status = error.status,
            attempt = retries + 1,
            wait_ms = wait.as_millis() as u64,
            "model request failed; trying again"
        );
        if let Some(deltas) = deltas {
            deltas.send(ModelDelta::Retry {
                attempt: retries.saturating_add(1),
                wait_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                error: error.to_string(),
            });
        }
        tokio::time::sleep(wait).await;
        retries += 1;
    }
}

/// The events of a streamed response, each event's `data` handed to
/// `on_event` as text with the event's type. Ends at the `data: [DONE]`
/// marker or the end of the body. A pause longer than the timeout, a
/// broken connection or a garbled line is an error. Gives how many bytes
/// the body had.
pub(crate) async fn read_events(
    config: &Config,
    framing: Framing,
    mut response: Response,
    mut on_event: impl FnMut(&str, &str) -> Result<(), ModelError>,
) -> Result<usize, ModelError> {
    let request_id = request_id(response.headers());
    let fail = |error: ModelError| with_request_id(error, request_id.as_deref());
    let mut decoder = Frames::new(framing);
    let mut on_event = |event: &str, data: &str| data_event(event, data, &mut on_event);
    let mut bytes = 0usize;
    loop {
        // The pause is timed on the bytes, not the events: comment lines
        // a server sends to keep a slow stream open count as signs of life.
        let chunk = match tokio::time::timeout(config.time_limit(), response.chunk()).await {
            Err(_elapsed) => {
                return Err(fail(
                    ModelError::new(format!(
                        "the model's stream paused for more than {:?}",
                        config.time_limit()
                    ))
                    .retryable(true)
                    .timed_out(true),
                ))
            }
            Ok(Err(error)) => return Err(fail(broke_off(&error.without_url_text()))),
            Ok(Ok(None)) => return decoder.finish().map(|()| bytes).map_err(fail),
            Ok(Ok(Some(chunk))) => chunk,
        };
        bytes = bytes.saturating_add(chunk.len());
        if decoder
            .feed(&chunk, &mut on_event)
            .map_err(fail)?
            .is_break()
        {
            return Ok(bytes);
        }
    }
}

/// How a provider frames the events of a streamed answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[doc(hidden)]
pub enum Framing {
    /// Server-sent events, their `data` JSON.
    Sse,
    /// AWS event-stream frames, their payload JSON (Bedrock).
    #[cfg(feature = "bedrock")]
    EventStream,
}

/// The reader of one framing.
enum Frames {
    Sse(sse::Decoder),
    #[cfg(feature = "bedrock")]
    EventStream(Box<super::eventstream::Decoder>),
}

impl Frames {
    fn new(framing: Framing) -> Self {
        match framing {
            Framing::Sse => Self::Sse(sse::Decoder::default()),
            #[cfg(feature = "bedrock")]
            Framing::EventStream => Self::EventStream(Box::default()),
        }
    }

    /// At the end of the body: whether it ended where it may.
    fn finish(&self) -> Result<(), ModelError> {
        match self {
            // An event not ended by a blank line is dropped, as the
            // standard has it.
            Self::Sse(_) => Ok(()),
            #[cfg(feature = "bedrock")]
            Self::EventStream(decoder) => decoder.finish(),
        }
    }

    fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<ControlFlow<()>, ModelError>,
    ) -> Result<ControlFlow<()>, ModelError> {
        match self {
            Self::Sse(decoder) => decoder.feed(chunk, on_event),
            #[cfg(feature = "bedrock")]
            Self::EventStream(decoder) => decoder.feed(chunk, on_event),
        }
    }
}

/// An event's data to `on_event`, unless it is empty (a keep-alive) or
/// the `[DONE]` marker that ends OpenAI's streams.
fn data_event(
    event: &str,
    data: &str,
    on_event: &mut impl FnMut(&str, &str) -> Result<(), ModelError>,
) -> Result<ControlFlow<()>, ModelError> {
    match data.trim() {
        "" => Ok(ControlFlow::Continue(())),
        "[DONE]" => Ok(ControlFlow::Break(())),
        data => on_event(event, data).map(ControlFlow::Continue),
    }
}

/// The error of a stream that stopped short.
fn broke_off(fault: &dyn std::fmt::Display) -> ModelError {
    ModelError::new(format!("the model's stream broke off: {fault}")).retryable(true)
}

impl From<sse::NotUtf8> for ModelError {
    fn from(error: sse::NotUtf8) -> Self {
        broke_off(&error)
    }
}

/// An event's `data` parsed as JSON.
pub(crate) fn json_data(data: &str) -> Result<Value, ModelError> {
    serde_json::from_str(data).map_err(|error| {
        // Garbled in transit, most likely: the same request may stream
        // whole the next time.
        ModelError::new(format!(
            "the model's stream sent an event that is not JSON: {error}"
        ))
        .retryable(true)
        .with_source(error)
    })
}

/// The events a streamed body arriving in `chunks` holds, as
/// [`read_events`] hands them on: the same SSE parser, its `data` read as
/// JSON, without the network. For fuzzing the stream path.
#[doc(hidden)]
pub fn sse_events(chunks: Vec<bytes::Bytes>) -> Result<Vec<(String, Value)>, ModelError> {
    sse_data(chunks)?
        .into_iter()
        .map(|(event, data)| Ok((event, json_data(&data)?)))
        .collect()
}

/// The events an AWS event-stream body arriving in `chunks` holds, as the
/// Bedrock client hands them to its stream assembler (each frame's
/// checksums checked, its payload as `{"<event type>": payload}`): for
/// fuzzing and benchmarking the frame reader without the network.
#[cfg(feature = "bedrock")]
#[doc(hidden)]
pub fn eventstream_events(chunks: Vec<bytes::Bytes>) -> Result<Vec<(String, Value)>, ModelError> {
    replayed(Framing::EventStream, chunks)?
        .into_iter()
        .map(|(event, data)| Ok((event, json_data(&data)?)))
        .collect()
}

/// [`sse_events`] with each event's `data` as its text.
#[doc(hidden)]
pub fn sse_data(chunks: Vec<bytes::Bytes>) -> Result<Vec<(String, String)>, ModelError> {
    replayed(Framing::Sse, chunks)
}

/// The events of a body framed as `framing` arriving in `chunks`, as
/// [`read_events`] hands them on: the same reader, the same end.
fn replayed(
    framing: Framing,
    chunks: Vec<bytes::Bytes>,
) -> Result<Vec<(String, String)>, ModelError> {
    let mut frames = Frames::new(framing);
    let mut events = Vec::new();
    let mut on_event = |event: &str, data: &str| {
        data_event(event, data, &mut |event, data| {
            events.push((event.to_owned(), data.to_owned()));
            Ok(())
        })
    };
    let mut stopped = false;
    for chunk in chunks {
        if frames.feed(&chunk, &mut on_event)?.is_break() {
            stopped = true;
            break;
        }
    }
    if !stopped {
        frames.finish()?;
    }
    Ok(events)
}

/// The JSON body of a whole (not streamed) response, read within the
/// timeout.
pub(crate) async fn read_json(config: &Config, response: Response) -> Result<Value, ModelError> {
    let request_id = request_id(response.headers());
    let text = match tokio::time::timeout(config.time_limit(), response.text()).await {
        Err(_elapsed) => Err(not_in_time(config)),
        Ok(read) => read.map_err(|error| connection_error(&error)),
    }
    .map_err(|error| with_request_id(error, request_id.as_deref()))?;
    serde_json::from_str(&text).map_err(|error| {
        with_request_id(
            ModelError::new(format!("the model's answer is not JSON: {error}")).with_source(error),
            request_id.as_deref(),
        )
    })
}

fn with_config_headers(mut headers: HeaderMap, config: &Config) -> Result<HeaderMap, ModelError> {
    for (name, value) in &config.headers.0 {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ModelError::new(format!("`{name}` is not a valid header name")))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| ModelError::new(format!("the value of header `{name}` is not valid")))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// A header whose value is secret: hidden from `Debug` of the request.
pub(crate) fn secret_header(value: &str) -> Result<HeaderValue, ModelError> {
    let mut value = HeaderValue::from_str(value)
        .map_err(|_| ModelError::new("the API key is not a valid header value"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// The error of a response that failed, with the provider's message, type
/// and request id, and the wait its body asks for before a retry (Gemini's
/// `RetryInfo`).
async fn failure(config: &Config, response: Response) -> (ModelError, Option<Duration>) {
    let status = response.status();
    let request_id = request_id(response.headers());
    // AWS names the error in a header: `ValidationException:http://…`.
    let aws_kind = response
        .headers()
        .get("x-amzn-errortype")
        .and_then(|value| value.to_str().ok())
        .and_then(|kind| kind.split(':').next())
        .filter(|kind| !kind.is_empty())
        .map(str::to_owned);
    let body = tokio::time::timeout(config.time_limit(), response.text())
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_str(&body).ok();
    // OpenAI and Gemini: {"error": {...}}; Anthropic: {"type": "error", "error": {...}}.
    let detail = parsed.as_ref().and_then(|value| value.get("error"));
    // AWS: {"message": "..."} (or `Message`) with the kind in a header.
    let aws_message = || {
        let parsed = parsed.as_ref()?;
        parsed.get("message").or_else(|| parsed.get("Message"))
    };
    let message = detail
        .and_then(|error| error.get("message"))
        .or_else(aws_message)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| body.chars().take(500).collect());
    // The first of these that is text: Azure sends `"type": null` beside
    // its `code`.
    let kind = detail
        .and_then(|error| {
            ["type", "status", "code"]
                .iter()
                .find_map(|name| error.get(*name).and_then(Value::as_str))
                .map(str::to_owned)
        })
        .or(aws_kind);
    // A key held back from another server is the likely cause: say so.
    let held_back = config.key().is_none() && config.env_key.is_some() && config.tokens.is_none();
    let tokens_held_back = config.token_source().is_none() && config.env_tokens.is_some();
    let hint = match (matches!(status.as_u16(), 401 | 403), held_back, tokens_held_back) {
        (true, true, _) => " (the key from the provider's environment variable is sent only to the provider's own API; give this server its key with `.api_key(..)`)",
        (true, _, true) => " (the credentials the environment names are sent only to the provider's own API; give this server its credentials with `.token_source(..)` or `.api_key(..)`)",
        _ => "",
    };
    let mut error = ModelError::new(format!(
        "the model's API answered {status}: {}{hint}",
        if message.is_empty() {
            "no message"
        } else {
            &message
        }
    ))
    .with_status(status.as_u16())
    .retryable(RETRYABLE.contains(&status.as_u16()) && !quota_spent_for_the_day(detail));
    if let Some(kind) = kind {
        error = error.with_kind(kind);
    }
    let wait = detail.and_then(body_retry_delay);
    (with_request_id(error, request_id.as_deref()), wait)
}

/// The items of a Google error's `details` of one `@type`.
fn google_details<'e>(error: &'e Value, kind: &'e str) -> impl Iterator<Item = &'e Value> {
    error
        .get("details")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(move |detail| {
            detail
                .get("@type")
                .and_then(Value::as_str)
                .is_some_and(|name| name.ends_with(kind))
        })
}

/// The wait a Google error asks for: `RetryInfo.retryDelay`, a protobuf
/// duration such as `"37s"` or `"1.5s"`.
fn body_retry_delay(error: &Value) -> Option<Duration> {
    let delay = google_details(error, "google.rpc.RetryInfo")
        .find_map(|detail| detail.get("retryDelay").and_then(Value::as_str))?;
    let seconds: f64 = delay.strip_suffix('s')?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds.min(1e9)))
}

/// Whether a Google 429 is a daily quota spent (`QuotaFailure` with a
/// per-day quota): trying again within the policy's waits cannot help.
fn quota_spent_for_the_day(error: Option<&Value>) -> bool {
    let Some(error) = error else { return false };
    google_details(error, "google.rpc.QuotaFailure").any(|detail| {
        detail
            .get("violations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|violation| {
                ["quotaId", "quotaMetric"].iter().any(|key| {
                    violation
                        .get(*key)
                        .and_then(Value::as_str)
                        .is_some_and(|name| name.contains("PerDay") || name.contains("per_day"))
                })
            })
    })
}

/// The API sent nothing within the timeout. A stream's head comes at
/// once, so the same request may go through later; a whole answer's comes
/// when the model is done, so it may be under way (and billed): it is not
/// sent again.
fn not_in_time(config: &Config) -> ModelError {
    ModelError::new(format!(
        "the model's API did not answer in time ({:?})",
        config.time_limit()
    ))
    .retryable(config.stream)
    .timed_out(true)
}

fn connection_error(error: &reqwest::Error) -> ModelError {
    // No answer arrived: the same request may go through later.
    let what = if error.is_timeout() {
        "the model's API did not answer in time"
    } else if error.is_connect() {
        "could not connect to the model's API"
    } else {
        "the request to the model's API failed"
    };
    // reqwest's message can hold the URL, never the key (it is a header).
    ModelError::new(format!("{what}: {}", error.without_url_text()))
        .retryable(error.is_timeout() || error.is_connect() || error.is_request())
        .timed_out(error.is_timeout())
        .with_status_opt(error.status().map(|status| status.as_u16()))
}

trait WithoutUrl {
    fn without_url_text(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_text(&self) -> String {
        let mut text = self.to_string();
        if let Some(url) = self.url() {
            text = text.replace(url.as_str(), "(url)");
        }
        text
    }
}

trait StatusOpt {
    fn with_status_opt(self, status: Option<u16>) -> Self;
}

impl StatusOpt for ModelError {
    fn with_status_opt(self, status: Option<u16>) -> Self {
        match status {
            Some(status) => self.with_status(status),
            None => self,
        }
    }
}

fn with_request_id(error: ModelError, request_id: Option<&str>) -> ModelError {
    match request_id {
        Some(id) => error.with_request_id(id),
        None => error,
    }
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    REQUEST_ID_HEADERS
        .iter()
        .find_map(|name| headers.get(*name))
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The wait a server asks for: `retry-after-ms`, or `Retry-After` in
/// seconds or as an HTTP date. A number too large for a `Duration` is
/// the longest one (the policy caps it).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let text = |name: &str| headers.get(name)?.to_str().ok().map(str::trim);
    let seconds = |text: &str| {
        text.parse::<f64>()
            .ok()
            .filter(|value| *value >= 0.0)
            .map(|seconds| Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX))
    };
    if let Some(wait) = text("retry-after-ms").and_then(|ms| seconds(ms).map(|wait| wait / 1000)) {
        return Some(wait);
    }
    let value = text("retry-after")?;
    seconds(value).or_else(|| {
        let at = httpdate::parse_http_date(value).ok()?;
        // A date already past asks for no wait.
        Some(
            at.duration_since(std::time::SystemTime::now())
                .unwrap_or_default(),
        )
    })
}

/// Whether a status is one the clients retry.
#[cfg(test)]
pub(crate) fn is_retryable(status: StatusCode) -> bool {
    RETRYABLE.contains(&status.as_u16())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The waits between attempts, on tokio's paused clock: what the
    /// server asked for, capped; backoff when it asked nothing; no retry
    /// for a failure that will not pass.
    #[tokio::test(start_paused = true)]
    async fn retries_wait_as_the_server_asks_on_a_paused_clock() {
        use super::super::RetryPolicy;
        use std::sync::Mutex;
        use tokio::time::Instant;

        let policy = RetryPolicy {
            max_retries: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(60),
        };
        let limited = || {
            ModelError::new("rate limited")
                .with_status(429)
                .retryable(true)
        };
        // Asked for 30 s, then 90 s (capped at 60 s), then nothing (backoff
        // of the third retry: 2 s, jittered down to no less than half).
        let waits = [
            Some(Duration::from_secs(30)),
            Some(Duration::from_secs(90)),
            None,
        ];
        let started = Instant::now();
        let times = Mutex::new(Vec::new());
        let answer = retrying(&policy, None, || {
            let attempt = {
                let mut times = times.lock().unwrap();
                times.push(started.elapsed());
                times.len() - 1
            };
            async move {
                match waits.get(attempt) {
                    Some(wait) => Err((limited(), *wait)),
                    None => Ok("answered"),
                }
            }
        })
        .await;
        assert_eq!(answer.unwrap(), "answered");
        let times = times.into_inner().unwrap();
        assert_eq!(times[0], Duration::ZERO);
        assert_eq!(times[1], Duration::from_secs(30));
        assert_eq!(times[2], Duration::from_secs(90));
        let backoff = times[3] - times[2];
        assert!(
            backoff >= Duration::from_secs(1) && backoff <= Duration::from_secs(2),
            "{backoff:?}"
        );

        // Retries run out: the last failure is the answer.
        let attempts = Mutex::new(0);
        let exhausted: Result<(), _> = retrying(&policy, None, || {
            *attempts.lock().unwrap() += 1;
            async { Err((limited(), Some(Duration::from_secs(1)))) }
        })
        .await;
        assert_eq!(exhausted.unwrap_err().status, Some(429));
        assert_eq!(*attempts.lock().unwrap(), 4);

        // 401 is not retried: one attempt, no wait.
        let attempts = Mutex::new(0);
        let started = Instant::now();
        let refused: Result<(), _> = retrying(&policy, None, || {
            *attempts.lock().unwrap() += 1;
            async { Err((ModelError::new("bad key").with_status(401), None)) }
        })
        .await;
        assert_eq!(refused.unwrap_err().status, Some(401));
        assert_eq!(*attempts.lock().unwrap(), 1);
        assert_eq!(started.elapsed(), Duration::ZERO);
    }

    #[test]
    fn retry_after_reads_both_headers() {
        let mut headers = HeaderMap::new();
        headers.insert("retry-after", HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("1500"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(1500)));
        headers.insert("retry-after-ms", HeaderValue::from_static("-1"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
    }

    #[test]
    fn retry_after_reads_dates_and_survives_huge_numbers() {
        let mut headers = HeaderMap::new();
        let later = std::time::SystemTime::now() + Duration::from_secs(120);
        let date = httpdate::fmt_http_date(later);
        headers.insert("retry-after", HeaderValue::from_str(&date).unwrap());
        let wait = retry_after(&headers).unwrap();
        assert!(
            wait > Duration::from_secs(100) && wait <= Duration::from_secs(120),
            "{wait:?}"
        );
        headers.insert(
            "retry-after",
            HeaderValue::from_static("Wed, 21 Oct 2015 07:28:00 GMT"),
        );
        assert_eq!(retry_after(&headers), Some(Duration::ZERO));
        for (value, wait) in [
            ("1e300", Some(Duration::MAX)),
            ("inf", Some(Duration::MAX)),
            ("NaN", None),
            ("soon", None),
        ] {
            headers.insert("retry-after", HeaderValue::from_static(value));
            assert_eq!(retry_after(&headers), wait, "{value}");
        }
        headers.insert("retry-after-ms", HeaderValue::from_static("1e300"));
        assert_eq!(retry_after(&headers), Some(Duration::MAX / 1000));
    }

    /// A 401 from another server, when the environment's key was held
    /// back from it, says so; the provider's own API's does not.
    #[tokio::test]
    async fn a_refusal_says_when_the_environment_s_key_was_held_back() {
        let refused = || {
            let response = http::Response::builder()
                .status(401)
                .body(r#"{"error": {"message": "no key"}}"#)
                .unwrap();
            Response::from(response)
        };
        let mut config = Config::new("m".into(), "https://api.example.com/v1", &[], &[]);
        config.env_key = Some(super::super::ApiKey::new("from-env"));
        config.base_url = "https://compatible.example.net/v1".into();
        let (error, _) = failure(&config, refused()).await;
        assert!(error.message.contains("`.api_key(..)`"), "{error}");
        assert!(!error.message.contains("from-env"), "{error}");
        assert_eq!(error.status, Some(401));
        config.base_url = "https://api.example.com/v1".into();
        let (error, _) = failure(&config, refused()).await;
        assert!(!error.message.contains("api_key"), "{error}");
    }

    #[test]
    fn statuses_that_are_retried() {
        for status in [408, 409, 429, 500, 502, 503, 504, 529] {
            assert!(
                is_retryable(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(
                !is_retryable(StatusCode::from_u16(status).unwrap()),
                "{status}"
            );
        }
    }

    #[test]
    fn a_body_in_any_chunking_gives_the_same_events() {
        let body = "event: a\ndata: {\"n\": 1}\n\n: keep-alive\n\ndata: {\"n\": 2}\n\ndata: [DONE]\n\ndata: {\"n\": 3}\n\n";
        let whole = sse_events(vec![bytes::Bytes::from(body)]).unwrap();
        assert_eq!(
            whole,
            vec![
                ("a".to_owned(), serde_json::json!({"n": 1})),
                ("message".to_owned(), serde_json::json!({"n": 2})),
            ]
        );
        for cut in 1..body.len() {
            let chunks = vec![
                bytes::Bytes::copy_from_slice(&body.as_bytes()[..cut]),
                bytes::Bytes::copy_from_slice(&body.as_bytes()[cut..]),
            ];
            assert_eq!(sse_events(chunks).unwrap(), whole, "cut at {cut}");
        }
        let broken = sse_events(vec![bytes::Bytes::from_static(b"data: {oops\n\n")]);
        assert!(broken.unwrap_err().to_string().contains("not JSON"));
        // A leading byte-order mark, whole or split, is skipped.
        let marked = format!("\u{feff}{body}");
        for cut in 0..=4 {
            let chunks = vec![
                bytes::Bytes::copy_from_slice(&marked.as_bytes()[..cut]),
                bytes::Bytes::copy_from_slice(&marked.as_bytes()[cut..]),
            ];
            assert_eq!(sse_events(chunks).unwrap(), whole, "cut at {cut}");
        }
        assert_eq!(
            sse_events(vec![bytes::Bytes::from_static(b"\xEF\xBB\xBF")]).unwrap(),
            []
        );
        // Half a mark and no line end: no event.
        assert_eq!(
            sse_events(vec![bytes::Bytes::from_static(b"\xEF\xBB")]).unwrap(),
            []
        );
        // A line a client reads must be UTF-8; a garbled line it ignores
        // (a comment, an unknown field) is ignored, as the standard has it.
        let garbled = sse_events(vec![bytes::Bytes::from_static(b"data: \xFF\n\n")]);
        assert!(garbled.unwrap_err().to_string().contains("broke off"));
        let ignored = b": \xFF\n\xFF\ndata: {\"n\": 1}\n\n";
        assert_eq!(
            sse_events(vec![bytes::Bytes::from_static(ignored)]).unwrap(),
            vec![("message".to_owned(), serde_json::json!({"n": 1}))]
        );
    }
}

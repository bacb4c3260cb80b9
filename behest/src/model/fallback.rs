//! A model that falls back: [`FallbackModel`] asks a list of models in
//! order, going on to the next on the failures its caller names.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tracing::Instrument;

use super::contract::{Model, ModelError, ModelRequest};
use crate::conversation::{AssistantMessage, DeltaSink, ModelDelta, StopKind};

/// A failure on which a [`FallbackModel`] asks its next model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Failure {
    /// Too many requests (HTTP 429; `rate_limit_error`,
    /// `rate_limit_exceeded`, `RESOURCE_EXHAUSTED`, Bedrock's
    /// `ThrottlingException`).
    RateLimit,
    /// The provider is overloaded or down for a while (HTTP 503 and 529;
    /// `overloaded_error`, `UNAVAILABLE`, Bedrock's
    /// `ServiceUnavailableException`).
    Overloaded,
    /// The request took too long (HTTP 408 and 504; `DEADLINE_EXCEEDED`;
    /// the client's own timeout, [`ModelError::timed_out`]). Decided from
    /// the status and the error's kind, never from the words of its
    /// message.
    Timeout,
    /// Any other server error (HTTP 500 to 599; Bedrock's
    /// `internalServerException` and `modelStreamErrorException` in a
    /// stream).
    ServerError,
    /// The conversation does not fit the model's context window: an error
    /// of that kind (`context_length_exceeded`), a bad request (400 or 413)
    /// whose message says so where the provider has no kind for it
    /// (Anthropic's "prompt is too long", Gemini's "exceeds the maximum
    /// number of tokens", Bedrock's "Input is too long"), or a turn that
    /// stopped for it.
    ContextWindow,
    /// The model refused, or the provider's filters withheld its turn: the
    /// turn came back, with a stop reason that says so.
    Refused,
    /// Any error at all.
    AnyError,
}

impl Failure {
    /// Whether `error` is this failure.
    pub fn matches(self, error: &ModelError) -> bool {
        let kind = error.kind.as_deref().unwrap_or_default();
        let status = error.status.unwrap_or_default();
        match self {
            Self::RateLimit => {
                status == 429
                    || matches!(
                        kind,
                        "rate_limit_error"
                            | "rate_limit_exceeded"
                            | "RESOURCE_EXHAUSTED"
                            // Bedrock's, named in a header or in a stream.
                            | "ThrottlingException"
                            | "throttlingException"
                    )
            }
            Self::Overloaded => {
                matches!(status, 503 | 529)
                    || matches!(
                        kind,
                        "overloaded_error"
                            | "UNAVAILABLE"
                            | "ServiceUnavailableException"
                            | "serviceUnavailableException"
                    )
            }
            Self::Timeout => {
                matches!(status, 408 | 504) || kind == "DEADLINE_EXCEEDED" || error.timed_out
            }
            Self::ServerError => {
                (500..600).contains(&status)
                    // Bedrock's exceptions inside a stream carry no status.
                    || matches!(
                        kind,
                        "internalServerException" | "modelStreamErrorException"
                    )
            }
            Self::ContextWindow => {
                // Providers without a kind for it answer a bad request
                // whose message says so.
                let message = error.message.to_ascii_lowercase();
                kind == "context_length_exceeded"
                    || (matches!(error.status, Some(400 | 413) | None)
                        && (message.contains("context length")
                            || message.contains("context window")
                            || message.contains("prompt is too long")
                            // Bedrock's `ValidationException`.
                            || message.contains("input is too long")
                            || message.contains("exceeds the maximum number of tokens")))
            }
            Self::Refused => false,
            Self::AnyError => true,
        }
    }

    /// Whether the turn `reply` is this failure (a refusal, a filtered
    /// turn, a full context window).
    fn matches_turn(self, reply: &AssistantMessage) -> bool {
        let Some(stop) = &reply.stop else {
            return false;
        };
        match self {
            Self::Refused => matches!(stop.kind, StopKind::Refused | StopKind::Filtered),
            Self::ContextWindow => stop.kind == StopKind::ContextWindow,
            _ => false,
        }
    }
}

/// Asks its models in order, each with its own client and retry policy,
/// going on to the next when one fails in a way it was told to fall back
/// on; the first answer that is not such a failure is the turn, marked
/// with the name of the model that gave it ([`AssistantMessage::model`]).
/// When every model fails, the last one's error is the turn's, its
/// message naming what each of the others said.
///
/// A model that fails after some of its turn streamed is followed by
/// [`ModelDelta::Restart`]: what the caller showed of it is void, and the
/// next model's turn streams from its start.
///
/// ```
/// use behest::run::{Failure, FallbackModel, ScriptedTurn};
/// use behest::{Agent, Message, ModelError, ScriptedModel, ToolRegistry, ToolRuntime};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let busy = ScriptedModel::new([ScriptedTurn::error(ModelError::new("overloaded").with_status(529))]);
/// let spare = ScriptedModel::new([ScriptedTurn::text("Hello from the spare.")]);
/// let model = FallbackModel::new("main", busy).then("spare", spare);
/// let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
/// let outcome = agent.invoke([Message::user("Hi")]).await;
/// assert_eq!(outcome.text(), Some("Hello from the spare."));
/// # }
/// ```
#[derive(Clone)]
pub struct FallbackModel {
    models: Vec<(String, Arc<dyn Model>)>,
    on: Vec<Failure>,
    structured: bool,
}

impl std::fmt::Debug for FallbackModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.models.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("FallbackModel")
            .field("models", &names)
            .field("on", &self.on)
            .finish()
    }
}

impl FallbackModel {
    /// Asks `model`, named `name`, first. It falls back on rate limits,
    /// overload, timeouts and server errors until [`on`](Self::on) says
    /// otherwise.
    pub fn new(name: impl Into<String>, model: impl Model) -> Self {
        Self::from_arc(name, Arc::new(model))
    }

    /// [`new`](Self::new) with a shared model.
    pub fn from_arc(name: impl Into<String>, model: Arc<dyn Model>) -> Self {
        let structured = model.supports_structured_output();
        Self {
            models: vec![(name.into(), model)],
            on: vec![
                Failure::RateLimit,
                Failure::Overloaded,
                Failure::Timeout,
                Failure::ServerError,
            ],
            structured,
        }
    }

    /// Then `model`, named `name`, when those before it fail.
    #[must_use]
    pub fn then(self, name: impl Into<String>, model: impl Model) -> Self {
        self.then_arc(name, Arc::new(model))
    }

    /// [`then`](Self::then) with a shared model.
    #[must_use]
    pub fn then_arc(mut self, name: impl Into<String>, model: Arc<dyn Model>) -> Self {
        self.structured &= model.supports_structured_output();
        self.models.push((name.into(), model));
        self
    }

    /// Falls back on these failures only.
    #[must_use]
    pub fn on(mut self, failures: impl IntoIterator<Item = Failure>) -> Self {
        self.on = failures.into_iter().collect();
        self
    }

    fn falls_back_on(&self, error: &ModelError) -> bool {
        self.on.iter().any(|failure| failure.matches(error))
    }

    /// Tells the run's deltas that the model at `index` failed and the
    /// next is asked.
    fn tell_fallback(&self, request: &ModelRequest<'_>, index: usize, error: String) {
        if let (Some(sink), Some((from, _)), Some((to, _))) = (
            request.deltas,
            self.models.get(index),
            self.models.get(index + 1),
        ) {
            sink.send(ModelDelta::Fallback {
                from: from.clone(),
                to: to.clone(),
                error,
            });
        }
    }

    fn falls_back_on_turn(&self, reply: &AssistantMessage) -> bool {
        self.on.iter().any(|failure| failure.matches_turn(reply))
    }
}

impl Model for FallbackModel {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let mut tried: Vec<String> = Vec::new();
        // What turns set aside (refused, a full window) used: billed all
        // the same, so the turn given counts it.
        let mut discarded: Option<crate::conversation::Usage> = None;
        let last = self.models.len().saturating_sub(1);
        for (index, (name, model)) in self.models.iter().enumerate() {
            // Watches whether this model streamed any of its turn.
            let streamed = Arc::new(AtomicBool::new(false));
            let watched = request.deltas.cloned().map(|sink| {
                let streamed = streamed.clone();
                DeltaSink::new(move |delta| {
                    streamed.store(true, Ordering::Relaxed);
                    sink.send(delta);
                })
            });
            let mut asked = request;
            if let Some(watched) = &watched {
                asked = asked.with_deltas(watched);
            }
            let span = tracing::info_span!("gen_ai.fallback", gen_ai.response.model = %name);
            let answer = model.complete_dyn(asked).instrument(span).await;
            let falls_back = match &answer {
                Ok(reply) => index < last && self.falls_back_on_turn(reply),
                Err(error) => index < last && self.falls_back_on(error),
            };
            if falls_back && streamed.load(Ordering::Relaxed) {
                if let Some(sink) = request.deltas {
                    sink.send(ModelDelta::Restart);
                }
            }
            match answer {
                Ok(mut reply) if !falls_back => {
                    reply.model.get_or_insert_with(|| name.clone());
                    if let Some(discarded) = discarded {
                        reply.usage = Some(reply.usage.unwrap_or_default() + discarded);
                    }
                    return Ok(reply);
                }
                Ok(reply) => {
                    if let Some(usage) = reply.usage {
                        discarded = Some(discarded.unwrap_or_default() + usage);
                    }
                    let stop = reply.stop.map(|stop| stop.raw).unwrap_or_default();
                    tracing::warn!(model = %name, %stop, "the model's turn is a failure to fall back on; asking the next");
                    self.tell_fallback(&request, index, format!("stopped with `{stop}`"));
                    tried.push(format!("{name} stopped with `{stop}`"));
                }
                Err(error) if falls_back => {
                    tracing::warn!(model = %name, %error, "the model failed; asking the next");
                    self.tell_fallback(&request, index, error.to_string());
                    tried.push(format!("{name}: {error}"));
                }
                Err(mut error) => {
                    if !tried.is_empty() {
                        error.message =
                            format!("{name}: {} (after {})", error.message, tried.join("; "));
                    }
                    return Err(error);
                }
            }
        }
        Err(ModelError::new("a FallbackModel has no model to ask"))
    }

    fn supports_structured_output(&self) -> bool {
        self.structured
    }
}

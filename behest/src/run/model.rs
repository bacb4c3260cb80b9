//! The model a run talks to.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::conversation::{AssistantMessage, DeltaSink, Message};
use crate::tool::ToolSpec;

/// Why the model gave no answer.
///
/// For a model behind an API, the HTTP status, the provider's error type,
/// the request id and whether trying again may help; never the API key.
#[derive(Clone, thiserror::Error)]
#[error("{message}")]
#[non_exhaustive]
pub struct ModelError {
    /// What went wrong, with the provider's own message where it gave one.
    pub message: String,
    /// The HTTP status of the answer, when there was one.
    pub status: Option<u16>,
    /// The provider's error type (`rate_limit_error`, `invalid_request_error`, …).
    pub kind: Option<String>,
    /// The provider's request id, to quote to its support.
    pub request_id: Option<String>,
    /// Whether the same request may succeed later (rate limits, overload,
    /// server errors, connection failures).
    pub retryable: bool,
    /// The underlying error (a connection failure, a body that did not
    /// parse).
    #[source]
    pub source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl ModelError {
    /// A model error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            status: None,
            kind: None,
            request_id: None,
            retryable: false,
            source: None,
        }
    }

    /// With the HTTP status.
    #[must_use]
    pub fn with_status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// With the provider's error type.
    #[must_use]
    pub fn with_kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// With the provider's request id.
    #[must_use]
    pub fn with_request_id(mut self, id: impl Into<String>) -> Self {
        self.request_id = Some(id.into());
        self
    }

    /// Marks the error as worth a retry, or not.
    #[must_use]
    pub fn retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// With the underlying error.
    #[must_use]
    pub fn with_source(mut self, source: impl std::error::Error + Send + Sync + 'static) -> Self {
        self.source = Some(Arc::new(source));
        self
    }
}

impl fmt::Debug for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModelError")
            .field("message", &self.message)
            .field("status", &self.status)
            .field("kind", &self.kind)
            .field("request_id", &self.request_id)
            .field("retryable", &self.retryable)
            .field("source", &self.source.as_ref().map(ToString::to_string))
            .finish()
    }
}

/// Equal when everything but the source is: sources have no equality.
impl PartialEq for ModelError {
    fn eq(&self, other: &Self) -> bool {
        self.message == other.message
            && self.status == other.status
            && self.kind == other.kind
            && self.request_id == other.request_id
            && self.retryable == other.retryable
    }
}

impl Eq for ModelError {}

/// A language model: given the conversation and the tools it may call, it
/// returns its next message.
///
/// Implement [`respond`](Model::respond); a model that streams also
/// implements [`respond_streaming`](Model::respond_streaming), which a run
/// calls to show the turn as it comes. Runs use models as `Arc<dyn Model>`.
pub trait Model: Send + Sync + 'static + erased::ErasedModel {
    /// The model's next message.
    fn respond(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> impl Future<Output = Result<AssistantMessage, ModelError>> + Send
    where
        Self: Sized;

    /// The model's next message, sending its pieces to `deltas` as they
    /// come. The message is the one [`respond`](Model::respond) would give;
    /// the default sends no pieces and calls it.
    fn respond_streaming(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
        deltas: &DeltaSink,
    ) -> impl Future<Output = Result<AssistantMessage, ModelError>> + Send
    where
        Self: Sized,
    {
        let _unused = deltas;
        self.respond(conversation, tools)
    }

    /// Whether the model can be made to answer in a JSON Schema's shape
    /// (OpenAI's `response_format`, Gemini's `responseSchema`). A typed run
    /// ([`Agent::with_output`](crate::Agent::with_output)) then asks for
    /// its answer that way, the model reading the schema from
    /// [`requested_output`], instead of offering the `final_answer` tool.
    /// Default: no.
    fn supports_structured_output(&self) -> bool {
        false
    }
}

impl dyn Model {
    /// The model's next message, through a type-erased model.
    pub fn respond_dyn<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        self.erased_respond(conversation, tools, None)
    }

    /// [`Model::respond_streaming`] through a type-erased model.
    pub fn respond_streaming_dyn<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        self.erased_respond(conversation, tools, Some(deltas))
    }
}

mod erased {
    use super::*;

    /// The object-safe face of [`Model`], implemented for every model.
    pub trait ErasedModel {
        fn erased_respond<'a>(
            &'a self,
            conversation: &'a [Message],
            tools: &'a [ToolSpec],
            deltas: Option<&'a DeltaSink>,
        ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>>;
    }

    impl<M: Model> ErasedModel for M {
        fn erased_respond<'a>(
            &'a self,
            conversation: &'a [Message],
            tools: &'a [ToolSpec],
            deltas: Option<&'a DeltaSink>,
        ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
            match deltas {
                Some(deltas) => Box::pin(self.respond_streaming(conversation, tools, deltas)),
                None => Box::pin(self.respond(conversation, tools)),
            }
        }
    }
}

/// What a run tells the model about a turn besides the conversation and
/// the tools: which tools ask for strict mode, and the typed answer it asks
/// for natively.
#[derive(Clone, Default)]
pub(crate) struct TurnRequest {
    /// The names of the tools that ask for strict mode (`#[tool(strict)]`):
    /// what a client exporting from specs cannot see.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub strict: Arc<std::collections::HashSet<String>>,
    /// The answer's spec, when the model answers in its shape
    /// ([`Model::supports_structured_output`]).
    pub output: Option<ToolSpec>,
}

tokio::task_local! {
    static TURN: TurnRequest;
}

/// The tools of the run calling the model that ask for strict mode; none
/// outside a run.
#[cfg(feature = "http")]
pub(crate) fn strict_tools() -> Arc<std::collections::HashSet<String>> {
    TURN.try_with(|turn| turn.strict.clone())
        .unwrap_or_default()
}

/// The typed answer the run calling this model asks for, when the model
/// [supports structured output](Model::supports_structured_output): its name, a
/// description and the JSON Schema the final text must match (always an
/// object). `None` outside a run, in a run without
/// [`with_output`](crate::Agent::with_output), and for models that answer
/// through the `final_answer` tool instead. It is the run's task that knows:
/// read it in `respond`, not in a task spawned from there.
pub fn requested_output() -> Option<ToolSpec> {
    TURN.try_with(|turn| turn.output.clone()).ok().flatten()
}

/// Runs `turn` with what `request` tells the model.
pub(crate) async fn in_turn<F: Future>(request: TurnRequest, turn: F) -> F::Output {
    TURN.scope(request, turn).await
}

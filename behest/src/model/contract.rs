//! The model a run talks to.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::conversation::{AssistantMessage, DeltaSink, Message, ModelDelta};
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
    /// Whether no answer came in time: the client's own timeout, or a
    /// connection that timed out (a provider's timeout answer says so by
    /// its status or kind instead).
    pub timed_out: bool,
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
            timed_out: false,
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

    /// Marks the error as a timeout of the client's: no answer came in time.
    #[must_use]
    pub fn timed_out(mut self, timed_out: bool) -> Self {
        self.timed_out = timed_out;
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
            .field("timed_out", &self.timed_out)
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
            && self.timed_out == other.timed_out
    }
}

impl Eq for ModelError {}

/// Everything a run tells a model for one turn: the conversation, the tools
/// it may call, which of them ask for strict schema adherence, the typed
/// answer it asks for, and where the turn's pieces go as they stream.
///
/// A custom [`Model`] sees exactly what a built-in client sees. Build one
/// with [`new`](Self::new) and the `with_*` methods; the fields may grow.
///
/// ```
/// use behest::{Message, ModelRequest, ToolSpec};
///
/// let conversation = [Message::user("What is 2 + 2?")];
/// let tools: [ToolSpec; 0] = [];
/// let request = ModelRequest::new(&conversation, &tools);
/// assert!(request.output.is_none() && request.deltas.is_none());
/// ```
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct ModelRequest<'a> {
    /// The conversation so far.
    pub conversation: &'a [Message],
    /// The tools the model may call, in the order it is offered them.
    pub tools: &'a [ToolSpec],
    /// The names of the tools that ask for strict schema adherence
    /// (`#[tool(strict)]`, [`Tool::strict`](crate::Tool::strict)): what
    /// the specs alone do not say.
    pub strict: &'a BTreeSet<String>,
    /// The typed answer asked for, when the model answers in a schema's
    /// shape ([`Model::supports_structured_output`]): its name, a
    /// description and the JSON Schema the final text must match (an
    /// object). `None` in a run without
    /// [`with_output`](crate::Agent::with_output), and for models that
    /// answer through the `final_answer` tool instead.
    pub output: Option<&'a ToolSpec>,
    /// Where the turn's pieces go as they stream in; `None` when nobody
    /// shows them.
    pub deltas: Option<&'a DeltaSink>,
    /// Sampling and reasoning settings for this turn, over the model's own
    /// ([`Agent::model_settings`](crate::Agent::model_settings)).
    pub settings: Option<&'a ModelSettings>,
}

/// How a model samples and reasons: set on a client for every turn, or per
/// run ([`Agent::model_settings`](crate::Agent::model_settings)) over the
/// client's. Each client sends what its provider takes, under the
/// provider's names; a setting a provider has no field for is not sent.
///
/// ```
/// use behest::{ModelSettings, ReasoningEffort};
///
/// let settings = ModelSettings::new()
///     .temperature(0.2)
///     .stop(["\n\n"])
///     .reasoning_effort(ReasoningEffort::Low);
/// assert_eq!(settings.stop, ["\n\n"]);
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct ModelSettings {
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling: the probability mass the next token is drawn from.
    pub top_p: Option<f64>,
    /// The most tokens the model may write in one turn.
    pub max_tokens: Option<u32>,
    /// Texts that end the turn when the model writes them.
    pub stop: Vec<String>,
    /// A seed, for providers that sample reproducibly with one (OpenAI
    /// Chat, Gemini).
    pub seed: Option<u64>,
    /// How hard a reasoning model thinks (OpenAI's `reasoning_effort`).
    pub reasoning_effort: Option<ReasoningEffort>,
    /// How many tokens a model may think with (Anthropic's extended
    /// thinking `budget_tokens`, Gemini's `thinkingBudget`).
    pub thinking_budget: Option<u32>,
}

/// How hard a reasoning model thinks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReasoningEffort {
    /// As little as the model can.
    Minimal,
    /// Little.
    Low,
    /// The providers' default.
    Medium,
    /// Much.
    High,
}

impl ReasoningEffort {
    /// The value OpenAI takes.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Minimal => "minimal",
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

impl ModelSettings {
    /// No setting: each provider's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// With a sampling temperature.
    #[must_use]
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// With nucleus sampling.
    #[must_use]
    pub fn top_p(mut self, top_p: f64) -> Self {
        self.top_p = Some(top_p);
        self
    }

    /// With a cap on the tokens of a turn.
    #[must_use]
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// With texts that end the turn.
    #[must_use]
    pub fn stop<S: Into<String>>(mut self, stop: impl IntoIterator<Item = S>) -> Self {
        self.stop = stop.into_iter().map(Into::into).collect();
        self
    }

    /// With a seed.
    #[must_use]
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// With a reasoning effort.
    #[must_use]
    pub fn reasoning_effort(mut self, effort: ReasoningEffort) -> Self {
        self.reasoning_effort = Some(effort);
        self
    }

    /// With a thinking budget, in tokens.
    #[must_use]
    pub fn thinking_budget(mut self, tokens: u32) -> Self {
        self.thinking_budget = Some(tokens);
        self
    }

    /// These settings, each one that `over` sets replaced by its.
    #[must_use]
    pub fn merged(&self, over: Option<&ModelSettings>) -> ModelSettings {
        let Some(over) = over else {
            return self.clone();
        };
        ModelSettings {
            temperature: over.temperature.or(self.temperature),
            top_p: over.top_p.or(self.top_p),
            max_tokens: over.max_tokens.or(self.max_tokens),
            stop: if over.stop.is_empty() {
                self.stop.clone()
            } else {
                over.stop.clone()
            },
            seed: over.seed.or(self.seed),
            reasoning_effort: over.reasoning_effort.or(self.reasoning_effort),
            thinking_budget: over.thinking_budget.or(self.thinking_budget),
        }
    }
}

/// No tool asks for strict mode.
static NOT_STRICT: BTreeSet<String> = BTreeSet::new();

impl<'a> ModelRequest<'a> {
    /// A request for the next turn of `conversation`, offering `tools`:
    /// none strict, no typed answer, no streamed pieces.
    pub fn new(conversation: &'a [Message], tools: &'a [ToolSpec]) -> Self {
        Self {
            conversation,
            tools,
            strict: &NOT_STRICT,
            output: None,
            deltas: None,
            settings: None,
        }
    }

    /// With settings for this turn, over the model's own.
    #[must_use]
    pub fn with_settings(mut self, settings: &'a ModelSettings) -> Self {
        self.settings = Some(settings);
        self
    }

    /// With the names of the tools that ask for strict mode.
    #[must_use]
    pub fn with_strict(mut self, strict: &'a BTreeSet<String>) -> Self {
        self.strict = strict;
        self
    }

    /// Asking for the answer in `spec`'s shape.
    #[must_use]
    pub fn with_output(mut self, spec: &'a ToolSpec) -> Self {
        self.output = Some(spec);
        self
    }

    /// Sending the turn's pieces to `deltas` as they stream in.
    #[must_use]
    pub fn with_deltas(mut self, deltas: &'a DeltaSink) -> Self {
        self.deltas = Some(deltas);
        self
    }

    /// Whether tool `name` asks for strict mode.
    pub fn is_strict(&self, name: &str) -> bool {
        self.strict.contains(name)
    }

    /// Sends one streamed piece to the sink, if there is one.
    pub fn send_delta(&self, delta: ModelDelta) {
        if let Some(deltas) = self.deltas {
            deltas.send(delta);
        }
    }
}

/// A language model: given a [`ModelRequest`] (the conversation, the tools
/// it may call and what else the run asks), it returns its next message.
///
/// Implement [`complete`](Model::complete); a model that streams sends the
/// turn's pieces to [`ModelRequest::deltas`] as they come. Runs use models
/// as `Arc<dyn Model>`. To ask a model for one turn directly,
/// [`respond`](Model::respond) builds the request.
pub trait Model: Send + Sync + 'static + erased::ErasedModel {
    /// The model's next message for `request`.
    fn complete(
        &self,
        request: ModelRequest<'_>,
    ) -> impl Future<Output = Result<AssistantMessage, ModelError>> + Send
    where
        Self: Sized;

    /// The model's next message after `conversation`, offered `tools`.
    fn respond(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> impl Future<Output = Result<AssistantMessage, ModelError>> + Send
    where
        Self: Sized,
    {
        async move { self.complete(ModelRequest::new(conversation, tools)).await }
    }

    /// [`respond`](Model::respond), sending the turn's pieces to `deltas`
    /// as they come. The message is the one `respond` would give.
    fn respond_streaming(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
        deltas: &DeltaSink,
    ) -> impl Future<Output = Result<AssistantMessage, ModelError>> + Send
    where
        Self: Sized,
    {
        async move {
            self.complete(ModelRequest::new(conversation, tools).with_deltas(deltas))
                .await
        }
    }

    /// Whether the model can be made to answer in a JSON Schema's shape
    /// (OpenAI's `response_format`, Gemini's `responseSchema`). A typed run
    /// ([`Agent::with_output`](crate::Agent::with_output)) then asks for
    /// its answer that way, in [`ModelRequest::output`], instead of
    /// offering the `final_answer` tool. Default: no.
    fn supports_structured_output(&self) -> bool {
        false
    }
}

impl dyn Model {
    /// [`Model::complete`] through a type-erased model.
    pub fn complete_dyn<'a>(
        &'a self,
        request: ModelRequest<'a>,
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        self.erased_complete(request)
    }

    /// [`Model::respond`] through a type-erased model.
    pub fn respond_dyn<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        self.erased_complete(ModelRequest::new(conversation, tools))
    }

    /// [`Model::respond_streaming`] through a type-erased model.
    pub fn respond_streaming_dyn<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
        deltas: &'a DeltaSink,
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        self.erased_complete(ModelRequest::new(conversation, tools).with_deltas(deltas))
    }
}

mod erased {
    use super::*;

    /// The object-safe face of [`Model`], implemented for every model.
    pub trait ErasedModel {
        fn erased_complete<'a>(
            &'a self,
            request: ModelRequest<'a>,
        ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>>;
    }

    impl<M: Model> ErasedModel for M {
        fn erased_complete<'a>(
            &'a self,
            request: ModelRequest<'a>,
        ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
            Box::pin(self.complete(request))
        }
    }
}

//! The execution layer: one pipeline for every tool call.
//!
//! look up → decode → validate → route → execute (concurrency limit,
//! timeout, cancellation, panic isolation) → check output. Every call
//! yields exactly one [`ToolCallResult`], whatever the tool or the model
//! did.
//!
//! - `route`: where a call goes, decided once for every caller;
//! - `text_route`: the typed routes of `#[tool]`s;
//! - `checked`: lookup, decoding and validation, and the output limit;
//! - `execute`: the tail every call that runs a tool shares;
//! - `call`: the future of one call; `builder`: limits and state.

mod builder;
mod call;
mod checked;
mod execute;
mod gate;
mod guard;
mod hooks;
mod route;
mod text_route;

use std::future::Future;
use std::sync::Arc;

use futures::StreamExt;
use tokio_util::sync::CancellationToken;

pub use crate::limits::Limits;
pub use crate::tool::{ToolCall, ToolCallResult};
pub use builder::ToolRuntimeBuilder;
use call::CallFuture;
pub use checked::PreparedCall;
use gate::Gate;
pub(crate) use hooks::{LocalRun, Route, RunHooks};

use crate::registry::ToolRegistry;
#[cfg(doc)]
use crate::tool::ToolContext;
use crate::tool::{ProgressSink, SharedState, ToolError, ToolOutput};

/// Runs tool calls against a registry: validates them, runs them under
/// limits and turns every failure into a result the model can read.
///
/// Cheap to clone; clones share the registry and the concurrency limit.
/// Calls must run inside a Tokio runtime with timers enabled.
///
/// ```
/// # use std::sync::Arc;
/// # use behest::{ExternalTool, ToolCall, ToolError, ToolRegistry, ToolRuntime};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let mut registry = ToolRegistry::new();
/// registry
///     .register("lookup", Arc::new(ExternalTool::new(
///         "lookup",
///         "Look a word up.",
///         serde_json::json!({"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}),
///     )))
///     .unwrap();
/// let runtime = ToolRuntime::new(registry);
///
/// let result = runtime.call(ToolCall::new("call_1", "lookup", r#"{"word": 7}"#)).await;
/// let error = result.outcome.unwrap_err();
/// assert_eq!(error.to_string(), "the arguments are invalid: `/word`: expected a string, got the integer 7\nfix the arguments and call the tool again");
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct ToolRuntime {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// Tells this runtime's [`PreparedCall`]s from another's.
    id: u64,
    registry: ToolRegistry,
    limits: Limits,
    /// The concurrency limit.
    gate: Gate,
    state: SharedState,
}

/// Per-call options: cancellation and progress reporting.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CallOptions {
    /// Cancels the call when cancelled; the tool sees it in its context.
    pub cancellation: Option<CancellationToken>,
    /// Receives the tool's progress reports.
    pub progress: Option<ProgressSink>,
    /// Values of this call alone, which the tool reads with
    /// [`ToolContext::extension`].
    pub extensions: SharedState,
}

impl CallOptions {
    /// No cancellation token of the caller's, no progress sink.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancelling the call when `token` is cancelled.
    #[must_use]
    pub fn cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = Some(token);
        self
    }

    /// Attaching `value` to this call alone (who the caller is, the request
    /// it came in), for the tool's [`ToolContext::extension`].
    #[must_use]
    pub fn extension<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Giving the call `key` as its idempotency key, which the tool reads
    /// with [`ToolContext::idempotency_key`]: an engine that may run a call
    /// again (a durable task played back after a crash) gives one that
    /// stays the same each time.
    #[must_use]
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.extensions
            .insert(crate::tool::IdempotencyKey(key.into()));
        self
    }

    /// Sending the tool's progress reports to `sink`.
    #[must_use]
    pub fn progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }
}

impl ToolRuntime {
    /// A runtime with default [`Limits`].
    pub fn new(registry: ToolRegistry) -> Self {
        Self::builder(registry).build()
    }

    /// A builder to set limits, per-tool timeouts and shared state.
    pub fn builder(registry: ToolRegistry) -> ToolRuntimeBuilder {
        ToolRuntimeBuilder::new(registry)
    }

    /// The registry served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Whether `output`, given from outside (a handler's or a person's
    /// answer to an external call), is within the output limit a tool's own
    /// output meets: the error the call would end with if not, so that the
    /// sender can be told at once and send another.
    pub fn check_answer(&self, output: &ToolOutput) -> Result<(), ToolError> {
        self.output_fits(output)
    }

    /// Runs one call through the whole pipeline.
    // Not `async fn`, here and below: each layer of `async fn` would keep
    // its own copy of the call in a future that every call moves.
    pub fn call(&self, call: ToolCall) -> impl Future<Output = ToolCallResult> + Send + '_ {
        self.call_in(call, CallOptions::default(), None)
    }

    /// Runs one call with cancellation and progress reporting.
    pub fn call_with(
        &self,
        call: ToolCall,
        options: CallOptions,
    ) -> impl Future<Output = ToolCallResult> + Send + '_ {
        self.call_in(call, options, None)
    }

    /// The one entry point of every call, a run's included: the span, the
    /// limits, the text route, and (with `hooks`) a run's approvals,
    /// answers to external calls and events.
    ///
    /// `hooks` is a thin reference, which keeps the call's future within
    /// the size that callers move without a call to `memcpy`.
    pub(crate) fn call_in<'a>(
        &'a self,
        call: ToolCall,
        options: CallOptions,
        hooks: Option<&'a &'a dyn RunHooks>,
    ) -> CallFuture<'a> {
        CallFuture::new(self, call, options, hooks)
    }

    /// Runs calls concurrently, at most [`Limits::max_concurrent_calls`] at a
    /// time, and returns their results in the order of the calls.
    pub async fn call_batch(
        &self,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> Vec<ToolCallResult> {
        self.call_batch_with(calls, CallOptions::default()).await
    }

    /// [`call_batch`](Self::call_batch) with the same options for every call.
    pub async fn call_batch_with(
        &self,
        calls: impl IntoIterator<Item = ToolCall>,
        options: CallOptions,
    ) -> Vec<ToolCallResult> {
        futures::stream::iter(calls)
            .map(|call| self.call_with(call, options.clone()))
            .buffered(self.inner.limits.max_concurrent_calls.max(1))
            .collect()
            .await
    }
}

//! The execution layer: one pipeline for every tool call.
//!
//! look up → decode → validate → execute (concurrency limit, timeout,
//! cancellation, panic isolation) → check output. Every call yields exactly
//! one [`ToolCallResult`], whatever the tool or the model did.

mod call;
mod gate;
mod guard;
mod hooks;

use std::any::Any;
use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::future::{BoxFuture, CatchUnwind};
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use crate::limits::Limits;
pub use crate::tool::{ToolCall, ToolCallResult};
use call::CallFuture;
use gate::{Gate, Place};
use guard::CallGuard;
pub(crate) use hooks::RunHooks;

use crate::arguments::{decode, DecodeLimits};
use crate::registry::{Entry, ToolRegistry};
use crate::suggest::closest;
use crate::tool::{LimitKind, ToolError, ToolOutput, ToolResult};
use crate::tool::{ProgressSink, SharedState, ToolContext};

/// How many close names an unknown-tool error suggests.
const MAX_SUGGESTIONS: usize = 3;
/// How many tool names an unknown-tool error lists when none is close.
const MAX_LISTED_TOOLS: usize = 20;

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

/// A call that passed lookup, decoding and validation, by the runtime
/// that prepared it. Another runtime given it checks it again against its
/// own registry.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    runtime: u64,
    index: usize,
    tool_name: Arc<str>,
    arguments: Value,
}

impl PreparedCall {
    /// The decoded, validated arguments object.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
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
        ToolRuntimeBuilder {
            registry,
            limits: Limits::default(),
            timeouts: HashMap::new(),
            state: SharedState::default(),
        }
    }

    /// The registry served.
    pub fn registry(&self) -> &ToolRegistry {
        &self.inner.registry
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
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

    /// Routes a call and runs as much of it as needs no waiting. A call
    /// on a typed route whose tool finishes on its first poll (most calls)
    /// ends here, its outcome written to `ended`, and the caller's future
    /// never holds more than the call; the rest (a tool that waits, a full
    /// gate, the checked route) is the future given back, on the heap,
    /// which borrows nothing of the call.
    fn begin<'a>(
        &'a self,
        call_id: &str,
        tool_name: &str,
        arguments: Value,
        options: &CallOptions,
        hooks: Option<&'a dyn RunHooks>,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Option<BoxFuture<'a, ToolResult<ToolOutput>>> {
        // An approval is asked with the validated arguments: the checked
        // route.
        let approval = hooks.is_some_and(|hooks| hooks.needs_approval(tool_name));
        let typed = match (arguments, approval) {
            (Value::String(text), false) => {
                match self.start_text(call_id, tool_name, &text, options, hooks, ended) {
                    Some(started) => Ok(started),
                    None => Err(Value::String(text)),
                }
            }
            (object @ Value::Object(_), false) => {
                self.start_value(call_id, tool_name, object, options, hooks, ended)
            }
            (arguments, _) => Err(arguments),
        };
        let Typed {
            entry,
            started,
            guard,
        } = match typed {
            Ok(typed) => typed,
            Err(arguments) => {
                return Some(Box::pin(self.run_checked(
                    call_id.to_owned(),
                    tool_name.to_owned(),
                    arguments,
                    options.clone(),
                    hooks,
                    approval,
                )));
            }
        };
        let waiting = match started {
            Started::Done => {
                debug_assert!(ended.is_ready(), "a call ended without its outcome");
                if let Poll::Ready(outcome) = ended {
                    self.settle(guard, outcome);
                }
                return None;
            }
            Started::Waiting(waiting) => waiting,
        };
        let cancellation = options.cancellation.clone();
        Some(Box::pin(async move {
            let cancellation = cancellation.as_ref();
            let mut outcome = match waiting {
                Waiting::Queued(future) => self.queue(entry, cancellation, || Ok(future)).await,
                Waiting::Running(future, place) => {
                    let running = AssertUnwindSafe(future).catch_unwind();
                    self.run_on(entry, place, running, cancellation).await
                }
            };
            self.settle(guard, &mut outcome);
            outcome
        }))
    }

    /// The end of a call on a typed route: its guard settles on the tool's
    /// outcome, then the output limit applies.
    fn settle(&self, guard: CallGuard, outcome: &mut ToolResult<ToolOutput>) {
        guard.settle(outcome);
        if let Ok(output) = outcome {
            if let Err(error) = self.output_fits(output) {
                *outcome = Err(error);
            }
        }
    }

    /// The checked route: lookup, decoding and validation into a
    /// [`PreparedCall`], then a run's approval or external answer, then
    /// the tool.
    async fn run_checked(
        &self,
        call_id: String,
        tool_name: String,
        arguments: Value,
        options: CallOptions,
        hooks: Option<&dyn RunHooks>,
        approval: bool,
    ) -> ToolResult<ToolOutput> {
        let prepared = self.prepare(&tool_name, arguments)?;
        if let Some(hooks) = hooks {
            let validated = || ToolCall {
                call_id: call_id.clone(),
                tool_name: tool_name.clone(),
                arguments: prepared.arguments.clone(),
            };
            if approval {
                hooks.approve(&validated()).await?;
            }
            if self.inner.registry.entry_at(prepared.index).external {
                let output = hooks.answer(validated()).await?;
                return self.check_output(output);
            }
            hooks.starting(&validated);
        }
        self.execute_prepared(prepared, &call_id, options).await
    }

    /// The text route of a `#[tool]` whose argument types are plain: its
    /// typed parse of the model's text accepts exactly what its schema
    /// accepts, so a call that parses runs without building a `Value` or
    /// validating it again. `None` (unknown tool, another kind of tool, text
    /// over the size limit, a negative zero for a tool with floats, a parse
    /// that fails) sends the call down the checked route, which finds and
    /// explains what is wrong.
    fn start_text(
        &self,
        call_id: &str,
        tool_name: &str,
        text: &str,
        options: &CallOptions,
        hooks: Option<&dyn RunHooks>,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Option<Typed<'_>> {
        let inner = &*self.inner;
        let entry = inner.registry.entry_at(inner.registry.index_of(tool_name)?);
        // Text that could nest deeper than the limit, or is longer than it,
        // takes the checked route, which enforces both; so does a negative
        // zero for a tool with floats, which that route reads as `0`
        // (`json_text::has_negative_zero`).
        let plain = entry.text_route?;
        if plain.depth > inner.limits.max_argument_depth
            || text.len() > inner.limits.max_argument_bytes
            || (plain.floats && crate::json_text::has_negative_zero(text))
        {
            return None;
        }
        // The typed parse happens before a place is taken: it runs none of the
        // tool's body (generated code, `async` throughout).
        let invoke = |context: &dyn Fn() -> ToolContext| entry.tool.__invoke_text(text, context);
        // Observers see the arguments as the checked route gives them.
        let shown = || self.decoded(entry, text);
        self.start_typed(
            entry, call_id, tool_name, options, hooks, invoke, shown, ended,
        )
    }

    /// The same route for arguments that arrive as a parsed object (MCP
    /// sends them so): read with the tool's own types as the checked route
    /// would decode it (bounded, integral floats as integers; see
    /// `arguments::read`), with no schema validation for the same reason.
    /// `Err` gives the object back, as it came, for the checked route.
    fn start_value(
        &self,
        call_id: &str,
        tool_name: &str,
        arguments: Value,
        options: &CallOptions,
        hooks: Option<&dyn RunHooks>,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Result<Typed<'_>, Value> {
        let inner = &*self.inner;
        let Some(index) = inner.registry.index_of(tool_name) else {
            return Err(arguments);
        };
        let entry = inner.registry.entry_at(index);
        if entry
            .text_route
            .is_none_or(|plain| plain.depth > inner.limits.max_argument_depth)
        {
            return Err(arguments);
        }
        let invoke = |context: &dyn Fn() -> ToolContext| {
            entry
                .tool
                .__invoke_value(&arguments, &inner.limits, context)
        };
        // Observers see the arguments as the checked route gives them.
        let shown = || {
            let mut shown = arguments.clone();
            crate::arguments::normalise_all(&mut shown);
            crate::arguments::drop_optional_nulls(&mut shown, entry.validator.schema());
            shown
        };
        let started = self.start_typed(
            entry, call_id, tool_name, options, hooks, invoke, shown, ended,
        );
        started.ok_or(arguments)
    }

    /// Starts a call of a plain `#[tool]` whose arguments `invoke` reads
    /// with the tool's types (`None`: they do not read, and the call takes
    /// the checked route), with the same guard and events as the checked
    /// route; `shown` gives observers the arguments.
    ///
    /// Building the tool's future, the run's event, the cancellation
    /// check, a free place and the first poll happen in that order under
    /// one `catch_unwind`: a panic in the tool's code at either end is
    /// its outcome. (The run's event and the gate are behest's own code,
    /// which does not panic; one `catch_unwind` rather than two is a
    /// measurable part of a call.) The checked route does the same steps
    /// in `finish_now` and `start_in`: the two are kept in step.
    #[allow(clippy::too_many_arguments)]
    fn start_typed<'a>(
        &'a self,
        entry: &'a Entry,
        call_id: &str,
        tool_name: &str,
        options: &CallOptions,
        hooks: Option<&dyn RunHooks>,
        invoke: impl FnOnce(&dyn Fn() -> ToolContext) -> Option<BoxFuture<'a, ToolResult<ToolOutput>>>,
        shown: impl Fn() -> Value,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Option<Typed<'a>> {
        let guard = CallGuard::default();
        let cancellation = options.cancellation.as_ref();
        // Whether the future was built: a panic after that is the tool's
        // outcome, which a cancellation overrides (`ended`).
        let mut built = false;
        let step = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let context = || {
                let context = self.context(call_id, options);
                guard.watch(&context);
                context
            };
            let mut future = invoke(&context)?;
            built = true;
            if let Some(hooks) = hooks {
                hooks.starting(&|| ToolCall {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    arguments: shown(),
                });
            }
            if cancellation.is_some_and(CancellationToken::is_cancelled) {
                *ended = Poll::Ready(Err(ToolError::Cancelled));
                return Some(Started::Done);
            }
            let Some(place) = self.inner.gate.try_enter() else {
                return Some(Started::Waiting(Waiting::Queued(future)));
            };
            let mut noop = std::task::Context::from_waker(std::task::Waker::noop());
            // Polled straight into `ended`: the outcome is not copied
            // from where the tool's future returns it.
            *ended = future.as_mut().poll(&mut noop);
            Some(match ended {
                Poll::Ready(_) => Started::Done,
                Poll::Pending => Started::Waiting(Waiting::Running(future, place)),
            })
        }));
        let started = match step {
            Ok(started) => started?,
            Err(payload) => {
                *ended = Poll::Ready(Err(panicked(payload.as_ref(), entry.reveals_panics)));
                Started::Done
            }
        };
        // A call cancelled from another thread while the tool ran answers
        // `Cancelled` (`ended`), whatever the tool did.
        if built
            && matches!(started, Started::Done)
            && cancellation.is_some_and(CancellationToken::is_cancelled)
        {
            *ended = Poll::Ready(Err(ToolError::Cancelled));
        }
        Some(Typed {
            entry,
            started,
            guard,
        })
    }

    /// The arguments object of a text the text route accepted, as the
    /// checked route decodes it (integral floats as integers, `null` for
    /// optional fields left out).
    fn decoded(&self, entry: &Entry, text: &str) -> Value {
        let limits = DecodeLimits::from(&self.inner.limits);
        match decode(Value::String(text.to_owned()), limits, &entry.required) {
            Ok(object) => {
                let mut arguments = Value::Object(object);
                crate::arguments::drop_optional_nulls(&mut arguments, entry.validator.schema());
                arguments
            }
            Err(_) => Value::String(text.to_owned()),
        }
    }

    /// Steps 1 to 3 of the pipeline: looks the tool up, decodes and
    /// validates the arguments. What a run loop does before it decides how
    /// a call is answered (locally, by a handler, after an approval).
    pub fn prepare(&self, tool_name: &str, arguments: Value) -> ToolResult<PreparedCall> {
        let inner = &*self.inner;
        let index = inner
            .registry
            .index_of(tool_name)
            .ok_or_else(|| not_found(&inner.registry, tool_name))?;
        let entry = inner.registry.entry_at(index);
        let limits = DecodeLimits::from(&self.inner.limits);
        let mut arguments = Value::Object(decode(arguments, limits, &entry.required)?);
        // Any tool may be exported in strict mode (`Strictness::All`), which
        // makes optional fields required and nullable on the wire: `null`
        // there means "left out", so `Option` and defaults keep their
        // meaning.
        crate::arguments::drop_optional_nulls(&mut arguments, entry.validator.schema());
        if let Err((issues, omitted)) = entry.validator.validate(&arguments) {
            return Err(ToolError::InvalidArguments { issues, omitted });
        }
        Ok(PreparedCall {
            runtime: inner.id,
            index,
            tool_name: entry.name.clone(),
            arguments,
        })
    }

    /// Steps 4 and 5: runs a prepared call under the limits and checks its
    /// output.
    pub async fn execute_prepared(
        &self,
        prepared: PreparedCall,
        call_id: &str,
        options: CallOptions,
    ) -> ToolResult<ToolOutput> {
        let inner = &*self.inner;
        // Another runtime's index means nothing here: check the call again.
        let prepared = if prepared.runtime == inner.id {
            prepared
        } else {
            self.prepare(&prepared.tool_name, prepared.arguments)?
        };
        let entry = inner.registry.entry_at(prepared.index);
        let output = self
            .execute(entry, call_id, prepared.arguments, options)
            .await?;
        self.check_output(output)
    }

    /// Step 5: the output limit.
    fn check_output(&self, output: ToolOutput) -> ToolResult<ToolOutput> {
        self.output_fits(&output)?;
        Ok(output)
    }

    /// Whether `output` is within the output limit.
    fn output_fits(&self, output: &ToolOutput) -> ToolResult<()> {
        let limit = self.inner.limits.max_output_bytes;
        let size = output.encoded_len();
        if size > limit {
            return Err(ToolError::LimitExceeded {
                kind: LimitKind::OutputBytes,
                limit,
                actual: Some(size),
            });
        }
        Ok(())
    }

    async fn execute(
        &self,
        entry: &Entry,
        call_id: &str,
        arguments: Value,
        options: CallOptions,
    ) -> ToolResult<ToolOutput> {
        let context = self.context(call_id, &options);
        let guard = CallGuard::default();
        guard.watch(&context);
        // A hand-written `execute` may run code (or panic) while building
        // its future: it is built once it holds a place.
        let start = || guarded(entry, || entry.tool.invoke(arguments, context));
        let output = self
            .finish(entry, options.cancellation.as_ref(), start)
            .await;
        guard.settle(&output);
        output
    }

    /// The context of one call.
    fn context(&self, call_id: &str, options: &CallOptions) -> ToolContext {
        ToolContext::for_call(
            call_id.to_owned(),
            options.cancellation.clone(),
            options.progress.clone(),
            self.inner.state.clone(),
            options.extensions.clone(),
        )
    }

    /// Runs a tool's future, built by `start` once the call holds a place
    /// in the gate, under the concurrency limit, its timeout, cancellation
    /// and panic isolation.
    async fn finish<'a>(
        &'a self,
        entry: &'a Entry,
        cancellation: Option<&'a CancellationToken>,
        start: impl FnOnce() -> ToolResult<BoxFuture<'a, ToolResult<ToolOutput>>> + Send + 'a,
    ) -> ToolResult<ToolOutput> {
        match self.finish_now(entry, cancellation, start) {
            Ok(outcome) => outcome,
            Err(later) => later.await,
        }
    }

    /// [`finish`](Self::finish) as far as it goes without waiting, for the
    /// checked route (the typed routes do the same in `start_typed`): most
    /// calls find a place free and a tool that finishes on its first poll.
    /// Waiting for a place, and for a tool that does not finish at once,
    /// is the future given back, on the heap.
    fn finish_now<'a>(
        &'a self,
        entry: &'a Entry,
        cancellation: Option<&'a CancellationToken>,
        start: impl FnOnce() -> ToolResult<BoxFuture<'a, ToolResult<ToolOutput>>> + Send + 'a,
    ) -> Result<ToolResult<ToolOutput>, BoxFuture<'a, ToolResult<ToolOutput>>> {
        if cancellation.is_some_and(CancellationToken::is_cancelled) {
            return Ok(Err(ToolError::Cancelled));
        }
        let Some(place) = self.inner.gate.try_enter() else {
            return Err(Box::pin(self.queue(entry, cancellation, start)));
        };
        self.start_in(entry, place, cancellation, start)
    }

    /// [`finish`](Self::finish) for a call that found the gate full.
    async fn queue<'a>(
        &'a self,
        entry: &'a Entry,
        cancellation: Option<&'a CancellationToken>,
        start: impl FnOnce() -> ToolResult<BoxFuture<'a, ToolResult<ToolOutput>>>,
    ) -> ToolResult<ToolOutput> {
        let place = self.acquire(cancellation).await?;
        match self.start_in(entry, place, cancellation, start) {
            Ok(outcome) => outcome,
            Err(later) => later.await,
        }
    }

    /// Builds a tool's future with `start` for a call that holds `place`,
    /// and polls it once: its outcome, or the future that runs it on.
    fn start_in<'a>(
        &'a self,
        entry: &'a Entry,
        place: Place<'a>,
        cancellation: Option<&'a CancellationToken>,
        start: impl FnOnce() -> ToolResult<BoxFuture<'a, ToolResult<ToolOutput>>>,
    ) -> Result<ToolResult<ToolOutput>, BoxFuture<'a, ToolResult<ToolOutput>>> {
        // A tool that fails to start (a panic while its future is built)
        // answers that, however a cancellation raced it.
        let future = match start() {
            Ok(future) => future,
            Err(error) => return Ok(Err(error)),
        };
        match first_poll(entry, future) {
            Ok(outcome) => Ok(self.ended(outcome, cancellation)),
            Err(running) => Err(Box::pin(self.run_on(entry, place, running, cancellation))),
        }
    }

    /// [`finish`](Self::finish) for a tool that did not finish on its
    /// first poll: it keeps its place until it ends.
    async fn run_on(
        &self,
        entry: &Entry,
        place: Place<'_>,
        running: Running<'_>,
        cancellation: Option<&CancellationToken>,
    ) -> ToolResult<ToolOutput> {
        let timeout = entry.timeout.unwrap_or(self.inner.limits.default_timeout);
        let outcome = match self.wait(running, timeout, cancellation).await? {
            Ok(Ok(result)) => result,
            Ok(Err(payload)) => Err(panicked(payload.as_ref(), entry.reveals_panics)),
            Err(_elapsed) => Err(ToolError::Timeout { after: timeout }),
        };
        drop(place);
        self.ended(outcome, cancellation)
    }

    /// The outcome of a call that ran.
    fn ended(
        &self,
        outcome: ToolResult<ToolOutput>,
        cancellation: Option<&CancellationToken>,
    ) -> ToolResult<ToolOutput> {
        // Cancelled from another thread while the tool was polled: it may
        // have finished because it saw its token. A cancelled call answers
        // `Cancelled`, however the race went (a panic was traced).
        if cancellation.is_some_and(CancellationToken::is_cancelled) {
            return Err(ToolError::Cancelled);
        }
        outcome
    }

    /// Waits for a place, or for the call to be cancelled first.
    async fn acquire(&self, cancellation: Option<&CancellationToken>) -> ToolResult<Place<'_>> {
        let gate = &self.inner.gate;
        match cancellation {
            Some(token) => tokio::select! {
                biased;
                () = token.cancelled() => Err(ToolError::Cancelled),
                place = gate.enter() => Ok(place),
            },
            None => Ok(gate.enter().await),
        }
    }

    /// Waits for a tool that did not finish at once: under its timeout, and
    /// until cancellation (plus the grace) when the call can be cancelled.
    async fn wait<F: std::future::Future>(
        &self,
        future: F,
        timeout: Duration,
        cancellation: Option<&CancellationToken>,
    ) -> ToolResult<Result<F::Output, tokio::time::error::Elapsed>> {
        let guarded = tokio::time::timeout(timeout, future);
        let Some(token) = cancellation else {
            return Ok(guarded.await);
        };
        let mut guarded = std::pin::pin!(guarded);
        tokio::select! {
            biased;
            () = token.cancelled() => {
                // The tool sees its token too: let it wind down (release
                // locks, stop children) before it is dropped.
                let grace = self.inner.limits.cancellation_grace;
                let _wound_down = tokio::time::timeout(grace, &mut guarded).await;
                Err(ToolError::Cancelled)
            }
            finished = &mut guarded => Ok(finished),
        }
    }
}

/// A call on a typed route, its arguments read by the tool's own types.
struct Typed<'a> {
    entry: &'a Entry,
    started: Started<'a>,
    /// Settled on the call's outcome.
    guard: CallGuard,
}

/// How far a call on a typed route went without waiting.
enum Started<'a> {
    /// It ended, its outcome (before the output limit) written.
    Done,
    /// It waits, for a place or for its tool.
    Waiting(Waiting<'a>),
}

/// What a call on a typed route that did not end at once waits for.
enum Waiting<'a> {
    /// A place: the tool's future, not yet polled (the gate was full).
    Queued(BoxFuture<'a, ToolResult<ToolOutput>>),
    /// Its tool: the future after a first poll that did not finish, with
    /// its place.
    Running(BoxFuture<'a, ToolResult<ToolOutput>>, Place<'a>),
}

/// A tool's future that did not finish on its first poll, a panic in it
/// caught.
type Running<'a> = CatchUnwind<AssertUnwindSafe<BoxFuture<'a, ToolResult<ToolOutput>>>>;

/// Polls a tool's future once, a panic in it caught: its outcome, or the
/// future that did not finish. Polling again with the real waker
/// afterwards is what the `Future` contract asks of every poller.
fn first_poll<'a>(
    entry: &Entry,
    future: BoxFuture<'a, ToolResult<ToolOutput>>,
) -> Result<ToolResult<ToolOutput>, Running<'a>> {
    let mut running = AssertUnwindSafe(future).catch_unwind();
    match (&mut running).now_or_never() {
        Some(Ok(outcome)) => Ok(outcome),
        Some(Err(payload)) => Ok(Err(panicked(payload.as_ref(), entry.reveals_panics))),
        None => Err(running),
    }
}

/// The error for an unknown tool: the close names, or else what there is.
fn not_found(registry: &ToolRegistry, tool_name: &str) -> ToolError {
    let suggestions = closest(tool_name, registry.names(), MAX_SUGGESTIONS);
    let available = if suggestions.is_empty() {
        registry
            .names()
            .take(MAX_LISTED_TOOLS)
            .map(str::to_owned)
            .collect()
    } else {
        Vec::new()
    };
    ToolError::NotFound {
        name: tool_name.to_owned(),
        suggestions,
        available,
    }
}

/// Runs `build` (which makes a tool's future), a panic in it becoming
/// [`ToolError::Panicked`].
fn guarded<T>(entry: &Entry, build: impl FnOnce() -> T) -> ToolResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(build))
        .map_err(|payload| panicked(payload.as_ref(), entry.reveals_panics))
}

fn panicked(payload: &(dyn Any + Send), reveal: bool) -> ToolError {
    let payload = payload
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a payload that is not a string".to_owned());
    // The message is the tool's to reveal (it can carry what the tool was
    // handling); the trace says it panicked, and shows it only then.
    if reveal {
        tracing::error!(panic = %payload, "tool panicked");
    } else {
        tracing::error!(
            panic_bytes = payload.len(),
            "tool panicked (its message is hidden: the tool does not reveal panics)"
        );
    }
    ToolError::Panicked { payload, reveal }
}

/// Configures a [`ToolRuntime`].
#[derive(Debug)]
#[must_use]
pub struct ToolRuntimeBuilder {
    registry: ToolRegistry,
    limits: Limits,
    timeouts: HashMap<String, Duration>,
    state: SharedState,
}

impl ToolRuntimeBuilder {
    /// Replaces all limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Largest accepted arguments, in bytes.
    pub fn max_argument_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_argument_bytes = bytes;
        self
    }

    /// Deepest accepted nesting of the arguments.
    pub fn max_argument_depth(mut self, depth: usize) -> Self {
        self.limits.max_argument_depth = depth;
        self
    }

    /// The timeout of tools that set none.
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.limits.default_timeout = timeout;
        self
    }

    /// The timeout of one tool, overriding its own.
    pub fn tool_timeout(mut self, tool_name: impl Into<String>, timeout: Duration) -> Self {
        self.timeouts.insert(tool_name.into(), timeout);
        self
    }

    /// How many calls may run at once (at least one).
    pub fn max_concurrent_calls(mut self, calls: usize) -> Self {
        self.limits.max_concurrent_calls = calls.max(1);
        self
    }

    /// How long a cancelled tool may wind down before it is dropped.
    pub fn cancellation_grace(mut self, grace: Duration) -> Self {
        self.limits.cancellation_grace = grace;
        self
    }

    /// Largest accepted output, in bytes.
    pub fn max_output_bytes(mut self, bytes: usize) -> Self {
        self.limits.max_output_bytes = bytes;
        self
    }

    /// Adds a value every tool can read through
    /// [`ToolContext::state`]; one per type.
    pub fn state<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.state.insert(value);
        self
    }

    /// Builds the runtime.
    pub fn build(mut self) -> ToolRuntime {
        for (name, timeout) in &self.timeouts {
            self.registry.set_timeout(name, *timeout);
        }
        let gate = Gate::new(self.limits.max_concurrent_calls);
        static IDS: AtomicU64 = AtomicU64::new(0);
        ToolRuntime {
            inner: Arc::new(Inner {
                id: IDS.fetch_add(1, Ordering::Relaxed),
                registry: self.registry,
                limits: self.limits,
                gate,
                state: self.state,
            }),
        }
    }
}

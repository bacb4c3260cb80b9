//! What a running tool can see of its call: id, cancellation, progress
//! reporting and the runtime's shared state.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::{ToolError, ToolResult};

/// A call's idempotency key, read by the tool with
/// [`ToolContext::idempotency_key`]; a caller of the runtime sets one with
/// `CallOptions::extension`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IdempotencyKey(pub String);

/// The context of one tool call.
///
/// Cheap to clone. Tools that need it override
/// [`Tool::execute_with_context`](crate::Tool::execute_with_context).
#[derive(Clone)]
pub struct ToolContext {
    call_id: String,
    cancellation: CallToken,
    progress: Option<ProgressSink>,
    state: SharedState,
    /// Values of this call alone, set by its caller.
    extensions: SharedState,
}

impl ToolContext {
    /// A context for a call made outside a runtime, e.g. in a unit test: no
    /// progress sink, no shared state, a fresh cancellation token.
    pub fn new(call_id: impl Into<String>) -> Self {
        Self {
            call_id: call_id.into(),
            cancellation: CallToken::Own(OnceLock::new()),
            progress: None,
            state: SharedState::default(),
            extensions: SharedState::default(),
        }
    }

    /// The context of a call the runtime runs: its token is a child of
    /// `parent` (the caller's), so cancelling the caller cancels the call,
    /// and the call cancelling its own token stops only its own work.
    pub(crate) fn for_call(
        call_id: String,
        parent: Option<CancellationToken>,
        progress: Option<ProgressSink>,
        state: SharedState,
        extensions: SharedState,
    ) -> Self {
        Self {
            call_id,
            cancellation: CallToken::Watched(Arc::new(CallCancellation::child_of(parent))),
            progress,
            state,
            extensions,
        }
    }

    /// The handle the runtime keeps to cancel this call's token when the
    /// call ends without the tool's own answer.
    pub(crate) fn cancellation_handle(&self) -> Option<Arc<CallCancellation>> {
        match &self.cancellation {
            CallToken::Watched(handle) => Some(handle.clone()),
            CallToken::Own(_) => None,
        }
    }

    /// Adds a value of this call alone, as a caller does with
    /// [`CallOptions::extension`](crate::CallOptions::extension).
    #[must_use]
    pub fn with_extension<T: Any + Send + Sync>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// A value the caller attached to this call alone, by type: who called
    /// over MCP (`behest::mcp::McpCaller`, with the `mcp` feature), or what
    /// an application's own caller attached.
    pub fn extension<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions.get::<T>()
    }

    /// The call's idempotency key, when its caller gave one: a durable run
    /// gives every call a key made of the run's id and the call's id, the
    /// same each time the call is played again (after a crash, say), and
    /// different for every other call of every run. Pass it to the service
    /// a tool changes (`Idempotency-Key` header, a unique constraint) so
    /// that a call that runs twice changes it once.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.extension::<IdempotencyKey>().map(|key| key.0.as_str())
    }

    /// Uses this shared state instead of the empty one.
    #[must_use]
    pub fn with_state(mut self, state: SharedState) -> Self {
        self.state = state;
        self
    }

    /// Sends progress reports to `sink`.
    #[must_use]
    pub fn with_progress(mut self, sink: ProgressSink) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Uses this cancellation token.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancellation = CallToken::Own(OnceLock::from(token));
        self
    }

    /// The id of the call, as the model gave it.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// The token that is cancelled when the call or its run is cancelled.
    /// Long-running tools can `select!` on
    /// [`cancelled()`](CancellationToken::cancelled) to stop early and clean up.
    ///
    /// Inside a runtime the token is the call's own: a child of the
    /// caller's token, also cancelled when the call times out or is dropped,
    /// so child tasks that watch it stop with the call. Cancelling it stops
    /// only this call's own work, never the run or its other calls.
    pub fn cancellation(&self) -> &CancellationToken {
        match &self.cancellation {
            CallToken::Own(own) => own.get_or_init(CancellationToken::new),
            CallToken::Watched(handle) => handle.token(),
        }
    }

    /// Whether the call has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        match &self.cancellation {
            CallToken::Own(own) => own.get().is_some_and(CancellationToken::is_cancelled),
            CallToken::Watched(handle) => handle.is_cancelled(),
        }
    }

    /// Reports progress to whoever observes the call. Does nothing when
    /// nobody does.
    pub fn report_progress(&self, progress: Progress) {
        if let Some(sink) = &self.progress {
            sink.report(&self.call_id, progress);
        }
    }

    /// The shared state of type `T`, if the runtime has one.
    pub fn state<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.state.get::<T>()
    }

    /// The shared state of type `T`, or an error naming the missing type.
    pub fn require_state<T: Any + Send + Sync>(&self) -> ToolResult<&T> {
        self.state.get::<T>().ok_or_else(missing_state::<T>)
    }

    /// The shared state of type `T` as an `Arc`, if the runtime has one.
    pub fn state_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        self.state.get_arc::<T>()
    }

    /// The shared state of type `T` as an `Arc`, or an error naming the
    /// missing type.
    pub fn require_state_arc<T: Any + Send + Sync>(&self) -> ToolResult<Arc<T>> {
        self.state.get_arc::<T>().ok_or_else(missing_state::<T>)
    }
}

/// Where a context's cancellation token comes from.
#[derive(Clone)]
enum CallToken {
    /// A context made outside a runtime: a token of its own, made on first
    /// use (no allocation for a call that never looks).
    Own(OnceLock<CancellationToken>),
    /// A call the runtime runs: shared with the runtime, which cancels it
    /// when the call ends without the tool's answer.
    Watched(Arc<CallCancellation>),
}

/// A call's cancellation token, made on first use: most calls never look
/// at it, and a child token costs a lock on the parent.
pub(crate) struct CallCancellation {
    parent: Option<CancellationToken>,
    own: OnceLock<CancellationToken>,
}

impl CallCancellation {
    fn child_of(parent: Option<CancellationToken>) -> Self {
        Self {
            parent,
            own: OnceLock::new(),
        }
    }

    fn token(&self) -> &CancellationToken {
        self.own.get_or_init(|| match &self.parent {
            Some(parent) => parent.child_token(),
            None => CancellationToken::new(),
        })
    }

    fn is_cancelled(&self) -> bool {
        match self.own.get() {
            Some(own) => own.is_cancelled(),
            None => self
                .parent
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled),
        }
    }

    /// Cancels the call's token. Made now if nobody looked yet, so that a
    /// clone of the context that looks later still sees it cancelled.
    pub(crate) fn cancel(&self) {
        self.token().cancel();
    }
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call_id)
            .field("cancelled", &self.is_cancelled())
            .field("reports_progress", &self.progress.is_some())
            .field("state", &self.state)
            .finish()
    }
}

fn missing_state<T>() -> ToolError {
    ToolError::Execution {
        message: "the tool is not configured correctly: a shared value it needs is missing"
            .to_owned(),
        source: Some(Arc::new(MissingState(std::any::type_name::<T>()))),
    }
}

/// The error behind a missing shared state: names the type for the logs.
#[derive(Debug, thiserror::Error)]
#[error("no shared state of type `{0}` was added to the runtime; add it with `ToolRuntimeBuilder::state`")]
pub struct MissingState(pub &'static str);

/// A progress report of a running tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Progress {
    /// Work done so far, in any unit; increases with each report.
    pub progress: f64,
    /// Total work in the same unit, if known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is happening, for people.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// `progress` out of `total`.
    pub fn new(progress: f64, total: Option<f64>) -> Self {
        Self {
            progress,
            total,
            message: None,
        }
    }

    /// Adds a message.
    #[must_use]
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }
}

/// The function behind a [`ProgressSink`].
type ReportFn = dyn Fn(&str, Progress) + Send + Sync;

/// Where progress reports go: a function of the call id and the report.
#[derive(Clone)]
pub struct ProgressSink(Arc<ReportFn>);

impl ProgressSink {
    /// A sink that calls `report` with the call id and each report.
    pub fn new(report: impl Fn(&str, Progress) + Send + Sync + 'static) -> Self {
        Self(Arc::new(report))
    }

    fn report(&self, call_id: &str, progress: Progress) {
        (self.0)(call_id, progress);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// Values shared by every call of a runtime, one per type.
///
/// Empty until the first [`insert`](Self::insert), which is the only time
/// it allocates: the contexts of most calls carry an empty one.
#[derive(Clone, Default)]
pub struct SharedState(Option<Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>>);

impl SharedState {
    /// Adds `value`, replacing any earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) {
        let values = self.0.get_or_insert_with(Default::default);
        Arc::make_mut(values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if present.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref::<T>())
    }

    /// The value of type `T` as an `Arc`, if present.
    pub fn get_arc<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let value = self.0.as_ref()?.get(&TypeId::of::<T>())?.clone();
        value.downcast::<T>().ok()
    }

    /// How many values are stored.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |values| values.len())
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl fmt::Debug for SharedState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedState({} values)", self.len())
    }
}

/// A value a `#[ctx]` parameter can receive, taken from the call's
/// [`ToolContext`].
///
/// Implemented for [`ToolContext`] itself, the call's
/// [`CancellationToken`](crate::CancellationToken), [`State<T>`] (shared
/// state added with [`ToolRuntimeBuilder::state`](crate::ToolRuntimeBuilder::state))
/// and `Option<State<T>>`. A missing state is an error result, not a panic.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected with `#[ctx]`",
    label = "not injectable",
    note = "`#[ctx]` parameters can be `ToolContext`, `CancellationToken`, `State<T>` or `Option<State<T>>`; use `State<{Self}>` for shared state"
)]
pub trait FromToolContext: Sized {
    /// Takes the value from the context.
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self>;
}

impl FromToolContext for ToolContext {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        Ok(context.clone())
    }
}

impl FromToolContext for CancellationToken {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        Ok(context.cancellation().clone())
    }
}

/// Shared state of type `T`, injected into a `#[ctx]` parameter.
///
/// ```
/// use behest::State;
///
/// struct Db { url: String }
///
/// fn url(db: State<Db>) -> String {
///     db.url.clone() // `State<T>` derefs to `T`
/// }
/// ```
pub struct State<T>(pub Arc<T>);

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&self.0).finish()
    }
}

impl<T: Any + Send + Sync> FromToolContext for State<T> {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        context.require_state_arc::<T>().map(State)
    }
}

impl<T: Any + Send + Sync> FromToolContext for Option<State<T>> {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        Ok(context.state_arc::<T>().map(State))
    }
}

//! What a run adds to the pipeline of a call.

use futures::future::BoxFuture;

use super::{CallOptions, PreparedCall, ToolCall, ToolRuntime};
use crate::tool::{IdempotencyKey, ToolOutput, ToolResult};

/// A run's part in a call, asked by the runtime at the points of its one
/// pipeline. The runtime keeps everything else (span, limits, validation,
/// text route, output limit) and decides each call's [`Route`] once, after
/// validation; the run only carries it out.
pub(crate) trait RunHooks: Sync {
    /// Whether a call of `tool_name` needs an approval before it runs.
    fn needs_approval(&self, tool_name: &str) -> bool;

    /// Whether a local call of `tool_name` is handed to
    /// [`dispatch`](Self::dispatch) rather than run at once: it needs an
    /// approval, or the run's steps carry out every call (a durable
    /// engine's journal).
    fn routes(&self, tool_name: &str) -> bool;

    /// Carries out a validated call on its `route`; `run` runs it here,
    /// under the runtime's limits. An error is the call's result.
    fn dispatch(
        &self,
        call: ToolCall,
        route: Route,
        run: LocalRun,
    ) -> BoxFuture<'_, ToolResult<ToolOutput>>;

    /// A validated local call of `tool_name` is about to run at once;
    /// `call` makes it, for observers that want it.
    fn starting(&self, call_id: &str, tool_name: &str, call: &dyn Fn() -> ToolCall);
}

/// How a validated call of a run is answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// A tool of the runtime's: run it.
    Local,
    /// A tool of the runtime's that runs once approved.
    NeedsApproval,
    /// An external tool: someone outside the run answers (once approved,
    /// when `approval`).
    External {
        /// Whether the call needs an approval before it is answered.
        approval: bool,
    },
}

/// A validated call, ready to run here under the runtime's limits (its
/// timeout, cancellation, concurrency and output limits), owning what it
/// needs: a durable engine may run it inside its journal's step.
#[derive(Debug, Clone)]
pub(crate) struct LocalRun {
    runtime: ToolRuntime,
    prepared: PreparedCall,
    call_id: String,
    options: CallOptions,
}

impl LocalRun {
    pub(super) fn new(
        runtime: ToolRuntime,
        prepared: PreparedCall,
        call_id: String,
        options: CallOptions,
    ) -> Self {
        Self {
            runtime,
            prepared,
            call_id,
            options,
        }
    }

    /// The call given `key` as its idempotency key (the tool reads it
    /// with [`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key)).
    pub(crate) fn with_idempotency_key(mut self, key: String) -> Self {
        self.options.extensions.insert(IdempotencyKey(key));
        self
    }

    /// The call given `value` as an extension of its own.
    pub(crate) fn with_extension<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.options.extensions.insert(value);
        self
    }

    /// The call with `arguments` in place of its own (a guardrail's
    /// rewrite), validated as the model's were.
    pub(crate) fn with_arguments(
        mut self,
        tool_name: &str,
        arguments: serde_json::Value,
    ) -> ToolResult<Self> {
        self.prepared = self.runtime.prepare(tool_name, arguments)?;
        Ok(self)
    }

    /// The tool the call runs, its validated arguments, its id, and one of
    /// the call's extensions: what a run needs to drive an agent run as a
    /// tool step by step.
    pub(crate) fn tool(&self) -> Option<&std::sync::Arc<dyn crate::tool::Tool>> {
        self.runtime.registry().get(&self.prepared.tool_name)
    }

    pub(crate) fn runtime(&self) -> &ToolRuntime {
        &self.runtime
    }

    pub(crate) fn arguments(&self) -> &serde_json::Value {
        &self.prepared.arguments
    }

    pub(crate) fn call_id(&self) -> &str {
        &self.call_id
    }

    pub(crate) fn extension<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.options.extensions.get::<T>()
    }

    /// Runs the call; an external tool has nothing to run and answers
    /// [`ToolError::NotImplemented`](crate::ToolError::NotImplemented).
    pub(crate) fn run(self) -> BoxFuture<'static, ToolResult<ToolOutput>> {
        let Self {
            runtime,
            prepared,
            call_id,
            options,
        } = self;
        Box::pin(async move { runtime.execute_prepared(prepared, &call_id, options).await })
    }
}

impl ToolRuntime {
    /// `call` checked again (looked up, decoded, validated) and made ready
    /// to run here: a call a run stopped at, going on once approved.
    pub(crate) fn local_run(&self, call: &ToolCall, options: CallOptions) -> ToolResult<LocalRun> {
        let prepared = self.prepare(&call.tool_name, call.arguments.clone())?;
        Ok(LocalRun::new(
            self.clone(),
            prepared,
            call.call_id.clone(),
            options,
        ))
    }

    /// An answer given from outside, held to the output limit a tool's own
    /// output meets.
    pub(crate) fn within_output_limit(&self, output: ToolOutput) -> ToolResult<ToolOutput> {
        self.check_output(output)
    }
}

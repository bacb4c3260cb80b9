//! What a run adds to the pipeline of a call.

use futures::future::BoxFuture;

use super::ToolCall;
use crate::tool::{ToolOutput, ToolResult};

/// A run's part in a call, asked by the runtime at the points of its one
/// pipeline: approvals before a call runs, answers to external calls, and
/// the event that a local call starts. The runtime keeps everything else
/// (span, limits, validation, text route, output limit).
pub(crate) trait RunHooks: Sync {
    /// Whether a call of `tool_name` needs an approval before it runs.
    fn needs_approval(&self, tool_name: &str) -> bool;

    /// Asks for an approval of a validated call; an error is the call's
    /// result.
    fn approve<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult<()>>;

    /// Has a validated call of an external tool answered.
    fn answer(&self, call: ToolCall) -> BoxFuture<'_, ToolResult<ToolOutput>>;

    /// A validated local call is about to run; `call` makes it, for
    /// observers that want it.
    fn starting(&self, call: &dyn Fn() -> ToolCall);
}

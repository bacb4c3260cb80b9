//! The end of a call's own cancellation token.

use std::sync::{Arc, OnceLock};

use crate::tool::{CallCancellation, ToolContext};
use crate::tool::{ToolError, ToolOutput, ToolResult};

/// Cancels a call's own token when the call ends without the tool's own
/// answer (timed out, cancelled, panicked) or is dropped unfinished, so
/// that child tasks watching the token stop with the call.
#[derive(Default)]
pub(super) struct CallGuard {
    /// Set once the call's context exists: a body that never reads its
    /// context gets none, and there is nothing to cancel.
    handle: OnceLock<Arc<CallCancellation>>,
}

impl CallGuard {
    /// Watches the token of `context`.
    pub fn watch(&self, context: &ToolContext) {
        if let Some(handle) = context.cancellation_handle() {
            let _first = self.handle.set(handle);
        }
    }

    /// The call ended with `outcome`: the token is left alone when the
    /// tool answered itself.
    pub fn settle(mut self, outcome: &ToolResult<ToolOutput>) {
        let stopped = matches!(
            outcome,
            Err(ToolError::Timeout { .. } | ToolError::Cancelled | ToolError::Panicked { .. })
        );
        if !stopped {
            self.handle.take();
        }
    }
}

impl Drop for CallGuard {
    fn drop(&mut self) {
        if let Some(handle) = self.handle.take() {
            handle.cancel();
        }
    }
}

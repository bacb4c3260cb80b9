//! The builder of a [`ToolRuntime`]: limits, per-tool timeouts and shared
//! state.

use std::any::Any;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::gate::Gate;
use super::{Inner, Limits, ToolRuntime};
use crate::registry::ToolRegistry;
use crate::tool::SharedState;

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
    pub(super) fn new(registry: ToolRegistry) -> Self {
        Self {
            registry,
            limits: Limits::default(),
            timeouts: HashMap::new(),
            state: SharedState::default(),
        }
    }

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
    /// [`ToolContext::state`](crate::ToolContext::state); one per type.
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

use std::time::Duration;

/// Limits a [`ToolRuntime`](crate::ToolRuntime) enforces on every call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest accepted arguments, in bytes of JSON text. Default 1 MiB.
    pub max_argument_bytes: usize,
    /// Deepest accepted nesting of arrays and objects in the arguments; the
    /// arguments object itself is level 1. Default 64. JSON text deeper than
    /// 128 levels is refused by the parser whatever this says.
    pub max_argument_depth: usize,
    /// How long a call may run unless its tool sets its own timeout.
    /// Default 60 s.
    pub default_timeout: Duration,
    /// How many calls may run at once; further calls wait. Default 64.
    pub max_concurrent_calls: usize,
    /// Largest accepted output, in bytes (approximate for JSON). Default 1 MiB.
    pub max_output_bytes: usize,
    /// How long a cancelled call's tool keeps running so that it can see its
    /// cancellation token and wind down; then it is dropped. The call's
    /// result is [`ToolError::Cancelled`](crate::ToolError::Cancelled)
    /// either way. Default 100 ms.
    pub cancellation_grace: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_argument_bytes: 1024 * 1024,
            max_argument_depth: 64,
            default_timeout: Duration::from_secs(60),
            max_concurrent_calls: 64,
            max_output_bytes: 1024 * 1024,
            cancellation_grace: Duration::from_millis(100),
        }
    }
}

tokio::task_local! {
    /// The limits of the runtime whose run is calling a handler.
    static HANDLER_LIMITS: Limits;
}

/// The limits in force for a handler: its run's runtime's while a run calls
/// it, the defaults elsewhere.
pub(crate) fn current() -> Limits {
    HANDLER_LIMITS.try_with(Clone::clone).unwrap_or_default()
}

/// Runs `handler` with `limits` as the [`current`] ones.
pub(crate) fn with_limits<R>(limits: Limits, handler: impl FnOnce() -> R) -> R {
    HANDLER_LIMITS.sync_scope(limits, handler)
}

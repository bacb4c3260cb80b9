#![doc = include_str!("../../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod arguments;
pub mod context;
mod limits;
pub mod providers;
pub mod registry;
pub mod run;
pub mod runtime;
mod suggest;
pub mod tool;
pub mod typed;
pub mod validation;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use context::{Progress, ProgressSink, SharedState, ToolContext};
pub use registry::{RegistryError, ToolRegistry};
pub use run::{
    Agent, AssistantMessage, Envelope, EventKind, Message, Model, RunControl, RunOutcome, RunState,
    RuntimeInvocation, ScriptedModel, ToolStreamEvent, Turn,
};
pub use runtime::{
    CallOptions, Limits, PreparedCall, ToolCall, ToolCallResult, ToolRuntime, ToolRuntimeBuilder,
};
pub use tokio_util::sync::CancellationToken;
pub use typed::{ExternalToolArgs, FromToolContext, IntoToolOutput, State};

#[cfg(feature = "macros")]
#[doc(inline)]
pub use behest_macros::{external_tool, tool, tools};
pub use tool::{
    ArgumentIssue, ExternalTool, LimitKind, Tool, ToolAnnotations, ToolError, ToolOutput,
    ToolResult, ToolSpec,
};

/// Everything needed to write and run tools, for a glob import.
pub mod prelude {
    #[cfg(feature = "macros")]
    pub use crate::{external_tool, tool, tools};
    pub use crate::{
        Agent, Envelope, EventKind, ExternalTool, ExternalToolArgs, Message, RunControl,
        RunOutcome, RunState, RuntimeInvocation, State, Tool, ToolCall, ToolCallResult,
        ToolContext, ToolError, ToolOutput, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
        ToolStreamEvent,
    };
}

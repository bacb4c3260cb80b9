#![doc = include_str!("../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod arguments;
pub mod conversation;
mod derived;
pub mod docs;
mod json_text;
mod limits;
#[cfg(feature = "mcp")]
pub mod mcp;
pub mod model;
#[cfg(feature = "__http")]
pub mod models;
pub mod providers;
pub mod registry;
pub mod run;
pub mod runtime;
mod suggest;
mod sync;
#[cfg(feature = "otel")]
pub mod telemetry;
pub mod tool;
#[cfg(feature = "ui")]
pub mod ui;
mod usage;
pub mod validation;

#[doc(hidden)]
pub mod __private;

pub use conversation::{AssistantMessage, DeltaSink, Message, ModelDelta, StopKind, StopReason};
#[doc(hidden)]
pub use model::Turn;
pub use model::{
    Model, ModelError, ModelRequest, ModelSettings, ReasoningEffort, ScriptedModel, ScriptedTurn,
};
pub use registry::{RegistryError, ToolRegistry};
pub use run::{
    Agent, ControlError, Envelope, EventKind, EventStream, RunControl, RunError, RunOptions,
    RunOutcome, RunPhase, RuntimeInvocation, ToolStreamEvent,
};
pub use runtime::{
    CallOptions, Limits, PreparedCall, ToolCall, ToolCallResult, ToolRuntime, ToolRuntimeBuilder,
};
pub use tokio_util::sync::CancellationToken;
pub use usage::Usage;

#[cfg(feature = "macros")]
#[doc(inline)]
pub use behest_macros::{data, external_tool, schema, tool, tool_spec, tools};
pub use tool::{
    ArgumentIssue, Attachment, CallPart, ExternalTool, ExternalToolArgs, FromToolContext,
    IdempotencyKey, IntoToolOutput, LimitKind, Progress, ProgressSink, SharedState, State, Tool,
    ToolAnnotations, ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec,
};

/// The JSON value type and `json!` macro, so tools need no `serde_json` of
/// their own.
pub use serde_json::{json, Value};

/// Everything needed to write and run tools, for a glob import: the tool
/// contract, the registry and runtime, runs with their events and errors,
/// the scripted model, and the macros.
pub mod prelude {
    #[doc(hidden)]
    pub use crate::Turn;
    #[cfg(feature = "macros")]
    pub use crate::{data, external_tool, tool, tools};
    pub use crate::{
        json, Agent, AssistantMessage, ControlError, Envelope, EventKind, ExternalTool,
        ExternalToolArgs, Limits, Message, Model, ModelError, Progress, RunControl, RunError,
        RunOutcome, RunPhase, RuntimeInvocation, ScriptedModel, ScriptedTurn, State, StopKind,
        StopReason, Tool, ToolCall, ToolCallResult, ToolContext, ToolError, ToolOutput,
        ToolRegistry, ToolResult, ToolRuntime, ToolSpec, ToolStreamEvent, Value,
    };
}

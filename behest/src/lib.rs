#![doc = include_str!("../../README.md")]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod arguments;
pub mod context;
pub mod registry;
pub mod runtime;
mod suggest;
pub mod tool;
pub mod validation;

pub use context::{Progress, ProgressSink, SharedState, ToolContext};
pub use registry::{RegistryError, ToolRegistry};
pub use runtime::{CallOptions, Limits, ToolCall, ToolCallResult, ToolRuntime, ToolRuntimeBuilder};
pub use tokio_util::sync::CancellationToken;
pub use tool::{
    ArgumentIssue, ExternalTool, LimitKind, Tool, ToolAnnotations, ToolError, ToolOutput,
    ToolResult, ToolSpec,
};

/// Everything needed to write and run tools, for a glob import.
pub mod prelude {
    pub use crate::{
        ExternalTool, Tool, ToolCall, ToolCallResult, ToolContext, ToolError, ToolOutput,
        ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
    };
}

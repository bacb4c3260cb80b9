//! The tool contract: what a tool is, what it returns and how it fails.

mod error;
mod external;
mod output;
mod spec;

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

pub use crate::context::ToolContext;
pub use error::{ArgumentIssue, LimitKind, ToolError, ToolResult};
pub use external::ExternalTool;
pub use output::ToolOutput;
pub use spec::{ToolAnnotations, ToolSpec};

/// A tool a model can call.
///
/// Implement [`name`](Tool::name), [`spec`](Tool::spec) and
/// [`execute`](Tool::execute); everything else has a default. The trait is
/// usable as `Arc<dyn Tool>`: the runtime calls tools through
/// [`invoke`](#method.invoke), which the implementation gets for free.
///
/// ```
/// use behest::{Tool, ToolOutput, ToolResult, ToolSpec};
/// use serde_json::{json, Value};
///
/// struct Echo;
///
/// impl Tool for Echo {
///     fn name(&self) -> &str {
///         "echo"
///     }
///     fn spec(&self) -> ToolSpec {
///         ToolSpec::new(
///             "echo",
///             "Repeat the text back.",
///             json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
///         )
///     }
///     async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
///         Ok(ToolOutput::text(arguments["text"].as_str().unwrap_or_default()))
///     }
/// }
/// ```
pub trait Tool: Send + Sync + 'static + erased::ErasedTool {
    /// The name the model calls the tool by.
    fn name(&self) -> &str;

    /// The tool's declaration: name, description, input schema, output schema
    /// and annotations. The registry reads it once, at registration.
    fn spec(&self) -> ToolSpec;

    /// Runs the tool on arguments that the runtime has already decoded and
    /// validated against [`ToolSpec::parameters`].
    fn execute(&self, arguments: Value) -> impl Future<Output = ToolResult<ToolOutput>> + Send
    where
        Self: Sized;

    /// Runs the tool with its call context: call id, cancellation, progress
    /// reporting and shared state. The runtime always calls this method; the
    /// default ignores the context and calls [`execute`](Tool::execute).
    /// Override it in tools that need the context.
    fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> impl Future<Output = ToolResult<ToolOutput>> + Send
    where
        Self: Sized,
    {
        drop(context);
        self.execute(arguments)
    }

    /// How long one call may run before the runtime drops it and reports
    /// [`ToolError::Timeout`]. `None` uses the runtime's default.
    fn timeout(&self) -> Option<Duration> {
        None
    }

    /// Whether the tool asks providers for strict schema adherence (OpenAI
    /// `strict: true`). Off by default.
    fn strict(&self) -> bool {
        false
    }

    /// Whether the tool runs outside this process: inside a run, its calls
    /// are answered by the run's handlers. True for [`ExternalTool`].
    fn is_external(&self) -> bool {
        false
    }

    /// Whether each call needs an approval before it runs, inside a run.
    fn needs_approval(&self) -> bool {
        false
    }

    /// Whether the text of a panic in this tool may be shown to the model.
    /// Off by default: panic messages can carry internals.
    fn reveals_panics(&self) -> bool {
        false
    }
}

impl dyn Tool {
    /// Runs a type-erased tool with its context: what the runtime calls.
    ///
    /// Arguments are passed as given; validation is the runtime's job.
    pub fn invoke(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        self.erased_execute(arguments, context)
    }
}

mod erased {
    use super::*;

    /// The object-safe face of [`Tool`], implemented for every tool.
    pub trait ErasedTool {
        fn erased_execute(
            &self,
            arguments: Value,
            context: ToolContext,
        ) -> BoxFuture<'_, ToolResult<ToolOutput>>;
    }

    impl<T: Tool> ErasedTool for T {
        fn erased_execute(
            &self,
            arguments: Value,
            context: ToolContext,
        ) -> BoxFuture<'_, ToolResult<ToolOutput>> {
            Box::pin(self.execute_with_context(arguments, context))
        }
    }
}

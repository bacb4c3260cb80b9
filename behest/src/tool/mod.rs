//! The tool contract: what a tool is, what it returns and how it fails.

mod call;
mod checkpoint;
mod context;
mod error;
mod external;
mod media;
mod output;
mod spec;

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::limits::Limits;

pub use call::{ToolCall, ToolCallResult};
pub use checkpoint::CallPart;
pub(crate) use context::CallCancellation;
pub use context::{
    FromToolContext, IdempotencyKey, MissingState, Progress, ProgressSink, SharedState, State,
    ToolContext,
};
pub use error::{ArgumentIssue, LimitKind, ToolError, ToolResult};
pub use external::{ExternalTool, ExternalToolArgs};
pub use media::MediaSource;
pub use output::{Attachment, IntoToolOutput, ToolOutput};
pub use spec::{ToolAnnotations, ToolSpec};

/// What the runtime's typed routes need to know of a tool whose own types
/// read its arguments ([`Tool::__text_route`]).
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct PlainArguments {
    /// The deepest nesting of its plain arguments in an arguments object,
    /// the object itself being level 1 (as `Limits::max_argument_depth`
    /// counts).
    pub depth: usize,
    /// Whether some plain argument holds floating-point numbers.
    pub floats: bool,
    /// The checks of the arguments whose types are not plain, against
    /// their properties' schemas; `None` when all are plain.
    pub checks: Option<ArgumentChecks>,
}

/// The checks a tool's typed routes make of its arguments, opaque to the
/// contract: only the reader of arguments knows what they hold.
#[doc(hidden)]
#[derive(Clone)]
pub struct ArgumentChecks(std::sync::Arc<dyn std::any::Any + Send + Sync>);

impl ArgumentChecks {
    /// Wraps `checks`.
    pub fn new(checks: impl std::any::Any + Send + Sync) -> Self {
        Self(std::sync::Arc::new(checks))
    }

    /// The checks, if they are a `T`.
    pub fn get<T: std::any::Any>(&self) -> Option<&T> {
        self.0.downcast_ref()
    }
}

impl std::fmt::Debug for ArgumentChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ArgumentChecks")
    }
}

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

    /// Whether the tool can be run in two parts ([`CallPart`]): first
    /// what must happen once, answered as the output's text (the JSON of
    /// the value to keep), then the rest from that value. An engine that
    /// plays calls again after a crash keeps the start's value, and plays
    /// only the rest again.
    fn keeps_checkpoints(&self) -> bool {
        false
    }

    /// Whether the text of a panic in this tool may be shown to the model.
    /// Off by default: panic messages can carry internals.
    fn reveals_panics(&self) -> bool {
        false
    }

    /// Whether [`__invoke_text`](Tool::__invoke_text) may run this tool
    /// straight from the model's argument text: `Some` of the deepest
    /// nesting such a text can have (the object itself is level 1), so the
    /// runtime can keep the route to what its depth limit allows, and of
    /// whether it holds floats, whose negative zeros the runtime leaves to
    /// the checked route. Generated by `#[tool]` for tools whose typed
    /// parse accepts exactly what their schema accepts; not for
    /// hand-written tools.
    #[doc(hidden)]
    fn __text_route(&self) -> Option<PlainArguments> {
        None
    }

    /// Parses the model's argument text with the tool's own types (its
    /// arguments that are not plain held to their schemas under `limits`,
    /// as `route` says) and, if that succeeds, returns the running call;
    /// `None` sends the call down the checked route, which explains what is
    /// wrong. `context` makes the call's context, for a tool that reads it.
    /// Only called with what [`__text_route`](Tool::__text_route) gave, and
    /// for a tool with plain floats never with a text that may hold a
    /// negative zero.
    #[doc(hidden)]
    fn __invoke_text(
        &self,
        text: &str,
        route: &PlainArguments,
        limits: &Limits,
        context: &dyn Fn() -> ToolContext,
    ) -> Option<BoxFuture<'_, ToolResult<ToolOutput>>> {
        let _unused = (text, route, limits, context);
        None
    }

    /// Reads an arguments object with the tool's own types as they would
    /// read it once the checked route decoded it (under `limits`' size and
    /// depth, integral floats as integers) and, if that succeeds, returns
    /// the running call: the text route for arguments that arrive parsed,
    /// as MCP sends them. `None` (the types do not read it, or it is over
    /// a limit) sends the call down the checked route. Only called with
    /// what [`__text_route`](Tool::__text_route) gave.
    #[doc(hidden)]
    fn __invoke_value(
        &self,
        arguments: &Value,
        route: &PlainArguments,
        limits: &Limits,
        context: &dyn Fn() -> ToolContext,
    ) -> Option<BoxFuture<'_, ToolResult<ToolOutput>>> {
        let _unused = (arguments, route, limits, context);
        None
    }

    /// Where the tool's spec file and the Rust type that reads its
    /// arguments disagree in what the macro could not see when the crate
    /// was built (an enum's values, a type defined elsewhere): registration
    /// refuses the tool with this message. Generated by `#[tool]` and
    /// `#[external_tool]` with `schema = ".."`; not for hand-written tools.
    #[doc(hidden)]
    fn __spec_conflict(&self) -> Option<String> {
        None
    }

    /// For an agent run as a tool, what a run needs to drive it step by
    /// step (a durable engine journals its turns and calls one by one);
    /// `None` for every other tool.
    #[doc(hidden)]
    fn __agent(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        None
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

/// A shared tool is a tool: `Arc<dyn Tool>` (what a registry holds) can be
/// called as the contract says, `tool.execute(arguments).await`, and
/// registered again or wrapped.
///
/// ```
/// # use std::sync::Arc;
/// # use behest::{ExternalTool, Tool, ToolError};
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let tool: Arc<dyn Tool> = Arc::new(ExternalTool::new(
///     "web_search",
///     "Search the web.",
///     serde_json::json!({"type": "object"}),
/// ));
/// let outcome = tool.execute(serde_json::json!({"query": "rust"})).await;
/// assert!(matches!(outcome, Err(ToolError::NotImplemented)));
/// # }
/// ```
impl<T: Tool + ?Sized> Tool for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn spec(&self) -> ToolSpec {
        (**self).spec()
    }

    /// Runs the shared tool with a fresh context (call id `""`, a token
    /// nobody cancels, no shared state). Arguments are passed as given:
    /// validation is the runtime's job.
    fn execute(&self, arguments: Value) -> impl Future<Output = ToolResult<ToolOutput>> + Send {
        (**self).erased_execute(arguments, ToolContext::new(""))
    }

    fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> impl Future<Output = ToolResult<ToolOutput>> + Send {
        (**self).erased_execute(arguments, context)
    }

    fn timeout(&self) -> Option<Duration> {
        (**self).timeout()
    }

    fn strict(&self) -> bool {
        (**self).strict()
    }

    fn is_external(&self) -> bool {
        (**self).is_external()
    }

    fn needs_approval(&self) -> bool {
        (**self).needs_approval()
    }

    fn keeps_checkpoints(&self) -> bool {
        (**self).keeps_checkpoints()
    }

    fn reveals_panics(&self) -> bool {
        (**self).reveals_panics()
    }

    fn __text_route(&self) -> Option<PlainArguments> {
        (**self).__text_route()
    }

    fn __invoke_text(
        &self,
        text: &str,
        route: &PlainArguments,
        limits: &Limits,
        context: &dyn Fn() -> ToolContext,
    ) -> Option<BoxFuture<'_, ToolResult<ToolOutput>>> {
        (**self).__invoke_text(text, route, limits, context)
    }

    fn __invoke_value(
        &self,
        arguments: &Value,
        route: &PlainArguments,
        limits: &Limits,
        context: &dyn Fn() -> ToolContext,
    ) -> Option<BoxFuture<'_, ToolResult<ToolOutput>>> {
        (**self).__invoke_value(arguments, route, limits, context)
    }

    fn __spec_conflict(&self) -> Option<String> {
        (**self).__spec_conflict()
    }

    fn __agent(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        (**self).__agent()
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

//! The `Tool` impl of every `#[tool]`, over what the macro generates, and
//! its two routes: the checked one (a validated `Value`) and the text route.

use std::future::Future;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::plain::PlainArguments;
use super::{Described, SpecParts};
use crate::arguments::FieldChecks;
use crate::limits::Limits;
use crate::tool::{ToolContext, ToolOutput, ToolResult, ToolSpec};

/// What `#[tool]` generates for a tool: its arguments struct, the options
/// of the attribute, its spec and its body. [`Tool`](crate::Tool) follows
/// from the blanket impl below, compiled once here rather than once per tool.
pub trait TypedTool: Send + Sync + 'static {
    /// The generated arguments struct.
    type Arguments: serde::de::DeserializeOwned + Send;

    /// Name, description, hints and options, as the attribute gives them.
    const PARTS: SpecParts;

    /// The spec and the text route, built on first use and kept for the
    /// tool's type ([`described`](super::described)).
    fn described(&self) -> &'static Described;

    /// See [`Tool::__spec_conflict`](crate::Tool::__spec_conflict).
    fn spec_conflict(&self) -> Option<String> {
        None
    }

    /// Whether the body reads its context (a `#[ctx]` parameter); if not,
    /// the text route does not make one. Set by the tools that do, so that
    /// the common tool has one item fewer to compile.
    const READS_CONTEXT: bool = false;

    /// The tool's body: calls the function and turns its result into output.
    fn run(
        &self,
        arguments: Self::Arguments,
        context: ToolContext,
    ) -> impl Future<Output = ToolResult<ToolOutput>> + Send;
}

impl<T: TypedTool> crate::Tool for T {
    fn name(&self) -> &str {
        T::PARTS.name
    }

    fn spec(&self) -> ToolSpec {
        self.described().spec.clone()
    }

    fn execute(&self, arguments: Value) -> impl Future<Output = ToolResult<ToolOutput>> + Send {
        execute_typed(self, arguments, ToolContext::new(""))
    }

    fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> impl Future<Output = ToolResult<ToolOutput>> + Send {
        execute_typed(self, arguments, context)
    }

    fn timeout(&self) -> Option<Duration> {
        T::PARTS.timeout
    }

    fn strict(&self) -> bool {
        T::PARTS.strict
    }

    fn needs_approval(&self) -> bool {
        T::PARTS.needs_approval
    }

    fn __spec_conflict(&self) -> Option<String> {
        self.spec_conflict()
    }

    fn __text_route(&self) -> Option<PlainArguments> {
        self.described().plain.clone()
    }

    fn __invoke_text(
        &self,
        text: &str,
        route: &PlainArguments,
        limits: &Limits,
        context: &dyn Fn() -> ToolContext,
    ) -> Option<BoxFuture<'_, ToolResult<ToolOutput>>> {
        invoke_text(self, text, route, limits, context)
    }

    fn __invoke_value(
        &self,
        arguments: &Value,
        route: &PlainArguments,
        limits: &Limits,
        context: &dyn Fn() -> ToolContext,
    ) -> Option<BoxFuture<'_, ToolResult<ToolOutput>>> {
        invoke_value(self, arguments, route, limits, context)
    }
}

/// `Tool::execute_with_context` of a `#[tool]`: arguments the runtime has
/// validated, parsed into the tool's types.
async fn execute_typed<T: TypedTool>(
    tool: &T,
    arguments: Value,
    context: ToolContext,
) -> ToolResult<ToolOutput> {
    let arguments = crate::arguments::parse(arguments)?;
    tool.run(arguments, context).await
}

/// `Tool::__invoke_text` of a `#[tool]` with typed routes: its plain
/// argument types accept exactly what their schemas accept, and the others
/// are held to their schemas as they are read (`field_checks`), so a parse that
/// succeeds needs no second check. Anything else is left to the checked
/// route. The runtime has already left a tool with plain floats a text
/// that may hold a negative zero (`json_text::has_negative_zero`), which
/// the checked route reads as `0`.
fn invoke_text<'a, T: TypedTool>(
    tool: &'a T,
    text: &str,
    route: &PlainArguments,
    limits: &Limits,
    context: &dyn Fn() -> ToolContext,
) -> Option<BoxFuture<'a, ToolResult<ToolOutput>>> {
    // The arguments struct reads only an object (`__private::de`), as the
    // schema wants: an array or a scalar fails the parse below.
    let checks = route
        .checks
        .as_ref()
        .map(|checks| checks.get::<FieldChecks>());
    let arguments = match checks {
        None => serde_json::from_str::<T::Arguments>(text).ok()?,
        // Checks of another kind are none the reader knows: no typed route.
        Some(None) => return None,
        Some(Some(checks)) => {
            let mut deserializer = serde_json::Deserializer::from_str(text);
            let arguments: T::Arguments =
                crate::arguments::read_checked(&mut deserializer, checks, limits.into()).ok()?;
            deserializer.end().ok()?;
            arguments
        }
    };
    Some(running(tool, arguments, context))
}

/// `Tool::__invoke_value` of a `#[tool]` with typed routes: as
/// [`invoke_text`], from an arguments object read as the checked route
/// would decode it (`arguments::read`: within the limits, integral floats,
/// negative zero included, as integers).
fn invoke_value<'a, T: TypedTool>(
    tool: &'a T,
    arguments: &Value,
    route: &PlainArguments,
    limits: &Limits,
    context: &dyn Fn() -> ToolContext,
) -> Option<BoxFuture<'a, ToolResult<ToolOutput>>> {
    let checks = match &route.checks {
        None => None,
        Some(checks) => Some(checks.get::<FieldChecks>()?),
    };
    let arguments = crate::arguments::read::<T::Arguments>(arguments, limits.into(), checks)?;
    Some(running(tool, arguments, context))
}

/// The running call of arguments the tool's own types read; the call's
/// context is made only for a body that reads it (an empty one costs
/// nothing, and the body ignores it).
fn running<'a, T: TypedTool>(
    tool: &'a T,
    arguments: T::Arguments,
    context: &dyn Fn() -> ToolContext,
) -> BoxFuture<'a, ToolResult<ToolOutput>> {
    let context = if T::READS_CONTEXT {
        context()
    } else {
        ToolContext::new("")
    };
    Box::pin(tool.run(arguments, context))
}

/// The body of a `#[tool]` on an `async fn`: the function's future, its
/// value turned into the tool's output by `finish`. A combinator, where
/// an `async` body would be lowered, borrow-checked and made a state
/// machine of its own in every tool.
pub fn finish_async<F: Future, O>(
    future: F,
    finish: impl FnOnce(F::Output) -> O,
) -> impl Future<Output = O> {
    futures::FutureExt::map(future, finish)
}

/// The body of a `#[tool]` on an `async fn` with a default: the call, and
/// with it the defaults' code, is made when the future is first polled, as
/// an `async` body would make it, and never before the call holds its
/// place in the runtime.
pub fn finish_deferred<F: Future, O>(
    call: impl FnOnce() -> F,
    finish: impl FnOnce(F::Output) -> O,
) -> impl Future<Output = O> {
    use futures::FutureExt;
    futures::future::lazy(move |_| call()).flatten().map(finish)
}

/// The body of a `#[tool]` on a plain `fn`: `call` runs when the future is
/// first polled, as an `async` body would.
pub fn finish_sync<O>(call: impl FnOnce() -> O) -> impl Future<Output = O> {
    futures::future::lazy(move |_| call())
}

//! The traits that connect typed Rust code to tools: what a tool function
//! may return, what `#[ctx]` may inject, and typed external tool arguments.

use std::any::Any;
use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::context::ToolContext;
use crate::limits::Limits;
use crate::runtime::ToolCall;
use crate::tool::{ExternalTool, ToolError, ToolOutput, ToolResult, ToolSpec};
use crate::validation::ArgumentValidator;

/// A value a tool function can return as it is, without going through
/// `Serialize`: text, a [`ToolOutput`], `()` or a JSON [`Value`].
///
/// `#[tool]` functions may also return any `T: Serialize` (structured
/// output, with an output schema when `T: JsonSchema`) and `Result<T, E>`
/// of these, where `E` is [`ToolError`] or implements `Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this type cannot become tool output",
    note = "return `String`, `&'static str`, `ToolOutput`, `()`, a type that implements `serde::Serialize`, or `Result<T, E>` of those with `E: Display`"
)]
pub trait IntoToolOutput {
    /// Converts the value into the tool's output.
    fn into_tool_output(self) -> ToolResult<ToolOutput>;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(self)
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for Cow<'static, str> {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::empty())
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::json(self))
    }
}

/// A value a `#[ctx]` parameter can receive, taken from the call's
/// [`ToolContext`].
///
/// Implemented for [`ToolContext`] itself, the call's
/// [`CancellationToken`](crate::CancellationToken), [`State<T>`] (shared
/// state added with [`ToolRuntimeBuilder::state`](crate::ToolRuntimeBuilder::state))
/// and `Option<State<T>>`. A missing state is an error result, not a panic.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be injected with `#[ctx]`",
    label = "not injectable",
    note = "`#[ctx]` parameters can be `ToolContext`, `CancellationToken`, `State<T>` or `Option<State<T>>`; use `State<{Self}>` for shared state"
)]
pub trait FromToolContext: Sized {
    /// Takes the value from the context.
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self>;
}

impl FromToolContext for ToolContext {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        Ok(context.clone())
    }
}

impl FromToolContext for crate::CancellationToken {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        Ok(context.cancellation().clone())
    }
}

/// Shared state of type `T`, injected into a `#[ctx]` parameter.
///
/// ```
/// use behest::State;
///
/// struct Db { url: String }
///
/// fn url(db: State<Db>) -> String {
///     db.url.clone() // `State<T>` derefs to `T`
/// }
/// ```
pub struct State<T>(pub Arc<T>);

impl<T> Clone for State<T> {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl<T> Deref for State<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: fmt::Debug> fmt::Debug for State<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("State").field(&self.0).finish()
    }
}

impl<T: Any + Send + Sync> FromToolContext for State<T> {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        context.require_state_arc::<T>().map(State)
    }
}

impl<T: Any + Send + Sync> FromToolContext for Option<State<T>> {
    fn from_tool_context(context: &ToolContext) -> ToolResult<Self> {
        Ok(context.state_arc::<T>().map(State))
    }
}

/// The typed arguments of a tool that runs elsewhere, made by
/// `#[external_tool]` on a struct.
pub trait ExternalToolArgs: DeserializeOwned + Sized {
    /// The tool's spec, built once.
    fn spec() -> &'static ToolSpec;

    /// The validator of the tool's arguments, compiled once.
    fn validator() -> &'static ArgumentValidator;

    /// Whether each call needs an approval before a handler answers it.
    fn needs_approval() -> bool {
        false
    }

    /// Reads every field, so that fields only a handler reads do not warn
    /// `dead_code`. Generated; never called.
    #[doc(hidden)]
    fn __read_fields(&self) {}

    /// Whether the tool asks providers for strict schema adherence.
    fn strict() -> bool {
        false
    }

    /// Where the struct and its spec file disagree beyond what the macro
    /// checked when the crate was built; registration refuses the tool
    /// with this message. Generated for `schema = ".."`.
    #[doc(hidden)]
    fn __spec_conflict() -> Option<String> {
        None
    }

    /// The tool, to register so that the model can call it.
    fn external_tool() -> ExternalTool {
        let tool = ExternalTool::from_spec(Self::spec().clone())
            .with_strict(Self::strict())
            .__with_spec_conflict(Self::__spec_conflict());
        if Self::needs_approval() {
            tool.with_approval()
        } else {
            tool
        }
    }

    /// Parses a call's arguments, with the argument errors the runtime
    /// gives: decoding, validation against the schema, then the typed
    /// parse. Inside a run's handler (`invocation.on(..)`) it checks with
    /// the run's runtime's [`Limits`], elsewhere with the defaults; see
    /// [`from_arguments_with`](Self::from_arguments_with).
    fn from_arguments(arguments: Value) -> ToolResult<Self> {
        Self::from_arguments_with(arguments, &crate::limits::current())
    }

    /// [`from_arguments`](Self::from_arguments) under a runtime's limits
    /// (`runtime.limits()`).
    fn from_arguments_with(arguments: Value, limits: &Limits) -> ToolResult<Self> {
        crate::arguments::parse_validated_with(arguments, Self::validator(), limits)
    }

    /// Parses the arguments of `call`, after checking that it calls this
    /// tool: with the run's runtime's limits inside a run's handler, the
    /// defaults elsewhere.
    fn from_call(call: &ToolCall) -> ToolResult<Self> {
        Self::from_call_with(call, &crate::limits::current())
    }

    /// [`from_call`](Self::from_call) under given limits: a runtime's
    /// (`runtime.limits()`), or a run's (`control.limits()`) where a stream
    /// of events is answered outside a handler.
    fn from_call_with(call: &ToolCall, limits: &Limits) -> ToolResult<Self> {
        let spec = Self::spec();
        if call.tool_name != spec.name {
            return Err(ToolError::NotFound {
                name: call.tool_name.clone(),
                suggestions: vec![spec.name.clone()],
                available: Vec::new(),
            });
        }
        Self::from_arguments_with(call.arguments.clone(), limits)
    }
}

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{Tool, ToolCall, ToolError, ToolOutput, ToolResult, ToolSpec};
use crate::limits::Limits;

/// A tool that runs outside this process: the model can call it, and the
/// call is answered by a handler of the run (or fails with
/// [`ToolError::NotImplemented`] when nobody answers).
#[derive(Debug, Clone)]
pub struct ExternalTool {
    spec: ToolSpec,
    needs_approval: bool,
    strict: bool,
    /// See [`Tool::__spec_conflict`].
    spec_conflict: Option<String>,
}

impl ExternalTool {
    /// An external tool with this name, description and input schema.
    pub fn new(name: impl Into<String>, description: impl Into<String>, parameters: Value) -> Self {
        Self::from_spec(ToolSpec::new(name, description, parameters))
    }

    /// An external tool from a full spec.
    pub fn from_spec(spec: ToolSpec) -> Self {
        Self {
            spec,
            needs_approval: false,
            strict: false,
            spec_conflict: None,
        }
    }

    /// Asks for an approval before each call, inside a run.
    #[must_use]
    pub fn with_approval(mut self) -> Self {
        self.needs_approval = true;
        self
    }

    /// Asks providers for strict schema adherence (OpenAI `strict: true`)
    /// when `strict` is true.
    #[must_use]
    pub fn with_strict(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Records where the tool's spec file and its arguments type disagree
    /// (see [`Tool::__spec_conflict`]). For `#[external_tool]`.
    #[doc(hidden)]
    #[must_use]
    pub fn __with_spec_conflict(mut self, conflict: Option<String>) -> Self {
        self.spec_conflict = conflict;
        self
    }

    /// The tool's spec.
    pub fn spec_ref(&self) -> &ToolSpec {
        &self.spec
    }
}

impl Tool for ExternalTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn execute(&self, _arguments: Value) -> ToolResult<ToolOutput> {
        Err(ToolError::NotImplemented)
    }

    fn is_external(&self) -> bool {
        true
    }

    fn needs_approval(&self) -> bool {
        self.needs_approval
    }

    fn strict(&self) -> bool {
        self.strict
    }

    fn __spec_conflict(&self) -> Option<String> {
        self.spec_conflict.clone()
    }
}

/// The typed arguments of a tool that runs elsewhere, made by
/// `#[external_tool]` on a struct.
pub trait ExternalToolArgs: DeserializeOwned + Sized {
    /// The tool's spec, built once.
    fn spec() -> &'static ToolSpec;

    /// Decodes, validates and parses `arguments` under `limits`: the
    /// runtime's argument pipeline with the validator of
    /// [`spec`](Self::spec), compiled once. Generated.
    #[doc(hidden)]
    fn __parse(arguments: Value, limits: &Limits) -> ToolResult<Self>;

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
        Self::__parse(arguments, limits)
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

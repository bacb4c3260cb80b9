use serde_json::Value;

use super::{Tool, ToolError, ToolOutput, ToolResult, ToolSpec};

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

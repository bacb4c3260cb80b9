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
}

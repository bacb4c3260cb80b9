use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use super::{MediaSource, ToolResult};

/// What a tool returns: text, structured JSON, or both.
///
/// Providers that take only text receive [`ToolOutput::to_text`]: the text
/// when there is some, otherwise the JSON serialized.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ToolOutput {
    /// Text for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Structured output, matching the tool's output schema if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Images for the model to see, where its provider takes them in a
    /// tool's result (Anthropic, Responses, Gemini 3, MCP); Chat gets the
    /// text only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<MediaSource>,
}

impl ToolOutput {
    /// Text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Structured JSON output.
    pub fn json(value: impl Into<Value>) -> Self {
        Self {
            structured: Some(value.into()),
            ..Self::default()
        }
    }

    /// An output with nothing in it, for tools that only act.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Adds text next to structured output.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Adds an image for the model to see.
    #[must_use]
    pub fn with_image(mut self, image: MediaSource) -> Self {
        self.images.push(image);
        self
    }

    /// Adds structured output next to text.
    #[must_use]
    pub fn with_json(mut self, value: impl Into<Value>) -> Self {
        self.structured = Some(value.into());
        self
    }

    /// The output as one text: the text if set, else the JSON, else `""`.
    pub fn to_text(&self) -> String {
        match (&self.text, &self.structured) {
            (Some(text), _) => text.clone(),
            (None, Some(value)) => value.to_string(),
            (None, None) => String::new(),
        }
    }

    /// Approximate encoded size in bytes, used for the output limit.
    pub(crate) fn encoded_len(&self) -> usize {
        self.text.as_ref().map_or(0, String::len)
            + self
                .structured
                .as_ref()
                .map_or(0, crate::json_text::encoded_len_estimate)
            + self
                .images
                .iter()
                .map(MediaSource::encoded_len)
                .sum::<usize>()
    }
}

/// A value a tool function can return as it is, without going through
/// `Serialize`: text, a [`ToolOutput`], `()` or a JSON [`Value`].
///
/// `#[tool]` functions may also return any `T: Serialize` (structured
/// output, with an output schema when `T: JsonSchema`) and `Result<T, E>`
/// of these, where `E` is [`ToolError`](super::ToolError) or implements `Display`.
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

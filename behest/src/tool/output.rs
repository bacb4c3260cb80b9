use serde::Serialize;
use serde_json::Value;

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
}

impl ToolOutput {
    /// Text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            structured: None,
        }
    }

    /// Structured JSON output.
    pub fn json(value: impl Into<Value>) -> Self {
        Self {
            text: None,
            structured: Some(value.into()),
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
    }
}

//! A model's call of a tool and its outcome.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ToolError, ToolOutput};

/// A call of a tool by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for this call; the result carries it back.
    pub call_id: String,
    /// The name of the tool called.
    pub tool_name: String,
    /// The arguments: a JSON object, or the JSON text of one as providers
    /// send it (a `Value::String`, decoded by the runtime).
    pub arguments: Value,
}

impl ToolCall {
    /// A call of `tool_name` with `arguments`. A `&str` or `String` is taken
    /// as JSON text to decode, as OpenAI sends arguments.
    pub fn new(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        arguments: impl Into<Value>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            arguments: arguments.into(),
        }
    }
}

/// The outcome of one [`ToolCall`], under the call's id. Serialized as
/// what the model reads of it: `{call_id, tool_name, output}` or
/// `{call_id, tool_name, error}` (the error's message).
#[derive(Debug, Clone)]
pub struct ToolCallResult {
    /// The id of the call this answers.
    pub call_id: String,
    /// The name of the tool that was called.
    pub tool_name: String,
    /// The output, or why there is none.
    pub outcome: Result<ToolOutput, ToolError>,
}

impl Serialize for ToolCallResult {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let fields = if self.outcome.is_ok() { 3 } else { 4 };
        let mut result = serializer.serialize_struct("ToolCallResult", fields)?;
        result.serialize_field("call_id", &self.call_id)?;
        result.serialize_field("tool_name", &self.tool_name)?;
        match &self.outcome {
            Ok(output) => result.serialize_field("output", output)?,
            Err(error) => {
                result.serialize_field("error", &error.to_string())?;
                // What kind of failure, for a reader that tells them apart
                // (a validation error, a denied approval, a timeout).
                result.serialize_field("error_kind", error.kind())?;
            }
        }
        result.end()
    }
}

impl ToolCallResult {
    /// Whether the call failed.
    pub fn is_error(&self) -> bool {
        self.outcome.is_err()
    }

    /// What the model reads: the output as text, or the error's message.
    pub fn to_model_text(&self) -> String {
        match &self.outcome {
            Ok(output) => output.to_model_text(),
            Err(error) => error.to_string(),
        }
    }
}

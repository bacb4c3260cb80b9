//! The messages of a conversation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{ContentPart, MediaSource, Reasoning, StopReason, Usage};
use crate::tool::{ToolCall, ToolCallResult};

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions for the model.
    System {
        /// The instructions.
        text: String,
    },
    /// What the user said.
    User {
        /// The user's text.
        text: String,
    },
    /// What the user said with images or documents beside the text, in
    /// order.
    UserParts {
        /// The parts.
        parts: Vec<ContentPart>,
    },
    /// What the model answered: text, tool calls, or both.
    Assistant(AssistantMessage),
    /// The result of one tool call, sent back to the model.
    ToolResult(ToolResultMessage),
}

impl Message {
    /// A system message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::System { text: text.into() }
    }

    /// A user message.
    pub fn user(text: impl Into<String>) -> Self {
        Self::User { text: text.into() }
    }

    /// A user message of parts: text, images, documents.
    ///
    /// ```
    /// use behest::conversation::ContentPart;
    /// use behest::Message;
    ///
    /// let question = Message::user_parts([
    ///     ContentPart::text("What is on this receipt?"),
    ///     ContentPart::image_url("https://example.com/receipt.png"),
    /// ]);
    /// ```
    pub fn user_parts(parts: impl IntoIterator<Item = ContentPart>) -> Self {
        Self::UserParts {
            parts: parts.into_iter().collect(),
        }
    }
}

/// The model's turn: text and/or tool calls, in the order it made them,
/// and the reasoning state its provider wants back with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct AssistantMessage {
    /// Text for the user, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Tool calls, with the provider's call ids.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// The provider's reasoning state for this turn, as it came: thinking
    /// blocks, reasoning items, thought signatures, `reasoning_content`.
    /// Some providers refuse the next turn when it is missing or changed
    /// (Anthropic with thinking and tools, Gemini 3 with function calls).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasoning: Vec<Reasoning>,
    /// The tokens the turn used, when the provider counted them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Why the model ended the turn, when the provider said. A run does not
    /// take a turn that was cut, filtered or refused as its answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<StopReason>,
    /// Which model gave the turn, where a [`FallbackModel`](crate::model::FallbackModel)
    /// chose among several: the name it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

impl AssistantMessage {
    /// A final answer.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Tool calls without text.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self {
            tool_calls: calls.into_iter().collect(),
            ..Self::default()
        }
    }

    /// With these tool calls after the text.
    #[must_use]
    pub fn with_tool_calls(mut self, calls: impl IntoIterator<Item = ToolCall>) -> Self {
        self.tool_calls.extend(calls);
        self
    }

    /// With a piece of the provider's reasoning state.
    #[must_use]
    pub fn with_reasoning(mut self, reasoning: Reasoning) -> Self {
        self.reasoning.push(reasoning);
        self
    }

    /// With the tokens the turn used.
    #[must_use]
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// With why the model ended the turn.
    #[must_use]
    pub fn with_stop(mut self, stop: StopReason) -> Self {
        self.stop = Some(stop);
        self
    }
}

/// A tool call's result as the model reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolResultMessage {
    /// The id of the call this answers.
    pub call_id: String,
    /// The tool that was called.
    pub tool_name: String,
    /// The output as text, or the error's message.
    pub content: String,
    /// Structured output, when the tool returned some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Whether the call failed.
    #[serde(default)]
    pub is_error: bool,
    /// Images the tool returned, where the provider takes them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<MediaSource>,
    /// Documents (PDFs) the tool returned, where the provider takes them
    /// in a tool's result (Anthropic, Responses, Gemini 3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub documents: Vec<MediaSource>,
    /// The tokens the call spent on models of its own (an agent run as a
    /// tool): part of the run's usage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

impl ToolResultMessage {
    /// The result of call `call_id` of `tool_name`, as text.
    pub fn new(
        call_id: impl Into<String>,
        tool_name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Self {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            content: content.into(),
            structured: None,
            is_error: false,
            images: Vec::new(),
            documents: Vec::new(),
            usage: None,
        }
    }

    /// Marked as a failed call's.
    #[must_use]
    pub fn with_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// With structured output.
    #[must_use]
    pub fn with_structured(mut self, structured: Value) -> Self {
        self.structured = Some(structured);
        self
    }

    /// With an image the tool returned.
    #[must_use]
    pub fn with_image(mut self, image: MediaSource) -> Self {
        self.images.push(image);
        self
    }

    /// With a document (a PDF) the tool returned.
    #[must_use]
    pub fn with_document(mut self, document: MediaSource) -> Self {
        self.documents.push(document);
        self
    }
}

impl From<&ToolCallResult> for ToolResultMessage {
    fn from(result: &ToolCallResult) -> Self {
        Self {
            call_id: result.call_id.clone(),
            tool_name: result.tool_name.clone(),
            content: result.to_model_text(),
            structured: result
                .outcome
                .as_ref()
                .ok()
                .and_then(|output| output.structured.clone()),
            is_error: result.is_error(),
            images: result
                .outcome
                .as_ref()
                .map(|output| output.images.clone())
                .unwrap_or_default(),
            documents: result
                .outcome
                .as_ref()
                .map(|output| output.documents().collect())
                .unwrap_or_default(),
            usage: result.outcome.as_ref().ok().and_then(|output| output.usage),
        }
    }
}

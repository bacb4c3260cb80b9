//! A provider-neutral conversation: what providers' message lists map to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::providers::Provider;
use crate::runtime::{ToolCall, ToolCallResult};

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
}

/// The model's turn: text and/or tool calls, in the order it made them,
/// and the reasoning state its provider wants back with it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
}

/// The tokens one turn used, as the provider counted them; 0 where it
/// did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read: the conversation and the tool declarations.
    pub input_tokens: u64,
    /// Tokens written, reasoning included.
    pub output_tokens: u64,
    /// Input tokens served from the provider's cache (part of
    /// `input_tokens` for OpenAI and Gemini, apart from it for Anthropic).
    pub cached_tokens: u64,
    /// Output tokens spent on reasoning (part of `output_tokens`).
    pub reasoning_tokens: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        Usage {
            input_tokens: self.input_tokens + other.input_tokens,
            output_tokens: self.output_tokens + other.output_tokens,
            cached_tokens: self.cached_tokens + other.cached_tokens,
            reasoning_tokens: self.reasoning_tokens + other.reasoning_tokens,
        }
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), std::ops::Add::add)
    }
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
}

/// One piece of a provider's reasoning state, opaque to behest: it goes
/// back unchanged, and only to the wire format it came in (mapping a
/// conversation to another format drops it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The wire format it came in.
    pub provider: Provider,
    /// Where in the turn it goes back.
    pub place: ReasoningPlace,
    /// The provider's JSON as it came: the whole entry for
    /// [`ReasoningPlace::Entry`], otherwise the fields that go on the part
    /// the place names.
    pub data: Value,
}

/// Where a piece of reasoning goes back in its turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReasoningPlace {
    /// An entry of its own: an Anthropic thinking block, a Responses
    /// reasoning item, a Gemini thought part. It goes after the turn's
    /// first `after_calls` tool calls, and before the text when that is 0.
    Entry {
        /// How many of the turn's tool calls came before it.
        after_calls: usize,
    },
    /// Fields of the turn: `reasoning_content` on a Chat message, a
    /// `thoughtSignature` on Gemini's text part.
    Turn,
    /// Fields of the part that carries one call: a `thoughtSignature` on
    /// Gemini's `functionCall` part, the item id that pairs a Responses
    /// `function_call` with the reasoning before it.
    Call {
        /// The id of that call.
        call_id: String,
    },
}

/// A tool call's result as the model reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
        }
    }
}

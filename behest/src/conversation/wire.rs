//! The names of the wire formats.

use serde::{Deserialize, Serialize};

/// The wire formats behest speaks: the name of a format, which conversation
/// pieces (reasoning) belong to and which tool-name rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WireFormat {
    /// OpenAI Chat Completions.
    #[serde(rename = "openai_chat")]
    OpenAiChat,
    /// OpenAI Responses.
    #[serde(rename = "openai_responses")]
    OpenAiResponses,
    /// Anthropic Messages.
    Anthropic,
    /// Google Gemini.
    Gemini,
    /// AWS Bedrock's Converse API.
    Bedrock,
    /// Model Context Protocol, 2025-11-25.
    Mcp,
}

impl WireFormat {
    /// Every format.
    pub const ALL: [WireFormat; 6] = [
        WireFormat::OpenAiChat,
        WireFormat::OpenAiResponses,
        WireFormat::Anthropic,
        WireFormat::Gemini,
        WireFormat::Bedrock,
        WireFormat::Mcp,
    ];
}

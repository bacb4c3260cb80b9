//! Why a model ended its turn.

use serde::{Deserialize, Serialize};

/// Why the model ended its turn, as its provider said, in one vocabulary
/// for every provider, with the provider's own value beside it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct StopReason {
    /// What the reason means.
    pub kind: StopKind,
    /// The provider's value: Anthropic's `stop_reason`, Chat's
    /// `finish_reason`, Gemini's `finishReason`, or Responses' `status`
    /// with its `incomplete_details.reason` (`incomplete:
    /// max_output_tokens`).
    pub raw: String,
}

/// What a [`StopReason`] means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopKind {
    /// The turn is whole: an answer, or tool calls.
    Completed,
    /// Cut at the output token cap: the answer is not whole.
    MaxTokens,
    /// The context window is full.
    ContextWindow,
    /// Withheld or cut by the provider's content filters (safety,
    /// recitation, blocklists).
    Filtered,
    /// The model declined to answer.
    Refused,
    /// The provider paused a long turn and asks to be called again with it
    /// as it is (Anthropic's `pause_turn`).
    Paused,
    /// The model wrote a tool call the provider could not read (Gemini's
    /// `MALFORMED_FUNCTION_CALL`).
    MalformedCall,
    /// A reason behest does not know; see [`StopReason::raw`]. A run takes
    /// such a turn as its answer.
    Other,
}

impl StopReason {
    /// A reason of `kind`, with the provider's value `raw`.
    pub fn new(kind: StopKind, raw: impl Into<String>) -> Self {
        Self {
            kind,
            raw: raw.into(),
        }
    }
}

impl StopReason {
    /// OpenAI's refusal (`message.refusal`, a `refusal` part): no
    /// `finish_reason` says it, the refusal itself does.
    pub(crate) fn openai_refusal() -> Self {
        Self::new(StopKind::Refused, "refusal")
    }
}

impl StopKind {
    /// Whether a turn that ended so is whole.
    pub fn is_complete(self) -> bool {
        matches!(self, StopKind::Completed)
    }
}

impl std::fmt::Display for StopReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            StopKind::Completed => "the turn ended",
            StopKind::MaxTokens => "the answer was cut at the output token cap",
            StopKind::ContextWindow => "the context window is full",
            StopKind::Filtered => "the provider's content filter withheld the answer",
            StopKind::Refused => "the model declined to answer",
            StopKind::Paused => "the provider paused the turn",
            StopKind::MalformedCall => "the model wrote a tool call the provider could not read",
            StopKind::Other => "the turn ended for a reason behest does not know",
        };
        write!(f, "{what} (`{}`)", self.raw)
    }
}

//! What crosses Restate: a run's input and outcome, answers, approvals, its
//! status, and the journal's form of a tool call's result.

use behest::{Message, RunOutcome, ToolCall, ToolError, ToolOutput, ToolResult};
use serde::{Deserialize, Serialize};

/// How a durable run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DurableOutcome {
    /// The model gave its final answer.
    Completed {
        /// The answer's text.
        text: String,
        /// The whole conversation.
        transcript: Vec<Message>,
    },
    /// The run stopped on an error.
    Failed {
        /// Why, as behest's `RunError` says it.
        error: String,
        /// The conversation up to the failure.
        transcript: Vec<Message>,
    },
    /// The run was cancelled (through Restate); every call in the
    /// transcript has its result.
    Cancelled {
        /// The conversation up to the cancellation.
        transcript: Vec<Message>,
    },
}

impl DurableOutcome {
    /// The final answer, if the run completed.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Completed { text, .. } => Some(text),
            _ => None,
        }
    }

    /// The conversation as it stood at the end.
    pub fn transcript(&self) -> &[Message] {
        match self {
            Self::Completed { transcript, .. }
            | Self::Failed { transcript, .. }
            | Self::Cancelled { transcript } => transcript,
        }
    }
}

impl From<RunOutcome> for DurableOutcome {
    fn from(outcome: RunOutcome) -> Self {
        match outcome {
            RunOutcome::Completed { text, transcript } => Self::Completed { text, transcript },
            RunOutcome::Failed { error, transcript } => Self::Failed {
                error: error.to_string(),
                transcript,
            },
            RunOutcome::Cancelled { transcript } => Self::Cancelled { transcript },
        }
    }
}

/// An answer to an external call of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The call answered.
    pub call_id: String,
    /// Its output, as the tool would have returned it.
    pub output: ToolOutput,
}

/// A decision on a call that needs an approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// The call decided on.
    pub call_id: String,
    /// Whether it may run.
    pub approved: bool,
    /// Why not, for the model, when denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Where a durable run stands, readable at any time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// `running`, `waiting` (for an answer or an approval), or how it
    /// ended: `completed`, `failed`, `cancelled`.
    pub state: String,
    /// The calls waiting for an answer or an approval, with their
    /// arguments.
    pub pending: Vec<Pending>,
    /// How many model turns and tool calls have completed.
    pub steps: usize,
    /// The run's events so far (`{"kind": ..}`, the kinds an in-process run
    /// emits, serialized; streamed deltas and progress left out), for a UI
    /// following a run it did not start.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<serde_json::Value>,
    /// The conversation so far: the run's input, then each model turn and
    /// tool result as it came; once the run has ended, its whole
    /// transcript.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<Message>,
}

/// A call waiting for someone outside the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The call, with its arguments.
    pub call: ToolCall,
    /// `answer` (an external tool) or `approval`.
    pub waits_for: String,
}

/// A tool call's outcome as the journal keeps it: what the model reads
/// (an error is kept as its message).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct JournaledResult {
    outcome: Result<ToolOutput, String>,
}

impl From<ToolResult<ToolOutput>> for JournaledResult {
    fn from(outcome: ToolResult<ToolOutput>) -> Self {
        Self {
            outcome: outcome.map_err(|error| error.to_string()),
        }
    }
}

impl From<JournaledResult> for ToolResult<ToolOutput> {
    fn from(result: JournaledResult) -> Self {
        result.outcome.map_err(ToolError::execution)
    }
}

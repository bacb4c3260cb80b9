//! What crosses Restate: a run's input and outcome, answers, approvals, its
//! status, and the journal's form of a tool call's result.

use behest::{Message, RunOutcome, ToolCall, ToolError, ToolOutput, ToolResult, Usage};
use serde::{Deserialize, Serialize};

/// How a durable run ended. The `run` handler returns it without its
/// transcript, which the run's journal holds;
/// [`DurableClient::outcome`](crate::DurableClient::outcome) reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DurableOutcome {
    /// The model gave its final answer.
    Completed {
        /// The answer's text.
        text: String,
        /// The whole conversation.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        transcript: Vec<Message>,
        /// The tokens the run used, as its limits counted them.
        #[serde(default)]
        usage: Usage,
    },
    /// The run stopped on an error.
    Failed {
        /// Why, as behest's `RunError` says it.
        error: String,
        /// The conversation up to the failure.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        transcript: Vec<Message>,
        /// The tokens the run used, as its limits counted them.
        #[serde(default)]
        usage: Usage,
    },
    /// The run was cancelled (through Restate); every call in the
    /// transcript has its result.
    Cancelled {
        /// The conversation up to the cancellation.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        transcript: Vec<Message>,
        /// The tokens the run used, as its limits counted them.
        #[serde(default)]
        usage: Usage,
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

    /// The tokens the run used, as its limits counted them.
    pub fn usage(&self) -> Usage {
        match self {
            Self::Completed { usage, .. }
            | Self::Failed { usage, .. }
            | Self::Cancelled { usage, .. } => *usage,
        }
    }

    /// The conversation as it stood at the end.
    pub fn transcript(&self) -> &[Message] {
        match self {
            Self::Completed { transcript, .. }
            | Self::Failed { transcript, .. }
            | Self::Cancelled { transcript, .. } => transcript,
        }
    }
}

impl DurableOutcome {
    /// The same outcome with `transcript` as its transcript.
    pub(crate) fn with_transcript(mut self, given: Vec<Message>) -> Self {
        match &mut self {
            Self::Completed { transcript, .. }
            | Self::Failed { transcript, .. }
            | Self::Cancelled { transcript, .. } => *transcript = given,
        }
        self
    }
}

impl From<RunOutcome> for DurableOutcome {
    fn from(outcome: RunOutcome) -> Self {
        let usage = outcome.usage();
        match outcome {
            RunOutcome::Completed {
                text, transcript, ..
            } => Self::Completed {
                text,
                transcript,
                usage,
            },
            RunOutcome::Failed {
                error, transcript, ..
            } => Self::Failed {
                error: error.to_string(),
                transcript,
                usage,
            },
            RunOutcome::Cancelled { transcript, .. } => Self::Cancelled { transcript, usage },
            // A durable run waits in its journal: it never stops at a wait.
            other => Self::Failed {
                error: format!("the run ended as {:?}", other.state()),
                transcript: other.transcript().to_vec(),
                usage,
            },
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

/// The bytes of `value` as JSON, as a journal entry holds it.
pub(crate) fn json_size<T: Serialize + ?Sized>(value: &T) -> usize {
    serde_json::to_vec(value).map_or(usize::MAX, |bytes| bytes.len())
}

/// Why something of `size` bytes is not kept by a step that keeps
/// `limit`.
pub(crate) fn over_the_step_limit(what: &str, size: usize, limit: usize) -> String {
    format!("{what} is {size} bytes, more than a durable step keeps ({limit} bytes)")
}

/// What a person decides about a call whose outcome is unknown: a call
/// of a tool not marked idempotent that was running when its service died,
/// so that it may or may not have done its work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolution {
    /// It did its work: the model reads this output.
    Ran(ToolOutput),
    /// It did not, or it failed: the model reads this error.
    Failed(String),
    /// Run it again (with the same idempotency key).
    RunAgain,
}

/// A decision on a call whose outcome is unknown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolve {
    /// The call decided on.
    pub call_id: String,
    /// What is known of it.
    pub resolution: Resolution,
}

/// Where a durable run stands, readable at any time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// `running`, `waiting` (for an answer, an approval or a decision on
    /// an unknown outcome), or how it ended: `completed`, `failed`,
    /// `cancelled`; read through the admin API
    /// ([`DurableClient::status`](crate::DurableClient::status)) also
    /// `paused` (Restate stopped retrying it: resume it), `killed` (its
    /// invocation was killed) or `failed` (its invocation failed before
    /// the run could say how it ended).
    pub state: String,
    /// The calls waiting for an answer, an approval or a decision, with
    /// their validated arguments.
    pub pending: Vec<Pending>,
    /// How many model turns and tool calls have completed.
    pub steps: usize,
    /// The run's events so far that the rest of the status does not tell
    /// (`{"at": 3, "kind": ..}`, a kind an in-process run emits,
    /// serialized, `at` the transcript's length when it came): guardrail
    /// verdicts that rewrote, refused or stopped, approvals asked,
    /// external calls, handoffs, compactions, and the events of agents the
    /// run called as tools (with `"agent"`, their path: their replies and
    /// results too, which are not the root's transcript). Not kept: phases
    /// (the state tells them), the root's replies, other calls and results
    /// (the transcript holds them), verdicts that let a step pass as it
    /// was, the final answer (the outcome), streamed deltas and progress.
    /// While the run works, the events, the transcript and the step count
    /// are those of its last page: fewer than 8 steps behind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<serde_json::Value>,
    /// The conversation so far, as the run holds it (instructions first,
    /// the input as its guardrails passed it, then each model turn and
    /// tool result); once the run has ended, its whole transcript, a
    /// guardrail's rewrite of the answer included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transcript: Vec<Message>,
}

/// A call waiting for someone outside the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    /// The call, with its arguments.
    pub call: ToolCall,
    /// `answer` (an external tool), `approval`, or `outcome` (a call cut
    /// by a crash, waiting for a [`Resolve`]).
    pub waits_for: String,
}

/// A tool call's outcome as the journal keeps it: what the model reads
/// (an error is kept as its message), or, for a call that an earlier
/// attempt started and never recorded, that nobody knows.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum JournaledResult {
    Output(ToolOutput),
    Error(String),
    Unknown,
}

impl From<ToolResult<ToolOutput>> for JournaledResult {
    fn from(outcome: ToolResult<ToolOutput>) -> Self {
        match outcome {
            Ok(output) => Self::Output(output),
            Err(error) => Self::Error(error.to_string()),
        }
    }
}

impl JournaledResult {
    /// The outcome the model reads; `None` for an unknown one.
    pub(crate) fn known(self) -> Option<ToolResult<ToolOutput>> {
        match self {
            Self::Output(output) => Some(Ok(output)),
            Self::Error(message) => Some(Err(ToolError::execution(message))),
            Self::Unknown => None,
        }
    }
}

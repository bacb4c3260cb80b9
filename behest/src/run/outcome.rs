//! How a run ended ([`RunOutcome`]) and why it failed ([`RunError`]).

use super::{
    GuardrailStage, Message, ModelError, RunPhase, RunState, RunUsage, StopReason, Usage,
    UsageLimit,
};

/// How a run ended, with what it spent.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The model gave its final answer.
    Completed {
        /// The final answer's text.
        text: String,
        /// The whole conversation, the answer included.
        transcript: Vec<Message>,
        /// What the run spent ([`usage`](Self::usage)).
        usage: RunUsage,
    },
    /// The run stopped on an error.
    Failed {
        /// Why.
        error: RunError,
        /// The conversation up to the failure.
        transcript: Vec<Message>,
        /// What the run spent ([`usage`](Self::usage)).
        usage: RunUsage,
    },
    /// The run was cancelled.
    Cancelled {
        /// The conversation up to the cancellation.
        transcript: Vec<Message>,
        /// What the run spent ([`usage`](Self::usage)).
        usage: RunUsage,
    },
    /// The run stopped at its waits
    /// ([`RuntimeInvocation::pause_at_waits`](super::RuntimeInvocation::pause_at_waits)):
    /// answer them in its state and go on with
    /// [`Agent::resume`](super::Agent::resume).
    Paused {
        /// Everything the run needs to go on: its transcript, what it
        /// spent, the calls it waits for.
        state: Box<RunState>,
    },
}

impl RunOutcome {
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
            | Self::Cancelled { transcript, .. } => transcript,
            Self::Paused { state } => state.transcript(),
        }
    }

    /// The tokens the run used: every model request it made, in every
    /// agent that held it and every agent it ran as a tool (failed ones
    /// too), a fallback's set-aside turns and the summaries of compacted
    /// turns included, whatever a filter or a compaction later dropped from
    /// the transcript. It is what the run's limits counted (turns the
    /// provider did not count add nothing).
    pub fn usage(&self) -> Usage {
        self.spent().tokens
    }

    /// Everything the run spent, as its [`UsageLimits`](super::UsageLimits)
    /// counted it: requests, tokens and tool calls.
    pub fn spent(&self) -> &RunUsage {
        match self {
            Self::Completed { usage, .. }
            | Self::Failed { usage, .. }
            | Self::Cancelled { usage, .. } => usage,
            Self::Paused { state } => state.spent(),
        }
    }

    /// The run's state, if it stopped at its waits.
    pub fn paused(&self) -> Option<&RunState> {
        match self {
            Self::Paused { state } => Some(state),
            _ => None,
        }
    }

    /// The run's state, taken, if it stopped at its waits.
    pub fn into_paused(self) -> Option<RunState> {
        match self {
            Self::Paused { state } => Some(*state),
            _ => None,
        }
    }

    /// A completed run, its spending not yet told.
    pub(crate) fn completed(text: String, transcript: Vec<Message>) -> Self {
        Self::Completed {
            text,
            transcript,
            usage: RunUsage::default(),
        }
    }

    /// A cancelled run, its spending not yet told.
    pub(crate) fn cancelled(transcript: Vec<Message>) -> Self {
        Self::Cancelled {
            transcript,
            usage: RunUsage::default(),
        }
    }

    /// A failed run, its spending not yet told.
    pub(crate) fn failed(error: RunError, transcript: Vec<Message>) -> Self {
        tracing::warn!(%error, "run failed");
        Self::Failed {
            error,
            transcript,
            usage: RunUsage::default(),
        }
    }

    /// A run stopped at its waits, its spending not yet told.
    pub(crate) fn stopped(state: RunState) -> Self {
        Self::Paused {
            state: Box::new(state),
        }
    }

    /// The outcome with `spent` as what the run spent: told once, by the
    /// run, from its books when it ends.
    pub(crate) fn with_spent(mut self, spent: RunUsage) -> Self {
        match &mut self {
            Self::Completed { usage, .. }
            | Self::Failed { usage, .. }
            | Self::Cancelled { usage, .. } => *usage = spent,
            Self::Paused { state } => state.spent = spent,
        }
        self
    }

    /// The final answer read as `T` (for a run asked for one with
    /// [`Agent::with_output`](crate::Agent::with_output), or whose text is JSON).
    pub fn output<T: serde::de::DeserializeOwned>(&self) -> Result<T, RunError> {
        let text = self.text().ok_or_else(|| RunError::Output {
            message: "the run did not complete".to_owned(),
        })?;
        serde_json::from_str(text).map_err(|error| RunError::Output {
            message: format!("the final answer is not of the type asked for: {error}"),
        })
    }

    /// The state the run ended in.
    pub fn state(&self) -> RunPhase {
        match self {
            Self::Completed { .. } => RunPhase::Completed,
            Self::Failed { .. } => RunPhase::Failed,
            Self::Cancelled { .. } => RunPhase::Cancelled,
            Self::Paused { .. } => RunPhase::Paused,
        }
    }
}

/// A count or a sum of money in a [`RunError::UsageLimit`]: a whole
/// number of requests, tokens, calls or seconds, or US dollars.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Amount(pub f64);

// Amounts are counts and sums of finite prices: never NaN.
impl Eq for Amount {}

impl std::fmt::Display for Amount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.fract() == 0.0 && self.0.abs() < 1e15 {
            write!(f, "{}", self.0 as i64)
        } else {
            write!(f, "{:.6}", self.0)
        }
    }
}

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The model gave no answer.
    #[error("the model failed: {0}")]
    Model(#[from] ModelError),
    /// The model kept calling tools past the limit, counted over the
    /// whole run (across handoffs).
    #[error("the model still called tools after {max_steps} rounds of tool calls")]
    MaxStepsExceeded {
        /// The limit.
        max_steps: usize,
    },
    /// The run asked its model more times than it may
    /// ([`Agent::max_turns`](super::Agent::max_turns)), counted over the
    /// whole run (across handoffs).
    #[error("the run reached its limit of {max_turns} model turns")]
    MaxTurnsExceeded {
        /// The limit.
        max_turns: usize,
    },
    /// A part of the run given by the agent's builder panicked: a
    /// guardrail, a handoff filter, a context policy, a preparation of the
    /// tools. (A tool or a handler that panics is the call's error, and
    /// the run goes on.)
    #[error("{part} panicked: {message}")]
    Panicked {
        /// Which part, by name: "the user's message guardrail `pii`", say.
        part: String,
        /// The panic's message.
        message: String,
    },
    /// A run's state could not be gone on from
    /// ([`Agent::resume`](super::Agent::resume)): of another format, or
    /// held by an agent the one resumed cannot hand the run to.
    #[error("the run cannot go on from its state: {message}")]
    Resume {
        /// Why.
        message: String,
    },
    /// The agent cannot run as it was built: two tools offered to the
    /// model under one name, for example.
    #[error("the agent cannot run: {message}")]
    Agent {
        /// What is wrong with it.
        message: String,
    },
    /// The model gave no final answer of the type asked for.
    #[error("{message}")]
    Output {
        /// What went wrong.
        message: String,
    },
    /// The model's last turn was not a whole answer: cut at the token cap,
    /// filtered, refused, or ended for a reason that leaves it incomplete.
    /// The turn is the transcript's last message.
    #[error("the model's answer is not whole: {reason}")]
    Incomplete {
        /// Why the model ended the turn.
        reason: StopReason,
    },
    /// The run reached one of its [`UsageLimits`](crate::run::UsageLimits): the model request or
    /// the tool calls that would pass it were not made.
    #[error("the run reached its limit of {allowed} {limit} (it would have used {used})")]
    UsageLimit {
        /// Which limit.
        limit: UsageLimit,
        /// What it allows.
        allowed: Amount,
        /// What the run used, or would have with the refused request or
        /// calls.
        used: Amount,
    },
    /// Compacting the conversation failed: a summary the model did not
    /// write, or a policy of your own that left a tool result without its
    /// call.
    #[error("the conversation could not be compacted: {message}")]
    Context {
        /// Why.
        message: String,
    },
    /// The run was handed from agent to agent more than `max` times.
    #[error("the run was handed from agent to agent more than {max} times")]
    Handoffs {
        /// The limit ([`MAX_HANDOFFS`](crate::run::MAX_HANDOFFS)).
        max: usize,
    },
    /// A guardrail stopped the run ([`Verdict::Stop`](crate::run::Verdict::Stop)).
    #[error("the guardrail `{guardrail}` stopped the run at the {stage}: {reason}")]
    Guardrail {
        /// The guardrail's name.
        guardrail: String,
        /// Where it checked.
        stage: GuardrailStage,
        /// Why it stopped the run.
        reason: String,
    },
    /// The model called an external tool and no handler was subscribed to
    /// answer it.
    #[error("the model called the external tool `{tool_name}` (call `{call_id}`), but no handler is subscribed to answer it")]
    NoHandler {
        /// The tool.
        tool_name: String,
        /// The call.
        call_id: String,
    },
}

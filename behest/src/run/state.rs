//! A run's state as a value: everything a run needs to go on, written
//! where it stops at a wait and read back wherever it goes on.
//!
//! A run asked to [`pause_at_waits`](super::RuntimeInvocation::pause_at_waits)
//! stops when a call needs an approval or an outside answer, once the
//! round's other calls have their results, and ends
//! [`Paused`](super::RunOutcome::Paused) with its [`RunState`]. The state is
//! plain data (serde): keep it anywhere, answer its [`waits`](RunState::waits)
//! (now or days later, in this process or another) and go on with
//! [`Agent::resume`](super::Agent::resume). A run that stopped and went on
//! gives the same transcript, usage, events and outcome as one that never
//! stopped.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::control::ControlError;
use super::limits::RunUsage;
use crate::conversation::{Message, ToolResultMessage};
use crate::tool::{ToolCall, ToolOutput};

/// Where a run stands between two steps: its transcript, what it spent,
/// its counts, the agent that holds it and the calls it waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunState {
    /// The format of this value ([`RunState::FORMAT`]): a state of another
    /// format is refused when the run goes on.
    pub(super) format: u32,
    /// The run's id, kept by the run that goes on.
    pub(super) run_id: String,
    /// How many events the run has told: the next is numbered after it.
    pub(super) sequence: u64,
    /// When the run started: its deadline runs from there.
    pub(super) started_at: SystemTime,
    /// The agent that holds the run: the names of the handoffs from the
    /// agent the run was started on, in order.
    pub(super) holder: Vec<String>,
    /// The conversation, up to the turn whose calls are waited for.
    pub(super) transcript: Vec<Message>,
    /// What the run spent, as its limits count it.
    pub(super) spent: RunUsage,
    /// The run's counts and the stages' own state.
    pub(super) progress: Progress,
    /// The calls of the last turn, in its order: answered, or waiting.
    pub(super) round: Vec<Slot>,
}

/// The counts a run keeps across its agents, and the state its stages keep
/// between turns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct Progress {
    /// Model turns asked for, over the whole run.
    pub turns: usize,
    /// Rounds the model was asked again after, over the whole run.
    pub rounds: usize,
    /// Times the run was handed from agent to agent.
    pub handoffs: usize,
    /// Decisions made (guardrail verdicts, summaries), each named by its
    /// place.
    pub decisions: usize,
    /// Reminders a typed answer has left; `None` until the agent holding
    /// the run first counts one.
    pub reminders: Option<usize>,
    /// Whether the conversation was compacted since the last turn was
    /// counted.
    pub compacted: bool,
}

/// One call of the turn a run stopped at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Slot {
    /// It has its result.
    Done(ToolResultMessage),
    /// It waits.
    Waiting(Wait),
}

/// A call a stopped run waits for: what it waits for, and its answer once
/// given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Wait {
    /// The call, its arguments validated (and as the tool-call guardrails
    /// let them pass).
    pub call: ToolCall,
    /// What it waits for.
    pub kind: WaitKind,
    pub(super) answer: Option<Answer>,
    /// For an agent called as a tool that waits: its own run's state,
    /// with the waits below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) nested: Option<Box<RunState>>,
}

/// What a call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitKind {
    /// An approval ([`RunState::approve`] or [`RunState::deny`]); a call of
    /// an external tool then waits for its answer.
    Approval,
    /// The answer of an external tool's call ([`RunState::resolve`]).
    Answer,
    /// The answers of an agent called as a tool, for the calls that wait
    /// in its run: they are among [`RunState::waits_by_path`], each by its
    /// path (`billing#c3/refund#c1`).
    Agent,
}

/// An answer given to a wait.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Answer {
    Approved,
    Denied(String),
    Output(ToolOutput),
    Failed(String),
}

impl RunState {
    /// The format written now; states of another are refused.
    pub const FORMAT: u32 = 1;

    /// The run's own calls that wait, in the turn's order, with those
    /// answered already. An agent called as a tool whose run waits is
    /// one, of kind [`WaitKind::Agent`]; [`waits_by_path`](Self::waits_by_path)
    /// lists the calls of the whole tree.
    pub fn waits(&self) -> impl Iterator<Item = &Wait> {
        self.round.iter().filter_map(|slot| match slot {
            Slot::Waiting(wait) => Some(wait),
            Slot::Done(_) => None,
        })
    }

    /// Every call that waits in the tree of agents, each with the path it
    /// is answered by: its id for a call of this run, `agent#call_id/…`
    /// down to it for a call of an agent called as a tool
    /// (`billing#c3/refund#c1`), as
    /// [`EventKind::call_path`](super::EventKind::call_path) names it.
    ///
    /// ```
    /// # use behest::run::RunState;
    /// # fn show(state: &RunState) {
    /// for (path, wait) in state.waits_by_path() {
    ///     println!("{path}: {} {:?}, answered: {}", wait.call.tool_name, wait.kind, wait.is_answered());
    /// }
    /// # }
    /// ```
    pub fn waits_by_path(&self) -> Vec<(String, &Wait)> {
        let mut found = Vec::new();
        self.collect_waits("", &mut found);
        found
    }

    fn collect_waits<'a>(&'a self, prefix: &str, found: &mut Vec<(String, &'a Wait)>) {
        for wait in self.waits() {
            let step = super::answers::step(&wait.call.tool_name, &wait.call.call_id);
            match &wait.nested {
                Some(nested) => nested.collect_waits(&format!("{prefix}{step}/"), found),
                // The root's own calls go by their ids alone.
                None if prefix.is_empty() => found.push((wait.call.call_id.clone(), wait)),
                None => found.push((format!("{prefix}{step}"), wait)),
            }
        }
    }

    /// Whether some call of the tree still waits for an answer.
    pub fn is_waiting(&self) -> bool {
        self.waits().any(|wait| !wait.is_answered())
    }

    /// The conversation, up to the turn whose calls are waited for.
    pub fn transcript(&self) -> &[Message] {
        &self.transcript
    }

    /// What the run spent so far.
    pub fn spent(&self) -> &RunUsage {
        &self.spent
    }

    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// How long ago the run started (as this machine's clock tells).
    pub fn elapsed(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.started_at)
            .unwrap_or_default()
    }

    /// Approves the call `call_id`, which waits for an approval: a call of
    /// the run by its id, a call of a nested agent by its path (see
    /// [`waits_by_path`](Self::waits_by_path)).
    pub fn approve(&mut self, call_id: &str) -> Result<(), ControlError> {
        self.answer(call_id, WaitKind::Approval, Answer::Approved)
    }

    /// Denies the call `call_id` (an id or a path), which waits for an
    /// approval; the model reads `reason`.
    pub fn deny(&mut self, call_id: &str, reason: impl Into<String>) -> Result<(), ControlError> {
        self.answer(call_id, WaitKind::Approval, Answer::Denied(reason.into()))
    }

    /// Answers the external call `call_id` (an id or a path): its output,
    /// or an error the model reads (as the call's execution error).
    pub fn resolve(
        &mut self,
        call_id: &str,
        result: Result<ToolOutput, String>,
    ) -> Result<(), ControlError> {
        let answer = match result {
            Ok(output) => Answer::Output(output),
            Err(message) => Answer::Failed(message),
        };
        self.answer(call_id, WaitKind::Answer, answer)
    }

    fn answer(&mut self, path: &str, kind: WaitKind, answer: Answer) -> Result<(), ControlError> {
        self.answer_at(path, path, false, kind, answer)
    }

    /// Answers the call at `rest` of `path`: in this run when it is one
    /// step, else in the nested run of its first step. `nested` for a run
    /// below the root, whose calls go by `name#call_id`.
    fn answer_at(
        &mut self,
        path: &str,
        rest: &str,
        nested: bool,
        kind: WaitKind,
        answer: Answer,
    ) -> Result<(), ControlError> {
        let unknown = || ControlError::UnknownCall {
            call_id: path.to_owned(),
        };
        // A call is named `name#call_id` below the root, by its id alone
        // at the root; a step down into an agent's run is always
        // `name#call_id/`. Matched against the calls that wait, not split
        // at a `/`, which a call's id may hold.
        let mut below = None;
        let wait = self
            .round
            .iter_mut()
            .find_map(|slot| {
                let Slot::Waiting(wait) = slot else {
                    return None;
                };
                let step = super::answers::step(&wait.call.tool_name, &wait.call.call_id);
                let leaf = if nested {
                    step.as_str()
                } else {
                    wait.call.call_id.as_str()
                };
                if rest == leaf {
                    return Some(wait);
                }
                let inside = rest.strip_prefix(step.as_str())?.strip_prefix('/')?;
                wait.nested.as_ref()?;
                below = Some(inside.to_owned());
                Some(wait)
            })
            .ok_or_else(unknown)?;
        if let Some(below) = below {
            let nested = wait.nested.as_deref_mut().ok_or_else(unknown)?;
            return nested.answer_at(path, &below, true, kind, answer);
        }
        let call_id = path;
        if wait.answer.is_some() {
            return Err(ControlError::AlreadyAnswered {
                call_id: call_id.to_owned(),
            });
        }
        if wait.kind != kind {
            return Err(ControlError::WrongAnswer {
                call_id: call_id.to_owned(),
                waiting: match wait.kind {
                    WaitKind::Approval => "an approval",
                    WaitKind::Answer => "a result",
                    WaitKind::Agent => "the answers of its agent's calls",
                },
            });
        }
        wait.answer = Some(answer);
        Ok(())
    }
}

impl Wait {
    /// Whether it was answered: for an agent called as a tool, whether
    /// every call that waits in its run was.
    pub fn is_answered(&self) -> bool {
        match &self.nested {
            Some(nested) => !nested.is_waiting(),
            None => self.answer.is_some(),
        }
    }
}

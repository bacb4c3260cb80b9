//! The seam for runs kept outside this process. A durable engine (a
//! workflow engine's journal) carries out each model turn and each tool
//! call of a run through [`RunSteps`]: it records what a step gave and, when
//! the run is played again after a crash, gives the record back instead of
//! asking the model again or running the tool twice. It also answers
//! approvals and external calls, for as long as they take.
//!
//! The run loop is the one every run has ([`RuntimeInvocation::drive_with`]);
//! only the steps change hands.
//!
//! [`RuntimeInvocation::drive_with`]: super::RuntimeInvocation::drive_with

use std::time::Duration;

use futures::future::BoxFuture;

use super::events::EventKind;
use crate::conversation::{AssistantMessage, Message};
use crate::model::ModelError;
use crate::runtime::{LocalRun, ToolCall};
use crate::tool::{ToolOutput, ToolResult};

/// Carries out a run's steps, as a durable engine does: each model turn
/// and each tool call, one at a time, in the order the run makes them (a
/// round's calls in the turn's order, not at once as in process, so that
/// a journal is read back as it was written). Played again, a run makes
/// the same steps in the same order.
pub trait RunSteps: Send + Sync {
    /// The model's answer to `turn`: [`ModelTurn::ask`] asks the model; an
    /// engine that recorded this turn's answer gives that back instead.
    /// The turn borrows the run's conversation (nothing is copied for it,
    /// however long the run): an implementation names the lifetime,
    /// `fn model_turn<'a>(&'a self, turn: ModelTurn<'a>) -> BoxFuture<'a, ..>`.
    fn model_turn<'a>(
        &'a self,
        turn: ModelTurn<'a>,
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>>;

    /// The outcome of `step`'s call, which the runtime has validated and
    /// routed: for a [`StepKind::Local`] call, [`ToolStep::run`] runs it;
    /// [`StepKind::NeedsApproval`] asks for an approval first (run it once
    /// approved, answer
    /// [`ToolError::ApprovalDenied`](crate::ToolError::ApprovalDenied)
    /// otherwise); a [`StepKind::External`] call is answered by someone
    /// outside the run, within its deadline
    /// ([`ToolError::Timeout`](crate::ToolError::Timeout) past it). Every
    /// output given back meets the runtime's output limit, as a tool's own
    /// does.
    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>>;

    /// The run's events as they happen, in order, for an engine that keeps
    /// them for those following the run from elsewhere: all but the live
    /// display's (streamed deltas, progress), so a run played again tells
    /// the same ones at the same steps. Does nothing unless implemented.
    fn event(&self, kind: &EventKind) {
        let _ = kind;
    }

    /// The run added `message` to its transcript (after the conversation
    /// it was given): every model turn, tool result and reminder, in
    /// order, the same when the run is played again. For an engine that
    /// keeps the transcript for those following the run from elsewhere.
    /// Does nothing unless implemented.
    fn message(&self, message: &Message) {
        let _ = message;
    }

    /// The run changed its transcript other than by adding to it: the
    /// agent's instructions put first and its input checked by the input
    /// guardrails (as each agent's part of the run begins, after a handoff
    /// too), or old turns compacted. `transcript` is the whole of it now.
    /// A guardrail's rewrite of the final answer is in the outcome's
    /// transcript, the run's last word. For an engine that keeps the
    /// transcript for those following the run from elsewhere; does nothing
    /// unless implemented.
    fn rewritten(&self, transcript: &[Message]) {
        let _ = transcript;
    }

    /// A decision the run makes besides its model turns and tool calls (a
    /// guardrail's verdict, a summary of old turns): `decide` makes it, as
    /// JSON; an engine that recorded the decision `name` gives that back
    /// instead, so that a run played again decides the same. `name` is the
    /// same when the run is played again. Makes it unless implemented.
    fn decision<'a>(
        &'a self,
        name: String,
        decide: BoxFuture<'a, serde_json::Value>,
    ) -> BoxFuture<'a, serde_json::Value> {
        let _ = name;
        decide
    }
}

/// One model turn of a run, as [`RunSteps::model_turn`] gets it; it
/// borrows the run's conversation for `'a`.
pub struct ModelTurn<'a> {
    /// Its place among the run's turns, from 0: the same when the run is
    /// played again.
    pub index: usize,
    ask: Box<dyn FnOnce() -> BoxFuture<'a, Result<AssistantMessage, ModelError>> + Send + 'a>,
}

impl<'a> ModelTurn<'a> {
    pub(crate) fn new(
        index: usize,
        ask: impl FnOnce() -> BoxFuture<'a, Result<AssistantMessage, ModelError>> + Send + 'a,
    ) -> Self {
        Self {
            index,
            ask: Box::new(ask),
        }
    }

    /// Asks the model.
    pub fn ask(self) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        (self.ask)()
    }
}

impl std::fmt::Debug for ModelTurn<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelTurn")
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

/// What a tool call needs before it has a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepKind {
    /// A tool of the runtime's: run it.
    Local,
    /// A tool of the runtime's that needs an approval first, given within
    /// `deadline`.
    NeedsApproval {
        /// How long the approval may take (the agent's
        /// [`approval_deadline`](super::RunOptions::approval_deadline)).
        deadline: Duration,
    },
    /// An external tool: someone outside the run answers within `deadline`
    /// (once approved, when `approval` says so).
    External {
        /// How long the answer may take (the agent's
        /// [`external_deadline`](super::RunOptions::external_deadline)).
        deadline: Duration,
        /// How long an approval may take, when the call needs one before
        /// it is answered (the agent's
        /// [`approval_deadline`](super::RunOptions::approval_deadline)).
        approval: Option<Duration>,
    },
}

/// One tool call of a run, as [`RunSteps::tool_call`] gets it: looked up,
/// decoded and validated by the runtime, and routed. A clone runs the
/// same call again (an engine running it in [parts](crate::CallPart)).
#[derive(Clone)]
pub struct ToolStep {
    /// The call, its arguments decoded and validated (as a person asked to
    /// approve it, or whoever answers it, should see them).
    pub call: ToolCall,
    /// What it needs before it has a result.
    pub kind: StepKind,
    run: LocalRun,
}

impl ToolStep {
    pub(crate) fn new(call: ToolCall, kind: StepKind, run: LocalRun) -> Self {
        Self { call, kind, run }
    }

    /// The call run with `key` as its idempotency key, which the tool reads
    /// with [`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key):
    /// an engine gives a key that stays the same when the call is played
    /// again and differs for every other call (the run's id and the call's).
    #[must_use]
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.run = self.run.with_idempotency_key(key.into());
        self
    }

    /// Whether the call's tool can be run in [parts](crate::CallPart)
    /// ([`Tool::keeps_checkpoints`](crate::Tool::keeps_checkpoints)), as
    /// the runtime that routed it (a nested agent's own) has it.
    pub fn keeps_checkpoints(&self) -> bool {
        self.run
            .runtime()
            .registry()
            .keeps_checkpoints(&self.call.tool_name)
    }

    /// The call given `value` as an extension its tool reads with
    /// [`ToolContext::extension`](crate::ToolContext::extension): the
    /// [`CallPart`](crate::CallPart) an engine runs, say.
    #[must_use]
    pub fn extension<T: std::any::Any + Send + Sync>(mut self, value: T) -> Self {
        self.run = self.run.with_extension(value);
        self
    }

    /// Runs the call under the runtime's limits (timeout, cancellation,
    /// concurrency, output limit) and the run's progress, with no approval
    /// asked: for a [`StepKind::NeedsApproval`] call, once approved. An
    /// external call has nothing to run and answers
    /// [`ToolError::NotImplemented`](crate::ToolError::NotImplemented).
    pub fn run(self) -> BoxFuture<'static, ToolResult<ToolOutput>> {
        self.run.run()
    }

    /// The call as the runtime runs it.
    pub(crate) fn local_run(&self) -> &LocalRun {
        &self.run
    }

    /// The call made into its running future.
    pub(crate) fn into_run(self) -> LocalRun {
        self.run
    }
}

impl std::fmt::Debug for ToolStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolStep")
            .field("call", &self.call)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

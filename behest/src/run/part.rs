//! One agent's part of a run: what the loop (`driver.rs`), the calls
//! (`calls.rs`) and the stages share, and the run's ways to tell what
//! happened (events, the transcript, results of calls that will not run,
//! decisions a replay must see).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::future::BoxFuture;

use super::agent::{Agent, RunOptions};
use super::books::Lineage;
use super::control::RunControl;
use super::events::{Emitter, EventKind, RunPhase, ToolStreamEvent};
use super::ids::CallIds;
use super::state::{Progress, Wait};
use super::steps::RunSteps;
use super::RunError;
use crate::conversation::{DeltaSink, Message, ToolResultMessage};
use crate::runtime::{ToolCall, ToolCallResult};
use crate::tool::{ToolError, ToolOutput, ToolResult, ToolSpec};

/// What an agent's part of a run is given: the agent holding the run, the
/// run's plumbing, its books and rules.
pub(super) struct Part<'a> {
    pub agent: &'a Agent,
    pub emitter: &'a Arc<Emitter>,
    pub control: &'a RunControl,
    /// Who carries out the model turns and tool calls, when not this
    /// process alone (a durable engine's journal).
    pub steps: Option<&'a dyn RunSteps>,
    /// Where the run stands in a tree of agents, with the run's books: the
    /// agents it runs as tools take it from its calls.
    pub lineage: Lineage,
    /// The rules of the agent the run was started on: its limits, step
    /// and turn bounds hold across handoffs.
    pub first: &'a RunOptions,
    /// When the run started, by this process's clock and by the wall's.
    pub started: tokio::time::Instant,
    pub started_at: SystemTime,
    /// The agent holding the run: the handoffs' names from the first.
    pub holder: &'a [String],
    /// Whether the run stops at its waits rather than waiting.
    pub pausing: bool,
    /// Decisions made before this part.
    pub decisions_before: usize,
}

/// One agent's part of a run: what the loop and the stages share, and its
/// part in each call ([`RunHooks`](crate::runtime::RunHooks), `calls.rs`).
/// What it was given ([`Part`]) reads through it (`run.agent`, …).
pub(super) struct Run<'a> {
    pub part: Part<'a>,
    /// A stage stopped the run during a round of calls: the run fails with
    /// this once the round's calls have their results.
    pub tripped: Mutex<Option<RunError>>,
    /// The tools offered at this step, when the agent prepares them: a
    /// call of another is not run.
    pub offered: Mutex<Option<HashSet<String>>>,
    /// How many decisions (guardrail verdicts, summaries) the run has
    /// made: each is named by its place, the same when played again.
    pub decisions: std::sync::atomic::AtomicUsize,
    /// The calls started at once (not routed), by id, with their tools:
    /// their ends are told to the stages.
    pub running: Mutex<HashMap<String, String>>,
    /// The calls of this round that wait, for a run that stops at waits.
    pub waits: Mutex<Vec<Wait>>,
    /// What the stages offer beside the agent's tools.
    pub offer: Offer,
    /// The tools offered at each step unless prepared: the agent's, then
    /// the stages'.
    pub specs: Vec<ToolSpec>,
    /// The tools that ask for strict mode.
    pub strict: BTreeSet<String>,
    /// Where the model's streamed pieces go.
    pub deltas: DeltaSink,
}

impl<'a> std::ops::Deref for Run<'a> {
    type Target = Part<'a>;

    fn deref(&self) -> &Part<'a> {
        &self.part
    }
}

/// What the stages offer the model beside the agent's tools.
#[derive(Default)]
pub(super) struct Offer {
    /// Tools offered at every step, whatever a preparation of the tools
    /// returns.
    pub tools: Vec<Offered>,
    /// The typed answer asked for in the model's structured output.
    pub output: Option<ToolSpec>,
}

/// A tool a stage offers, and what it is (for an error that names it).
pub(super) struct Offered {
    pub spec: ToolSpec,
    pub what: String,
}

/// What the loop carries from step to step.
pub(super) struct Looping {
    pub transcript: Vec<Message>,
    pub progress: Progress,
    /// The tools prepared for this step, when the agent prepares them.
    pub prepared: Option<Vec<ToolSpec>>,
    pub ids: CallIds,
}

impl Looping {
    pub fn new(transcript: Vec<Message>, progress: Progress) -> Self {
        // Ids already in the conversation (a run handed on, a history
        // given back) stay unique too.
        let ids = CallIds::seeded(&transcript);
        Self {
            transcript,
            progress,
            prepared: None,
            ids,
        }
    }

    /// The transcript, taken for an outcome.
    pub fn take(&mut self) -> Vec<Message> {
        std::mem::take(&mut self.transcript)
    }
}

impl Run<'_> {
    /// Gives each of `calls`, which will not run, its result (`why`) and
    /// adds it to the transcript: every call in a transcript gets its
    /// result, or providers refuse the transcript. This is the one place
    /// calls that will not run are answered.
    pub(super) fn unrun(
        &self,
        transcript: &mut Vec<Message>,
        calls: Vec<ToolCall>,
        why: impl Fn(&ToolCall) -> ToolError,
    ) {
        for call in calls {
            let error = why(&call);
            let result = self.finished(call, Err(error));
            self.add(transcript, result_message(&result));
        }
    }

    /// The name of the run's next decision, about `what`. What a stage
    /// decides that a replay must see goes through [`decide`](Self::decide).
    fn decision_name(&self, what: &str) -> String {
        let n = self
            .decisions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("decision {n}: {what}")
    }

    /// Makes the decision `what` with `make` (as JSON): here, or through
    /// the run's steps, which give a run played again the decision it had.
    /// The one journaling call of the stages.
    pub(super) async fn decide(
        &self,
        what: &str,
        make: BoxFuture<'_, serde_json::Value>,
    ) -> serde_json::Value {
        match self.steps {
            None => make.await,
            Some(steps) => steps.decision(self.decision_name(what), make).await,
        }
    }

    /// Adds `message` to the run's transcript, and tells the run's steps.
    pub(super) fn add(&self, transcript: &mut Vec<Message>, message: Message) {
        if let Some(steps) = self.steps {
            steps.message(&message);
        }
        transcript.push(message);
    }

    /// Tells the run's steps that the transcript changed other than by an
    /// added message ([`RunSteps::rewritten`]).
    pub(super) fn rewrote(&self, transcript: &[Message]) {
        if let Some(steps) = self.steps {
            steps.rewritten(transcript);
        }
    }

    /// A call answered without running, and its `Result` event.
    pub(super) fn finished(
        &self,
        call: ToolCall,
        outcome: ToolResult<ToolOutput>,
    ) -> ToolCallResult {
        let result = ToolCallResult {
            call_id: call.call_id,
            tool_name: call.tool_name,
            outcome,
        };
        self.tool_event(ToolStreamEvent::Result {
            result: result.clone(),
        });
        result
    }

    /// Emits `kind`, and tells the run's steps of it: every event but the
    /// live display's (streamed deltas, progress), which a played-again run
    /// does not repeat.
    pub(super) fn emit(&self, kind: EventKind) {
        if let Some(steps) = self.steps {
            steps.event(&kind);
        }
        self.emitter.emit(kind);
    }

    pub(super) fn phase(&self, phase: RunPhase) {
        self.emit(EventKind::State(phase));
    }

    pub(super) fn tool_event(&self, event: ToolStreamEvent) {
        self.emit(EventKind::Tool(event));
    }
}

pub(super) fn result_message(result: &ToolCallResult) -> Message {
    Message::ToolResult(ToolResultMessage::from(result))
}

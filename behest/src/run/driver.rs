//! The loop of one run: a fixed sequence of steps, each asking the stages
//! (`stage.rs`) in their order: before the request, ask, after the answer,
//! on the outcome, before the calls, the calls (`calls.rs`). Each step says
//! what comes next: go on, ask again, hand off, end. The loop names no
//! feature.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::future::BoxFuture;

use super::agent_tool::Lineage;
use super::control::RunControl;
use super::events::{Emitter, EventKind, RunPhase, ToolStreamEvent};
use super::ids::CallIds;
use super::stage::{Ending, Flow, Offer, STAGES};
use super::state::{Progress, Wait};
use super::steps::{ModelTurn, RunSteps};
use super::{Agent, RunError, RunOptions, RunOutcome};
use crate::conversation::{AssistantMessage, DeltaSink, Message, ToolResultMessage};
use crate::model::{ModelError, ModelRequest};
use crate::runtime::{ToolCall, ToolCallResult};
use crate::tool::{ToolError, ToolOutput, ToolResult, ToolSpec};

/// One agent's part of a run: what the loop and the stages share, and its
/// part in each call ([`RunHooks`](crate::runtime::RunHooks), `calls.rs`).
pub(super) struct Run<'a> {
    pub agent: &'a Agent,
    pub emitter: &'a Arc<Emitter>,
    pub control: &'a RunControl,
    /// How many handlers the run has.
    pub handlers: usize,
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

/// What an agent's part of a run is made from.
pub(super) struct Part<'a> {
    pub agent: &'a Agent,
    pub emitter: &'a Arc<Emitter>,
    pub control: &'a RunControl,
    pub handlers: usize,
    pub steps: Option<&'a dyn RunSteps>,
    pub lineage: Lineage,
    pub first: &'a RunOptions,
    pub started: tokio::time::Instant,
    pub started_at: SystemTime,
    pub holder: &'a [String],
    pub pausing: bool,
    /// Decisions made before this part.
    pub decisions: usize,
}

impl<'a> Run<'a> {
    /// The part of the run `part` says, its offer asked of the stages.
    pub fn new(part: Part<'a>) -> Self {
        let emitter = part.emitter.clone();
        let registry = part.agent.runtime.registry();
        let strict = registry
            .names()
            .filter(|name| registry.is_strict(name))
            .map(str::to_owned)
            .collect();
        let mut run = Self {
            agent: part.agent,
            emitter: part.emitter,
            control: part.control,
            handlers: part.handlers,
            steps: part.steps,
            lineage: part.lineage,
            first: part.first,
            started: part.started,
            started_at: part.started_at,
            holder: part.holder,
            pausing: part.pausing,
            tripped: Mutex::new(None),
            offered: Mutex::new(None),
            decisions: std::sync::atomic::AtomicUsize::new(part.decisions),
            running: Mutex::default(),
            waits: Mutex::default(),
            offer: Offer::default(),
            specs: Vec::new(),
            strict,
            deltas: DeltaSink::new(move |delta| emitter.emit(EventKind::ModelDelta(delta))),
        };
        let mut offer = Offer::default();
        for stage in STAGES {
            stage.offer(&run, &mut offer);
        }
        run.specs = registry
            .specs()
            .cloned()
            .chain(offer.tools.iter().cloned())
            .collect();
        run.offer = offer;
        run
    }
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
    /// The agent's part of the run, from its start.
    pub async fn drive(&self, looping: &mut Looping) -> Ending {
        if let Some(message) = super::agent::name_conflict(self.agent) {
            let error = RunError::Agent { message };
            return Ending::End(RunOutcome::failed(error, looping.take()));
        }
        for stage in STAGES {
            if let Some(end) = stage.start(self, looping).await.ending() {
                return end;
            }
        }
        self.go_on(looping).await
    }

    /// The loop, from the next request on.
    pub async fn go_on(&self, looping: &mut Looping) -> Ending {
        loop {
            // Before the request.
            for stage in STAGES {
                if let Some(end) = stage.before_request(self, looping).await.ending() {
                    return end;
                }
            }
            // Ask.
            self.phase(RunPhase::AwaitingModel);
            let reply = match self.ask(looping).await {
                Ok(reply) => reply,
                Err(outcome) => return Ending::End(outcome),
            };
            // After the answer.
            let mut calls = reply.tool_calls.clone();
            let mut flow = Flow::Go;
            for stage in STAGES {
                flow = stage.after_answer(self, looping, &reply, &mut calls).await;
                if !matches!(flow, Flow::Go) {
                    break;
                }
            }
            if matches!(flow, Flow::Go) && calls.is_empty() {
                let text = reply.text.clone().unwrap_or_default();
                flow = Flow::End(RunOutcome::completed(text, looping.take()));
            }
            // On the outcome.
            match flow {
                Flow::End(outcome) => match self.on_outcome(looping, outcome).await {
                    Some(outcome) => return Ending::End(outcome),
                    None => calls.clear(),
                },
                Flow::HandOff(to) => return Ending::HandOff(to),
                Flow::Go | Flow::Ask => {}
            }
            // Before the calls.
            for stage in STAGES {
                if let Some(end) = stage.before_calls(self, looping, &mut calls).await.ending() {
                    return end;
                }
            }
            if calls.is_empty() {
                continue;
            }
            // The calls.
            self.phase(RunPhase::ExecutingTools);
            if let Some(end) = self.round(looping, calls).await {
                return end;
            }
        }
    }

    /// The outcome as the stages let it end the run, or `None` when the
    /// model is to answer again.
    async fn on_outcome(&self, looping: &mut Looping, outcome: RunOutcome) -> Option<RunOutcome> {
        let mut outcome = outcome;
        for stage in STAGES {
            outcome = stage.on_outcome(self, looping, outcome).await?;
        }
        Some(outcome)
    }

    /// Asks the model for the next turn and puts its answer in the
    /// transcript; the run's outcome when there is none.
    async fn ask(&self, looping: &mut Looping) -> Result<AssistantMessage, RunOutcome> {
        let cancellation = self.control.cancellation().clone();
        let index = looping.progress.turns;
        looping.progress.turns += 1;
        let specs = looping.prepared.as_deref().unwrap_or(&self.specs);
        let asked = self.model_turn(index, &looping.transcript, specs);
        // Dropping the model's future on cancellation aborts its request.
        let reply = tokio::select! {
            biased;
            () = cancellation.cancelled() => return Err(RunOutcome::cancelled(looping.take())),
            reply = asked => reply,
            () = self.until_deadline() => {
                return Err(RunOutcome::failed(self.past_deadline(), looping.take()));
            }
        };
        let mut reply = match reply {
            Ok(reply) => reply,
            // Cancelled while the model answered (a durable engine learns
            // it only then): the run is cancelled, not failed.
            Err(_) if cancellation.is_cancelled() => {
                return Err(RunOutcome::cancelled(looping.take()));
            }
            Err(error) => {
                return Err(RunOutcome::failed(RunError::Model(error), looping.take()));
            }
        };
        looping.ids.make_unique(&mut reply);
        self.emit(EventKind::ModelMessage(reply.clone()));
        self.add(&mut looping.transcript, Message::Assistant(reply.clone()));
        Ok(reply)
    }

    /// The model's answer to turn `index`: asked here, or through the
    /// run's steps (which may give a recorded answer back instead).
    fn model_turn<'t>(
        &'t self,
        index: usize,
        transcript: &'t [Message],
        specs: &'t [ToolSpec],
    ) -> BoxFuture<'t, Result<AssistantMessage, ModelError>> {
        let settings = self.agent.options.model_settings.as_ref();
        let ask = move || {
            let mut request = ModelRequest::new(transcript, specs)
                .with_strict(&self.strict)
                .with_deltas(&self.deltas);
            if let Some(output) = &self.offer.output {
                request = request.with_output(output);
            }
            if let Some(settings) = settings {
                request = request.with_settings(settings);
            }
            self.agent.model.complete_dyn(request)
        };
        match self.steps {
            None => ask(),
            Some(steps) => steps.model_turn(ModelTurn::new(index, ask)),
        }
    }

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

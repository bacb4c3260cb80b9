//! The loop of one run: a fixed sequence of steps, each asking the stages
//! (`stage.rs`) in their order (`stages.rs`): before the request, ask,
//! after the answer, on the outcome, before the calls, the calls
//! (`calls.rs`). Each step says what comes next: go on, ask again, hand
//! off, end. The loop names no feature.

use std::collections::HashMap;
use std::sync::Mutex;

use futures::future::BoxFuture;

use super::agent::Agent;
use super::events::{EventKind, RunPhase};
use super::part::{Looping, Offer, Part, Run};
use super::stage::{Ending, Flow};
use super::stages::STAGES;
use super::steps::ModelTurn;
use super::{RunError, RunOutcome};
use crate::conversation::{AssistantMessage, DeltaSink, Message};
use crate::model::{ModelError, ModelRequest};
use crate::tool::ToolSpec;

impl<'a> Run<'a> {
    /// The part of the run `part` says, with what the stages offer.
    pub fn new(part: Part<'a>) -> Self {
        let emitter = part.emitter.clone();
        let registry = part.agent.runtime.registry();
        let strict = registry
            .names()
            .filter(|name| registry.is_strict(name))
            .map(str::to_owned)
            .collect();
        let offer = offer_of(part.agent);
        let specs = registry
            .specs()
            .cloned()
            .chain(offer.tools.iter().map(|offered| offered.spec.clone()))
            .collect();
        Self {
            decisions: std::sync::atomic::AtomicUsize::new(part.decisions_before),
            part,
            tripped: Mutex::new(None),
            offered: Mutex::new(None),
            running: Mutex::default(),
            waits: Mutex::default(),
            offer,
            specs,
            strict,
            deltas: DeltaSink::new(move |delta| emitter.emit(EventKind::ModelDelta(delta))),
        }
    }
}

/// What the stages offer `agent`'s model beside its tools.
fn offer_of(agent: &Agent) -> Offer {
    let mut offer = Offer::default();
    for stage in STAGES {
        stage.offer(agent, &mut offer);
    }
    offer
}

/// The first name offered twice to `agent`'s model, said as the error: its
/// tools and what the stages `offer` beside them.
fn name_conflict(agent: &Agent, offer: &Offer) -> Option<String> {
    let registry = agent.runtime.registry();
    let offered = registry
        .names()
        .map(|name| (name, format!("the tool `{name}`")))
        .chain(
            offer
                .tools
                .iter()
                .map(|offered| (offered.spec.name.as_str(), offered.what.clone())),
        );
    let mut seen: HashMap<&str, String> = HashMap::new();
    for (name, what) in offered {
        if let Some(before) = seen.get(name) {
            return Some(format!(
                "{before} and {what} are both offered to the model as `{name}`; give them names that differ"
            ));
        }
        seen.insert(name, what);
    }
    None
}

impl Agent {
    /// Whether the agent can run as built: every name offered to its model
    /// (its tools, its handoffs' `transfer_to_…` tools, `final_answer` for
    /// a typed answer) is offered once. Providers refuse a request with a
    /// name twice, and a second tool of a name could never be called. A
    /// run of an agent that fails this check fails at once with this
    /// error.
    ///
    /// ```
    /// use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// let agent = || Agent::new(ScriptedModel::new([]), ToolRuntime::new(ToolRegistry::new()));
    /// // "a b" and "a_b" are both offered as `transfer_to_a_b`.
    /// let triage = agent().handoff("a b", "one", agent()).handoff("a_b", "two", agent());
    /// assert!(triage.check().unwrap_err().to_string().contains("transfer_to_a_b"));
    /// ```
    pub fn check(&self) -> Result<(), RunError> {
        match name_conflict(self, &offer_of(self)) {
            Some(message) => Err(RunError::Agent { message }),
            None => Ok(()),
        }
    }
}

impl Run<'_> {
    /// The agent's part of the run, from its start.
    pub async fn drive(&self, looping: &mut Looping) -> Ending {
        if let Some(message) = name_conflict(self.agent, &self.offer) {
            let error = RunError::Agent { message };
            return Ending::End(RunOutcome::failed(error, looping.take()));
        }
        for stage in STAGES {
            if let Some(end) = stage.start(self, looping).await.ending() {
                return end;
            }
        }
        // Instructions put first, the input as its guardrails passed it.
        self.rewrote(&looping.transcript);
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
        looping.progress.turns = index.saturating_add(1);
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
}

//! The loop of one run: ask the model, run its tool calls through the
//! runtime's one entry point, send every result back, repeat.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures::future::{join_all, BoxFuture};
use tokio::sync::oneshot;

use super::control::{Decision, RunControl};
use super::events::{Emitter, EventKind, RunState, ToolStreamEvent};
use super::limits::Reached;
use super::output::FinalOutput;
use super::steps::{ModelTurn, RunSteps, StepKind, ToolStep};
use super::turn::{Answer, Next};
use super::{Agent, RunError, RunOutcome};
use crate::conversation::DeltaSink;
use crate::conversation::{AssistantMessage, Message, ReasoningPlace, ToolResultMessage};
use crate::model::ModelRequest;
use crate::runtime::{CallOptions, LocalRun, Route, RunHooks, ToolCall, ToolCallResult};
use crate::tool::ProgressSink;
use crate::tool::{LimitKind, ToolError, ToolOutput, ToolResult, ToolSpec};

/// The loop of one run, and its part in each call ([`RunHooks`]).
pub(super) struct Run<'a> {
    pub agent: &'a Agent,
    pub emitter: &'a Arc<Emitter>,
    pub control: &'a RunControl,
    /// How many handlers the run has.
    pub handlers: usize,
    /// Who carries out the model turns and tool calls, when not this
    /// process alone (a durable engine's journal).
    pub steps: Option<&'a dyn RunSteps>,
    /// A guardrail or a limit stopped the run during a round of tool
    /// calls: the run fails with this once the round's calls have their
    /// results.
    pub tripped: std::sync::Mutex<Option<RunError>>,
    /// Where the run stands in a tree of agents, with the run's books
    /// (its own place for a run nobody called): the agents it runs as
    /// tools take it from its calls.
    pub lineage: super::agent_tool::Lineage,
    /// Set when the model hands the conversation off: to whom.
    pub handed_off: std::sync::Mutex<Option<super::handoff::Handoff>>,
    /// The tools offered at this step, when the agent prepares them
    /// ([`Agent::prepare_tools`](super::Agent::prepare_tools)): a call of
    /// another is not run.
    pub offered: std::sync::Mutex<Option<HashSet<String>>>,
    /// How many decisions (guardrail verdicts, summaries) the run has
    /// made: each is named by its place, the same when played again.
    pub decisions: std::sync::atomic::AtomicUsize,
    /// The calls started at once (not routed), by id, with their tools:
    /// their ends are told to the books.
    pub running: std::sync::Mutex<HashMap<String, String>>,
    /// The rules of the agent the run was started on: its limits, step
    /// and turn bounds hold across handoffs.
    pub first: &'a super::RunOptions,
    /// When the run started (its deadline runs from there, across
    /// handoffs).
    pub started: tokio::time::Instant,
}

/// What a run has counted across its agents: model turns and rounds of
/// tool calls.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counts {
    pub turns: usize,
    pub rounds: usize,
}

impl Run<'_> {
    pub async fn drive(&self, mut transcript: Vec<Message>, counts: &mut Counts) -> RunOutcome {
        let tools: Vec<ToolSpec> = self.agent.runtime.registry().specs().cloned().collect();
        let handoffs = &self.agent.options.handoffs;
        if let Some(conflict) = super::agent::name_conflict(self.agent) {
            return RunOutcome::failed(RunError::Agent { message: conflict }, transcript);
        }
        // Offered beside the tools, whatever a preparation of them does.
        let mut run_tools: Vec<ToolSpec> =
            handoffs.iter().map(super::handoff::Handoff::spec).collect();
        let final_output = self.agent.options.final_output.clone();
        // A model that answers in a schema's shape is asked for the answer
        // so; any other is offered the `final_answer` tool.
        let native = final_output.is_some() && self.agent.model.supports_structured_output();
        if let Some(output) = final_output.as_ref().filter(|_| !native) {
            run_tools.push(output.spec.clone());
        }
        let prepare = self.agent.options.prepare_tools.as_ref();
        let specs: Vec<ToolSpec> = tools.iter().chain(&run_tools).cloned().collect();
        let mut answer = Answer {
            output: final_output.as_ref(),
            native,
            reminders: self.agent.options.output_reminders,
        };
        let cancellation = self.control.cancellation().clone();
        let mut ids = CallIds::default();
        // Ids already in the conversation (a run handed on, a history
        // given back) stay unique too.
        ids.seed(&transcript);
        let emitter = self.emitter.clone();
        let deltas = DeltaSink::new(move |delta| emitter.emit(EventKind::ModelDelta(delta)));
        let registry = self.agent.runtime.registry();
        let strict: BTreeSet<String> = registry
            .names()
            .filter(|name| registry.is_strict(name))
            .map(str::to_owned)
            .collect();
        let native_output = final_output
            .as_ref()
            .filter(|_| native)
            .map(FinalOutput::native_spec);
        let limits = &self.first.usage_limits;
        let books = &self.lineage.books;
        let started = self.started;
        let deadline = limits
            .deadline
            .and_then(|deadline| started.checked_add(deadline));
        if let Err(error) = self.guard_input(&mut transcript).await {
            return RunOutcome::failed(error, transcript);
        }
        // Whether the conversation was compacted since the last turn was
        // counted: that count is of what was there before.
        let mut compacted = false;
        loop {
            if let Some(max_turns) = self.first.max_turns.filter(|max| counts.turns >= *max) {
                return RunOutcome::failed(RunError::MaxTurnsExceeded { max_turns }, transcript);
            }
            if deadline.is_some_and(|at| tokio::time::Instant::now() >= at) {
                let reached = Reached::deadline(limits, started.elapsed());
                return RunOutcome::failed(reached.error(), transcript);
            }
            // Every run of the tree of agents counts the request.
            if let Err(reached) = books.request() {
                return RunOutcome::failed(reached.error(), transcript);
            }
            if let Some(policy) = &self.agent.options.context {
                match self.compact(&mut transcript, policy, compacted).await {
                    Ok(done) => compacted |= done,
                    Err(error) => return RunOutcome::failed(error, transcript),
                }
            }
            self.state(RunState::AwaitingModel);
            // The tools of this step, as the agent prepares them.
            let prepared = match prepare {
                None => None,
                Some(prepare) => {
                    let step = super::StepState {
                        turn: counts.turns,
                        transcript: &transcript,
                        usage: &books.spent(),
                    };
                    match super::panics::caught("the preparation of the tools", || {
                        (prepare.0)(&step, tools.clone())
                    }) {
                        Ok(mut offered) => {
                            offered.extend(run_tools.iter().cloned());
                            Some(offered)
                        }
                        Err(error) => return RunOutcome::failed(error, transcript),
                    }
                }
            };
            *crate::sync::lock(&self.offered) = prepared
                .as_ref()
                .map(|offered| offered.iter().map(|spec| spec.name.clone()).collect());
            let turn = TurnInput {
                index: counts.turns,
                transcript: &transcript,
                specs: prepared.as_deref().unwrap_or(&specs),
                strict: &strict,
                output: native_output.as_ref(),
                deltas: &deltas,
            };
            counts.turns += 1;
            // Dropping the model's future on cancellation aborts its request.
            let reply = tokio::select! {
                biased;
                () = cancellation.cancelled() => return RunOutcome::cancelled(transcript),
                reply = self.model_turn(turn) => reply,
                () = until(deadline) => {
                    let reached = Reached::deadline(limits, started.elapsed());
                    return RunOutcome::failed(reached.error(), transcript);
                }
            };
            let mut reply = match reply {
                Ok(reply) => reply,
                // Cancelled while the model answered (a durable engine
                // learns it only then): the run is cancelled, not failed.
                Err(_) if cancellation.is_cancelled() => {
                    return RunOutcome::cancelled(transcript);
                }
                Err(error) => return RunOutcome::failed(RunError::Model(error), transcript),
            };
            ids.make_unique(&mut reply);
            let over = books.tokens(reply.usage.as_ref());
            compacted &= reply.usage.is_none();
            self.emit(EventKind::ModelMessage(reply.clone()));
            self.add(&mut transcript, Message::Assistant(reply.clone()));
            if let Some(reached) = over {
                let error = reached.error();
                self.unrun(&mut transcript, reply.tool_calls, |_| {
                    ToolError::execution(format!("not run: {error}"))
                });
                return RunOutcome::failed(error, transcript);
            }
            let calls = match self.after_turn(reply, &mut transcript, &mut answer) {
                // The answer meets the output guardrails; one refused is
                // sent back, and the model asked again.
                Next::End(outcome) => match self.guard_answer(outcome).await {
                    Ok(outcome) => return outcome,
                    Err(back) => {
                        transcript = back;
                        Vec::new()
                    }
                },
                Next::Ask => Vec::new(),
                Next::Run(calls) => calls,
            };
            if let Some(handoff) = super::handoff::asked_for(handoffs, &calls) {
                let name = handoff.to.name.clone();
                // The handoff's call says where the conversation went; the
                // others were not run.
                let (chosen, others): (Vec<_>, Vec<_>) = calls
                    .into_iter()
                    .partition(|call| call.call_id == handoff.call.call_id);
                for call in chosen {
                    let result =
                        self.finished(call, Ok(ToolOutput::text(format!("Handed off to {name}."))));
                    self.add(&mut transcript, result_message(&result));
                }
                self.unrun(&mut transcript, others, |_| {
                    ToolError::execution(format!(
                        "not run: the conversation was handed off to {name}"
                    ))
                });
                *crate::sync::lock(&self.handed_off) = Some(handoff.to);
                // The transcript goes back through the outcome.
                return RunOutcome::completed(String::new(), transcript);
            }
            // Every way the model is asked again counts against the run's
            // limit, once, over the whole run.
            counts.rounds += 1;
            let max_steps = self.first.max_steps;
            if counts.rounds > max_steps {
                let rounds = counts.rounds;
                self.unrun(&mut transcript, calls, |_| ToolError::LimitExceeded {
                    kind: LimitKind::ToolRounds,
                    limit: max_steps,
                    actual: Some(rounds),
                });
                return RunOutcome::failed(RunError::MaxStepsExceeded { max_steps }, transcript);
            }
            if calls.is_empty() {
                continue;
            }

            self.state(RunState::ExecutingTools);
            let results = if self.steps.is_some() {
                // A journal is written, and read back, one step at a time:
                // the round's calls go in the turn's order.
                let mut results = Vec::with_capacity(calls.len());
                for call in calls {
                    results.push(self.call(call).await);
                }
                results
            } else {
                join_all(calls.into_iter().map(|call| self.call(call))).await
            };
            for result in &results {
                self.add(&mut transcript, result_message(result));
            }
            if cancellation.is_cancelled() {
                return RunOutcome::cancelled(transcript);
            }
            let tripped = crate::sync::lock(&self.tripped).take();
            if let Some(error) = tripped {
                return RunOutcome::failed(error, transcript);
            }
            let unanswered = results.iter().find(|result| {
                matches!(result.outcome, Err(ToolError::NotImplemented))
                    && self.agent.runtime.registry().is_external(&result.tool_name)
            });
            if let Some(result) = unanswered {
                let error = RunError::NoHandler {
                    tool_name: result.tool_name.clone(),
                    call_id: result.call_id.clone(),
                };
                return RunOutcome::failed(error, transcript);
            }
        }
    }

    /// Gives each of `calls`, which will not run, its result (`why`) and
    /// adds it to the transcript: every call in a transcript gets its
    /// result, or providers refuse the transcript.
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

    /// The model's answer to one turn: asked here, or through the run's
    /// steps (which may give a recorded answer back instead).
    fn model_turn<'t>(
        &'t self,
        turn: TurnInput<'t>,
    ) -> BoxFuture<'t, Result<AssistantMessage, crate::model::ModelError>> {
        let settings = self.agent.options.model_settings.as_ref();
        let index = turn.index;
        let ask = move || {
            let mut request = ModelRequest::new(turn.transcript, turn.specs)
                .with_strict(turn.strict)
                .with_deltas(turn.deltas);
            if let Some(output) = turn.output {
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

    /// What a call of the run is given: the run's cancellation, and a sink
    /// of its progress into the run's events.
    fn call_options(&self) -> CallOptions {
        let emitter = self.emitter.clone();
        CallOptions {
            cancellation: Some(self.control.cancellation().clone()),
            progress: Some(ProgressSink::new(move |call_id, progress| {
                emitter.emit(EventKind::Tool(ToolStreamEvent::Progress {
                    call_id: call_id.to_owned(),
                    progress,
                }));
            })),
            extensions: Default::default(),
        }
        .extension(self.lineage.clone())
    }

    /// One tool call, through the runtime's entry point (which routes it
    /// once validated, and hands it to the run's steps where there are
    /// some), to its `Result` event.
    async fn call(&self, call: ToolCall) -> ToolCallResult {
        let offered = crate::sync::lock(&self.offered)
            .as_ref()
            .is_none_or(|offered| offered.contains(&call.tool_name));
        if !offered {
            let error = ToolError::execution(format!(
                "not run: the tool `{}` is not offered at this step",
                call.tool_name
            ));
            return self.finished(call, Err(error));
        }
        let options = self.call_options();
        let hooks: &dyn RunHooks = self;
        let result = self
            .agent
            .runtime
            .call_in(call, options, Some(&hooks))
            .await;
        // A call started at once ends here; a routed one ended in
        // `dispatch`.
        let ran = crate::sync::lock(&self.running).remove(&result.call_id);
        if let Some(tool) = ran {
            self.lineage.books.ended(&tool, result.outcome.is_ok());
        }
        self.tool_event(ToolStreamEvent::Result {
            result: result.clone(),
        });
        result
    }

    /// A routed call carried out by the run's steps: what it needs is said
    /// (an approval, an outside answer), and the same events as in process
    /// go out before it.
    async fn stepped(
        &self,
        steps: &dyn RunSteps,
        call: ToolCall,
        route: Route,
        run: LocalRun,
    ) -> ToolResult<ToolOutput> {
        let options = &self.agent.options;
        let kind = match route {
            Route::External { approval } => {
                if approval {
                    self.tool_event(ToolStreamEvent::ApprovalRequested { call: call.clone() });
                }
                self.tool_event(ToolStreamEvent::Call {
                    call: call.clone(),
                    external: true,
                });
                StepKind::External {
                    deadline: options.external_deadline,
                    approval: approval.then_some(options.approval_deadline),
                }
            }
            Route::NeedsApproval => {
                self.tool_event(ToolStreamEvent::ApprovalRequested { call: call.clone() });
                StepKind::NeedsApproval {
                    deadline: options.approval_deadline,
                }
            }
            Route::Local => {
                self.tool_event(ToolStreamEvent::Call {
                    call: call.clone(),
                    external: false,
                });
                StepKind::Local
            }
        };
        steps.tool_call(ToolStep::new(call, kind, run)).await
    }

    /// The name of the run's next decision, about `what`.
    pub(super) fn decision_name(&self, what: &str) -> String {
        let n = self
            .decisions
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("decision {n}: {what}")
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

    /// Whether someone can answer an external call or an approval: a
    /// handler, or a [`control`](super::RuntimeInvocation::control) handle
    /// held outside the handlers. A stream of events alone only observes.
    fn answerable(&self) -> bool {
        self.handlers > 0 || self.control.held_outside()
    }

    /// Whether anybody sees the run's events: a handler, or a stream of
    /// [`events`](super::RuntimeInvocation::events).
    fn observed(&self) -> bool {
        self.emitter.has_sinks()
    }

    /// Waits for a handler's answer, until the deadline or cancellation.
    /// An answer that [`RunControl`] accepted is never lost: once the wait
    /// ends, the channel is closed and whatever arrived before is taken.
    async fn wait<T>(
        &self,
        call_id: &str,
        mut answer: oneshot::Receiver<T>,
        deadline: Duration,
    ) -> ToolResult<T> {
        let cancellation = self.control.cancellation();
        let waiting = self.agent.options.waiting_notice;
        let outcome = tokio::select! {
            biased;
            () = cancellation.cancelled() => Err(ToolError::Cancelled),
            answer = self.notice_while_waiting(call_id, &mut answer, deadline, waiting) => answer,
        };
        if outcome.is_ok() {
            return outcome;
        }
        answer.close();
        match answer.try_recv() {
            Ok(late) => Ok(late),
            Err(_none) => {
                self.control.expire(call_id);
                outcome
            }
        }
    }

    /// Waits up to `deadline`; past `notice` with no answer, says so once
    /// (a `Waiting` event and a warning), since a handler that only logs a
    /// call leaves the run waiting in silence.
    async fn notice_while_waiting<T>(
        &self,
        call_id: &str,
        answer: &mut oneshot::Receiver<T>,
        deadline: Duration,
        notice: Duration,
    ) -> ToolResult<T> {
        let started = tokio::time::Instant::now();
        let until = started + deadline;
        if notice < deadline {
            match tokio::time::timeout(notice, &mut *answer).await {
                Ok(answer) => return answer.map_err(|_dropped| ToolError::Cancelled),
                Err(_elapsed) => {
                    tracing::warn!(
                        call_id,
                        waited = ?notice,
                        ?deadline,
                        "a call is still waiting for a handler's answer"
                    );
                    self.tool_event(ToolStreamEvent::Waiting {
                        call_id: call_id.to_owned(),
                        waited: notice,
                        deadline,
                    });
                }
            }
        }
        match tokio::time::timeout_at(until, answer).await {
            Ok(Ok(answer)) => Ok(answer),
            // The sender is dropped only when the run finishes.
            Ok(Err(_dropped)) => Err(ToolError::Cancelled),
            Err(_elapsed) => Err(ToolError::Timeout { after: deadline }),
        }
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

    fn state(&self, state: RunState) {
        self.emit(EventKind::State(state));
    }

    fn tool_event(&self, event: ToolStreamEvent) {
        self.emit(EventKind::Tool(event));
    }
}

impl RunHooks for Run<'_> {
    fn routes(&self, tool_name: &str) -> bool {
        let guardrails = &self.agent.options.guardrails;
        self.steps.is_some()
            || self.needs_approval(tool_name)
            || !guardrails.tool_call.is_empty()
            || !guardrails.tool_output.is_empty()
            // A call a limit may refuse is counted before it starts.
            || self.lineage.books.limits_calls()
    }

    fn dispatch(
        &self,
        call: ToolCall,
        route: Route,
        run: LocalRun,
    ) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            let tool = call.tool_name.clone();
            if let Err(reached) = self.lineage.books.call(&tool) {
                let error = reached.error();
                let why = ToolError::execution(format!("not run: {error}"));
                crate::sync::lock(&self.tripped).get_or_insert(error);
                return Err(why);
            }
            let outcome = async {
                let (call, run) = self.guard_call(call, run).await?;
                let output = self.carry_out(call.clone(), route, run).await?;
                self.guard_output(call, output).await
            }
            .await;
            self.lineage.books.ended(&tool, outcome.is_ok());
            outcome
        })
    }

    fn needs_approval(&self, tool_name: &str) -> bool {
        let registry = self.agent.runtime.registry();
        let options = &self.agent.options;
        registry.needs_approval(tool_name)
            || options.approval_required.contains(tool_name)
            || (options.approve_destructive
                && registry
                    .spec(tool_name)
                    .is_some_and(|spec| spec.annotations.destructive_hint == Some(true)))
    }

    fn starting(&self, call_id: &str, tool_name: &str, call: &dyn Fn() -> ToolCall) {
        // No limit can refuse it (those calls are routed): counted only.
        let _counted = self.lineage.books.call(tool_name);
        crate::sync::lock(&self.running).insert(call_id.to_owned(), tool_name.to_owned());
        self.announce(call);
    }
}

impl Run<'_> {
    /// Tells observers that a validated local call starts now.
    fn announce(&self, call: &dyn Fn() -> ToolCall) {
        if self.observed() {
            self.tool_event(ToolStreamEvent::Call {
                call: call(),
                external: false,
            });
        }
    }
}

impl Run<'_> {
    /// Carries out a validated call on its `route`: through the run's
    /// steps, or here (an approval, a handler's answer, the tool).
    fn carry_out(
        &self,
        call: ToolCall,
        route: Route,
        run: LocalRun,
    ) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            if let Some(steps) = self.steps {
                return self.stepped(steps, call, route, run).await;
            }
            match route {
                Route::External { approval } => {
                    if approval {
                        self.approve(&call).await?;
                    }
                    self.answer(call).await
                }
                Route::NeedsApproval => {
                    self.approve(&call).await?;
                    self.announce(&|| call.clone());
                    run.run().await
                }
                Route::Local => {
                    self.announce(&|| call.clone());
                    run.run().await
                }
            }
        })
    }

    /// Asks for an approval of a validated call; an error is the call's
    /// result.
    fn approve<'a>(&'a self, call: &'a ToolCall) -> BoxFuture<'a, ToolResult<()>> {
        Box::pin(async move {
            if !self.answerable() {
                return Err(ToolError::ApprovalDenied {
                    reason: "the call needs an approval and nobody is there to give it".to_owned(),
                });
            }
            let decision = self.control.await_approval(&call.call_id);
            self.tool_event(ToolStreamEvent::ApprovalRequested { call: call.clone() });
            let deadline = self.agent.options.approval_deadline;
            match self.wait(&call.call_id, decision, deadline).await {
                Ok(Decision::Approve) => Ok(()),
                Ok(Decision::Deny(reason)) => Err(ToolError::ApprovalDenied { reason }),
                Err(ToolError::Timeout { .. }) => Err(ToolError::ApprovalDenied {
                    reason: format!("nobody approved it within {deadline:?}"),
                }),
                Err(other) => Err(other),
            }
        })
    }

    /// Has a validated call of an external tool answered by a handler.
    fn answer(&self, call: ToolCall) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            if !self.answerable() {
                return Err(ToolError::NotImplemented);
            }
            let call_id = call.call_id.clone();
            let answer = self.control.await_result(&call_id);
            self.tool_event(ToolStreamEvent::Call {
                call,
                external: true,
            });
            let deadline = self.agent.options.external_deadline;
            self.wait(&call_id, answer, deadline).await?
        })
    }
}

/// What one model turn is given, borrowed from the run.
struct TurnInput<'t> {
    index: usize,
    transcript: &'t [Message],
    specs: &'t [ToolSpec],
    strict: &'t BTreeSet<String>,
    output: Option<&'t ToolSpec>,
    deltas: &'t DeltaSink,
}

/// The call ids of a run, kept unique: answers and results are matched by
/// id, and a model may repeat one (or leave it empty) within a turn or
/// across turns. A repeated id gets a suffix, in the transcript too, so
/// that the provider sees each call answered once.
#[derive(Default)]
struct CallIds {
    seen: HashSet<String>,
}

impl CallIds {
    /// Takes the ids of the calls already in `conversation` as used.
    fn seed(&mut self, conversation: &[Message]) {
        for message in conversation {
            if let Message::Assistant(reply) = message {
                self.seen
                    .extend(reply.tool_calls.iter().map(|call| call.call_id.clone()));
            }
        }
    }

    /// Renames repeated ids in `reply`, and the reasoning tied to a renamed
    /// call with it: the k-th call of an id keeps the k-th piece of
    /// reasoning placed on that id.
    fn make_unique(&mut self, reply: &mut AssistantMessage) {
        let mut renamed: Vec<(String, usize, String)> = Vec::new();
        let mut occurrences: HashMap<String, usize> = HashMap::new();
        for call in &mut reply.tool_calls {
            let original = call.call_id.clone();
            let nth = occurrences.entry(original.clone()).or_default();
            *nth += 1;
            if call.call_id.is_empty() {
                call.call_id = "call".to_owned();
            }
            if !self.seen.contains(&call.call_id) {
                self.seen.insert(call.call_id.clone());
            } else {
                let unique = (2..)
                    .map(|n| format!("{}_{n}", call.call_id))
                    .find(|id| !self.seen.contains(id))
                    .expect("an unused suffix exists");
                self.seen.insert(unique.clone());
                call.call_id = unique;
            }
            if call.call_id != original {
                renamed.push((original, *nth, call.call_id.clone()));
            }
        }
        let mut seen_places: HashMap<String, usize> = HashMap::new();
        for piece in &mut reply.reasoning {
            let ReasoningPlace::Call { call_id } = &mut piece.place else {
                continue;
            };
            let nth = seen_places.entry(call_id.clone()).or_default();
            *nth += 1;
            if let Some((_, _, unique)) = renamed
                .iter()
                .find(|(original, k, _)| original == call_id && k == nth)
            {
                call_id.clone_from(unique);
            }
        }
    }
}

pub(super) fn result_message(result: &ToolCallResult) -> Message {
    Message::ToolResult(ToolResultMessage::from(result))
}

/// Waits until `deadline`; forever without one.
async fn until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

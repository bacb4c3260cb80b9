//! One run's plumbing: subscribed handlers and streams, the control handle,
//! and the future that drives the loop (`driver`).

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::answers::Answers;
use super::books::{Books, Lineage};
use super::control::RunControl;
use super::events::{spawn_handler, Emitter, Envelope, EventKind, EventStream, Handler};
use super::handoff::{with_instructions, Targets};
use super::part::{Looping, Part, Run};
use super::stage::Ending;
use super::state::{Progress, RunState, Slot};
use super::steps::RunSteps;
use super::{Agent, RunError, RunOutcome};
use crate::conversation::Message;

impl Agent {
    /// Makes a run of `conversation`. Subscribe handlers and streams on the
    /// invocation, then `.await` it to run.
    pub fn invoke(&self, conversation: impl IntoIterator<Item = Message>) -> RuntimeInvocation {
        RuntimeInvocation::new(self.clone(), conversation.into_iter().collect())
    }

    /// Runs `conversation` for a final answer of type `T`.
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { ok: bool, reason: String }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
    ///     "c1",
    ///     "final_answer",
    ///     r#"{"ok": true, "reason": "tests pass"}"#,
    /// )])]);
    /// let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    /// let verdict: Verdict = agent.output([Message::user("Is it ok?")]).await.unwrap();
    /// assert!(verdict.ok);
    /// # }
    /// ```
    pub async fn output<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &self,
        conversation: impl IntoIterator<Item = Message>,
    ) -> Result<T, RunError> {
        let outcome = self.clone().with_output::<T>().invoke(conversation).await;
        match outcome {
            RunOutcome::Failed { error, .. } => Err(error),
            RunOutcome::Cancelled { .. } => Err(RunError::Output {
                message: "the run was cancelled before the final answer".to_owned(),
            }),
            completed => completed.output(),
        }
    }

    /// Goes on with a run from `state` (see
    /// [`RuntimeInvocation::pause_at_waits`]): its waits answered as the
    /// state says (a wait left unanswered is asked again: of the handlers,
    /// or by stopping again), then the run goes on as if it had never
    /// stopped, with its id, its events numbered on, its books, counts and
    /// clock. Resume on the agent the run was started on: the state names
    /// the agent holding it by the handoffs from there. A state of another
    /// format, or naming a handoff the agent has not, ends the run with
    /// [`RunError::Resume`].
    pub fn resume(&self, state: RunState) -> RuntimeInvocation {
        RuntimeInvocation::resumed(self.clone(), state)
    }
}

/// One run, made by [`Agent::invoke`] before it starts.
///
/// Subscribe with [`on`](Self::on) (each handler gets its own copy of every
/// [`Envelope`], in order, on its own task) and [`events`](Self::events)
/// (a stream), then `.await` the invocation: that runs it and gives the
/// [`RunOutcome`]. Handlers run on Tokio tasks, so the invocation must be
/// awaited inside a Tokio runtime with timers enabled.
pub struct RuntimeInvocation {
    agent: Agent,
    conversation: Vec<Message>,
    emitter: Arc<Emitter>,
    control: RunControl,
    handlers: Mutex<Vec<(Handler, futures::channel::mpsc::UnboundedReceiver<Envelope>)>>,
    /// Where the run stands in a tree of agents; `None` for a root.
    lineage: Option<Lineage>,
    /// The state the run goes on from, for a run resumed.
    resumed: Option<RunState>,
    /// Whether the run stops at its waits.
    pausing: bool,
}

impl RuntimeInvocation {
    pub(crate) fn new(agent: Agent, conversation: Vec<Message>) -> Self {
        let control = RunControl::new(agent.runtime().limits().clone());
        Self {
            agent,
            conversation,
            emitter: Arc::new(Emitter::new(new_run_id().into())),
            control,
            handlers: Mutex::new(Vec::new()),
            lineage: None,
            resumed: None,
            pausing: false,
        }
    }

    /// The run going on from `state`: its id, and its events numbered on.
    pub(crate) fn resumed(agent: Agent, state: RunState) -> Self {
        let mut invocation = Self::new(agent, Vec::new());
        invocation.emitter = Arc::new(Emitter::new(state.run_id.as_str().into()));
        invocation.emitter.go_on_after(state.sequence);
        invocation.resumed = Some(state);
        invocation
    }

    /// Stops the run at its waits rather than waiting: when a call needs
    /// an approval or an external tool's answer, the run ends
    /// [`Paused`](super::RunOutcome::Paused) once the round's other calls
    /// have their results, with its [`RunState`]. Answer the waits there
    /// ([`RunState::approve`], [`RunState::resolve`], …), keep the state
    /// as long as it takes (it is serde data), and go on with
    /// [`Agent::resume`](super::Agent::resume), in this process or
    /// another. A paused wait has no deadline: it waits as long as its
    /// state is kept.
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{tool, Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    ///
    /// /// Refund an order.
    /// #[tool(needs_approval)]
    /// fn refund(order: u32) -> String { format!("refunded {order}") }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let agent = Agent::new(
    ///     ScriptedModel::new([
    ///         ScriptedTurn::tool_calls([ToolCall::new("c1", "refund", r#"{"order": 7}"#)]),
    ///         ScriptedTurn::text("Refunded.").expect_ok("c1", "refunded 7"),
    ///     ]),
    ///     ToolRuntime::new(ToolRegistry::new().with(Refund).unwrap()),
    /// );
    /// let outcome = agent.invoke([Message::user("Refund order 7")]).pause_at_waits().await;
    /// let mut state = outcome.into_paused().expect("the refund waits for an approval");
    /// // Later, anywhere: the state is plain data.
    /// let saved = serde_json::to_string(&state).unwrap();
    /// let mut state: behest::run::RunState = serde_json::from_str(&saved).unwrap();
    /// state.approve("c1").unwrap();
    /// let outcome = agent.resume(state).await;
    /// assert_eq!(outcome.text(), Some("Refunded."));
    /// # }
    /// ```
    #[must_use]
    pub fn pause_at_waits(mut self) -> Self {
        self.pausing = true;
        self
    }

    /// The run's emitter, for an agent run as a tool to nest its events.
    pub(crate) fn emitter(&self) -> Arc<Emitter> {
        self.emitter.clone()
    }

    /// The run as one of a tree of agents.
    pub(crate) fn with_lineage(mut self, lineage: Option<Lineage>) -> Self {
        self.lineage = lineage;
        self
    }

    /// Subscribes a handler: it receives every envelope of the run and a
    /// [`RunControl`] to answer external calls and approvals. A handler that
    /// panics is logged and keeps receiving; the run goes on.
    pub fn on(&self, handler: impl Fn(Envelope, RunControl) + Send + Sync + 'static) -> &Self {
        let events = self.emitter.subscribe();
        crate::sync::lock(&self.handlers).push((Arc::new(handler), events));
        self
    }

    /// A stream of every envelope of the run, for async consumers. Its
    /// reader answers external calls and approvals through
    /// [`control`](Self::control), as a handler does through its own; a
    /// stream alone observes, and answers nothing.
    pub fn events(&self) -> EventStream {
        EventStream::new(self.emitter.subscribe())
    }

    /// The run's typed answer as it streams: partial values of `T` while
    /// the model writes it, then the validated answer (see
    /// [`PartialOutput`](super::PartialOutput)). For a run asked for a
    /// typed answer ([`Agent::with_output`](super::Agent::with_output));
    /// the model streams its turns when it can
    /// ([`Model::complete`](super::Model::complete) with deltas).
    ///
    /// ```
    /// use behest::run::{OutputUpdate, ScriptedTurn};
    /// use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    /// use futures::StreamExt;
    ///
    /// #[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
    /// struct Title { title: String }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
    ///     "c1", "final_answer", r#"{"title": "Rust"}"#,
    /// )])]);
    /// let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new())).with_output::<Title>();
    /// let run = agent.invoke([Message::user("A title?")]);
    /// let updates = run.partial_output::<Title>();
    /// run.await;
    /// let updates: Vec<_> = updates.collect().await;
    /// assert!(matches!(updates.last(), Some(OutputUpdate::Final(Title { title })) if title == "Rust"));
    /// # }
    /// ```
    pub fn partial_output<T: serde::de::DeserializeOwned>(&self) -> super::PartialOutput<T> {
        let options = self.agent.options();
        let native =
            options.final_output.is_some() && self.agent.model.supports_structured_output();
        super::PartialOutput::new(self.events(), native)
    }

    /// A handle to steer the run from outside its handlers. While it (or a
    /// clone of it) lives, the run counts on its holder to answer external
    /// calls and approvals, as it does on a handler: a stream from
    /// [`events`](Self::events) alone only observes.
    pub fn control(&self) -> RunControl {
        self.control.outside_handle()
    }

    /// Cancels the run; see [`RunControl::cancel`].
    pub fn cancel(&self) {
        self.control.cancel();
    }

    /// The run's id, as in its envelopes.
    pub fn run_id(&self) -> Arc<str> {
        self.emitter.run_id()
    }

    /// Runs with `steps` carrying out each model turn and tool call (see
    /// [`RunSteps`]): the run a durable engine drives. Handlers, streams
    /// and [`control`](Self::control) work as in an awaited invocation.
    pub async fn drive_with(self, steps: &dyn RunSteps) -> RunOutcome {
        let span = self.root_span();
        tracing::Instrument::instrument(self.run_on(Some(steps)), span).await
    }

    async fn run(self) -> RunOutcome {
        let span = self.root_span();
        tracing::Instrument::instrument(self.run_on(None), span).await
    }

    /// The OpenTelemetry GenAI span of the agent a run starts on; an agent
    /// called as a tool has its own, made by its call.
    fn root_span(&self) -> tracing::Span {
        if self.lineage.is_some() {
            return tracing::Span::none();
        }
        let name = self.agent.options.name.as_deref().unwrap_or("agent");
        tracing::info_span!(
            "invoke_agent",
            otel.name = format!("invoke_agent {name}"),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = name,
            behest.run.id = &*self.emitter.run_id(),
            behest.agent.depth = 0,
        )
    }

    async fn run_on(mut self, steps: Option<&dyn RunSteps>) -> RunOutcome {
        let handlers = std::mem::take(&mut *crate::sync::lock(&self.handlers));
        let tasks: Vec<_> = handlers
            .into_iter()
            .map(|(handler, events)| spawn_handler(handler, events, self.control.clone()))
            .collect();
        // The run's books: written into its caller's too, for an agent run
        // as a tool.
        let limits = self.agent.options.usage_limits.clone();
        let lineage = match self.lineage.clone() {
            Some(caller) => Lineage {
                books: caller.books.nested(limits),
                booked: Default::default(),
                stops: Default::default(),
                ..caller
            },
            None => Lineage::root(
                self.agent.options.max_agent_depth,
                Books::root(limits),
                self.emitter.clone(),
                Answers::root(
                    self.control.clone(),
                    tasks.len(),
                    &self.agent.options,
                    self.pausing && steps.is_none(),
                ),
            ),
        };
        // The rules, limits and the clock of the agent the run was started
        // on hold across handoffs.
        let first = self.agent.options.clone();
        let outcome = match self.resumed.take() {
            None => {
                let conversation = std::mem::take(&mut self.conversation);
                let start = Start {
                    agent: self.agent.clone(),
                    holder: Vec::new(),
                    looping: Looping::new(
                        with_instructions(&self.agent, conversation),
                        Progress::default(),
                    ),
                    round: None,
                    started: tokio::time::Instant::now(),
                    started_at: SystemTime::now(),
                };
                self.hand_on(start, &lineage, &first, steps)
                    .await
            }
            // A journal's run is played again from its start: it cannot go
            // on from a state.
            Some(state) if steps.is_some() => RunOutcome::failed(
                RunError::Resume {
                    message: "a run driven by its steps (a durable engine) goes on from its journal, not from a state".to_owned(),
                },
                state.transcript,
            ),
            Some(state) => match self.going_on(state, &lineage) {
                Ok(start) => {
                    self.hand_on(start, &lineage, &first, steps)
                        .await
                }
                Err((error, transcript)) => RunOutcome::failed(error, transcript),
            },
        };
        // What the run spent is told once, from its books.
        let outcome = outcome.with_spent(lineage.books.spent());
        self.control.finish();
        if let RunOutcome::Completed { text, .. } = &outcome {
            self.emitter.emit(EventKind::Output(text.clone()));
        }
        self.emitter.emit(EventKind::State(outcome.state()));
        // A run that goes on from its state numbers its events after the
        // last this one told, its `Paused` phase included.
        let mut outcome = outcome;
        if let RunOutcome::Paused { state } = &mut outcome {
            state.sequence = self.emitter.sequence();
        }
        self.emitter.close();
        // Handlers see every event before the outcome is returned.
        for task in tasks {
            let _joined = task.await;
        }
        outcome
    }
}

/// Where an agent's part of a run starts: from the beginning, or from a
/// state.
struct Start {
    agent: Agent,
    holder: Vec<String>,
    looping: Looping,
    /// The round the run stopped at, for a run going on from its state.
    round: Option<Vec<Slot>>,
    started: tokio::time::Instant,
    started_at: SystemTime,
}

impl RuntimeInvocation {
    /// The run's parts, agent after agent as the model hands it on.
    async fn hand_on(
        &self,
        start: Start,
        lineage: &Lineage,
        first: &super::RunOptions,
        steps: Option<&dyn RunSteps>,
    ) -> RunOutcome {
        let Start {
            mut agent,
            mut holder,
            mut looping,
            mut round,
            started,
            started_at,
        } = start;
        loop {
            let run = Run::new(Part {
                agent: &agent,
                emitter: &self.emitter,
                control: &self.control,
                steps,
                lineage: lineage.clone(),
                first,
                started,
                started_at,
                holder: &holder,
                // A nested run stops where its root stops.
                pausing: lineage.answers.pausing,
                decisions_before: looping.progress.decisions,
            });
            let ending = match round.take() {
                Some(round) => match run.resume_round(&mut looping, round).await {
                    Some(ending) => ending,
                    None => run.go_on(&mut looping).await,
                },
                None => run.drive(&mut looping).await,
            };
            looping.progress.decisions = run.decisions.load(std::sync::atomic::Ordering::Relaxed);
            let to = match ending {
                Ending::End(outcome) => return outcome,
                Ending::HandOff(to) => to,
            };
            holder.push(to.name);
            agent = to.agent;
            let conversation = to.conversation;
            // The next agent counts its own reminders and compaction.
            let progress = Progress {
                reminders: None,
                compacted: false,
                ..looping.progress.clone()
            };
            looping = Looping::new(conversation, progress);
        }
    }

    /// Where a run goes on from `state`: the agent that holds it, its
    /// books and clock as they were. The run's error when it cannot.
    fn going_on(
        &self,
        state: RunState,
        lineage: &Lineage,
    ) -> Result<Start, (RunError, Vec<Message>)> {
        let refuse = |message: String, transcript| Err((RunError::Resume { message }, transcript));
        if state.format != RunState::FORMAT {
            let message = format!(
                "it is of format {}, and this version of behest reads format {}",
                state.format,
                RunState::FORMAT
            );
            return refuse(message, state.transcript);
        }
        let mut agent = self.agent.clone();
        for name in &state.holder {
            let next = agent
                .options
                .features
                .get::<Targets>()
                .and_then(|targets| targets.named(name))
                .map(|handoff| handoff.agent.clone());
            match next {
                Some(next) => agent = next,
                None => {
                    let message = format!(
                        "the run was handed to `{name}`, which is not among the handoffs of the agent resumed"
                    );
                    return refuse(message, state.transcript);
                }
            }
        }
        lineage.books.restore(&state.spent);
        let elapsed = state.elapsed();
        let now = tokio::time::Instant::now();
        Ok(Start {
            agent,
            holder: state.holder,
            looping: Looping::new(state.transcript, state.progress),
            round: Some(state.round),
            started: now.checked_sub(elapsed).unwrap_or(now),
            started_at: state.started_at,
        })
    }
}

impl IntoFuture for RuntimeInvocation {
    type Output = RunOutcome;
    type IntoFuture = Pin<Box<dyn Future<Output = RunOutcome> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.run())
    }
}

impl std::fmt::Debug for RuntimeInvocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeInvocation")
            .field("run_id", &self.emitter.run_id())
            .finish_non_exhaustive()
    }
}

fn new_run_id() -> String {
    super::ids::fresh_id("run")
}

//! One run's plumbing: subscribed handlers and streams, the control handle,
//! and the future that drives the loop (`driver`).

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::control::RunControl;
use super::driver::Run;
use super::events::{spawn_handler, Emitter, Envelope, EventKind, EventStream, Handler};
use super::steps::RunSteps;
use super::{Agent, RunOutcome};
use crate::conversation::Message;

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
    lineage: Option<super::agent_tool::Lineage>,
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
        }
    }

    /// The run's emitter, for an agent run as a tool to nest its events.
    pub(crate) fn emitter(&self) -> Arc<Emitter> {
        self.emitter.clone()
    }

    /// The run as one of a tree of agents.
    pub(crate) fn with_lineage(mut self, lineage: Option<super::agent_tool::Lineage>) -> Self {
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
        self.run_on(Some(steps)).await
    }

    async fn run(self) -> RunOutcome {
        self.run_on(None).await
    }

    async fn run_on(self, steps: Option<&dyn RunSteps>) -> RunOutcome {
        let handlers =
            std::mem::take(&mut *self.handlers.lock().unwrap_or_else(|p| p.into_inner()));
        let tasks: Vec<_> = handlers
            .into_iter()
            .map(|(handler, events)| spawn_handler(handler, events, self.control.clone()))
            .collect();
        // The run's books: written into its caller's too, for an agent run
        // as a tool.
        let limits = self.agent.options.usage_limits.clone();
        let lineage = match self.lineage.clone() {
            Some(caller) => super::agent_tool::Lineage {
                books: caller.books.nested(limits),
                ..caller
            },
            None => super::agent_tool::Lineage::root(
                &self.agent,
                super::books::Books::root(limits),
                self.emitter.clone(),
            ),
        };
        let mut agent = self.agent.clone();
        // The rules, limits and the clock of the agent the run was
        // started on hold across handoffs.
        let first = self.agent.options.clone();
        let started = tokio::time::Instant::now();
        let mut conversation = super::handoff::with_instructions(&agent, self.conversation);
        let mut counts = super::driver::Counts::default();
        let mut decisions = 0;
        let mut handoffs = 0;
        let outcome = loop {
            let run = Run {
                lineage: lineage.clone(),
                agent: &agent,
                emitter: &self.emitter,
                control: &self.control,
                handlers: tasks.len(),
                steps,
                tripped: std::sync::Mutex::new(None),
                handed_off: std::sync::Mutex::new(None),
                offered: std::sync::Mutex::new(None),
                decisions: std::sync::atomic::AtomicUsize::new(decisions),
                running: std::sync::Mutex::default(),
                first: &first,
                started,
            };
            let outcome = run.drive(conversation, &mut counts).await;
            decisions = run.decisions.load(std::sync::atomic::Ordering::Relaxed);
            let handed_off = crate::sync::lock(&run.handed_off).take();
            let Some(to) = handed_off else {
                break outcome;
            };
            let transcript = match outcome {
                RunOutcome::Completed { transcript, .. } => transcript,
                other => break other,
            };
            handoffs += 1;
            if handoffs > super::handoff::MAX_HANDOFFS {
                let error = super::RunError::Handoffs {
                    max: super::handoff::MAX_HANDOFFS,
                };
                break RunOutcome::failed(error, transcript);
            }
            run.emit(EventKind::Handoff {
                to: to.name.clone(),
            });
            conversation = match super::handoff::pass_on(transcript, &agent, &to) {
                Ok(conversation) => conversation,
                Err((error, transcript)) => break RunOutcome::failed(error, transcript),
            };
            // A filter must leave every result beside its call.
            if let Some(why) = super::context::broken_pairs(&conversation) {
                let error = super::RunError::Context {
                    message: format!("the input filter of the handoff to {}: {why}", to.name),
                };
                break RunOutcome::failed(error, conversation);
            }
            agent = to.agent;
        };
        // What the run spent is told once, from its books.
        let outcome = outcome.with_spent(lineage.books.spent());
        self.control.finish();
        if let RunOutcome::Completed { text, .. } = &outcome {
            self.emitter.emit(EventKind::Output(text.clone()));
        }
        self.emitter.emit(EventKind::State(outcome.state()));
        self.emitter.close();
        // Handlers see every event before the outcome is returned.
        for task in tasks {
            let _joined = task.await;
        }
        outcome
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
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!("run_{nanos:x}_{}", COUNTER.fetch_add(1, Ordering::Relaxed))
}

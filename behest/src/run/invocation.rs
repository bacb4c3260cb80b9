//! One run: subscribed handlers and streams, then the loop itself.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::future::join_all;
use tokio::sync::oneshot;

use super::control::{Decision, RunControl};
use super::conversation::{Message, ToolResultMessage};
use super::events::{
    spawn_handler, Emitter, Envelope, EventKind, EventStream, Handler, RunState, ToolStreamEvent,
};
use super::{Agent, RunError, RunOutcome};
use crate::context::ProgressSink;
use crate::runtime::{CallOptions, ToolCall, ToolCallResult};
use crate::tool::{ToolError, ToolOutput, ToolResult, ToolSpec};

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
}

impl RuntimeInvocation {
    pub(crate) fn new(agent: Agent, conversation: Vec<Message>) -> Self {
        Self {
            agent,
            conversation,
            emitter: Arc::new(Emitter::new(new_run_id().into())),
            control: RunControl::new(),
            handlers: Mutex::new(Vec::new()),
        }
    }

    /// Subscribes a handler: it receives every envelope of the run and a
    /// [`RunControl`] to answer external calls and approvals. A handler that
    /// panics is logged and keeps receiving; the run goes on.
    pub fn on(&self, handler: impl Fn(Envelope, RunControl) + Send + Sync + 'static) -> &Self {
        let events = self.emitter.subscribe();
        self.handlers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push((Arc::new(handler), events));
        self
    }

    /// A stream of every envelope of the run, for async consumers.
    pub fn events(&self) -> EventStream {
        EventStream::new(self.emitter.subscribe())
    }

    /// A handle to steer the run from outside its handlers.
    pub fn control(&self) -> RunControl {
        self.control.clone()
    }

    /// Cancels the run; see [`RunControl::cancel`].
    pub fn cancel(&self) {
        self.control.cancel();
    }

    /// The run's id, as in its envelopes.
    pub fn run_id(&self) -> Arc<str> {
        self.emitter.run_id()
    }

    async fn run(self) -> RunOutcome {
        let handlers =
            std::mem::take(&mut *self.handlers.lock().unwrap_or_else(|p| p.into_inner()));
        let has_handlers = !handlers.is_empty();
        let tasks: Vec<_> = handlers
            .into_iter()
            .map(|(handler, events)| spawn_handler(handler, events, self.control.clone()))
            .collect();
        let run = Run {
            agent: &self.agent,
            emitter: &self.emitter,
            control: &self.control,
            has_handlers,
        };
        let outcome = run.drive(self.conversation).await;
        self.control.finish();
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

/// The loop of one run.
struct Run<'a> {
    agent: &'a Agent,
    emitter: &'a Arc<Emitter>,
    control: &'a RunControl,
    has_handlers: bool,
}

impl Run<'_> {
    async fn drive(&self, mut transcript: Vec<Message>) -> RunOutcome {
        let specs: Vec<ToolSpec> = self.agent.runtime.registry().specs().cloned().collect();
        let cancellation = self.control.cancellation().clone();
        let mut rounds = 0;
        loop {
            self.state(RunState::AwaitingModel);
            let reply = tokio::select! {
                biased;
                () = cancellation.cancelled() => return RunOutcome::Cancelled { transcript },
                reply = self.agent.model.respond_dyn(&transcript, &specs) => reply,
            };
            let reply = match reply {
                Ok(reply) => reply,
                Err(error) => return failed(RunError::Model(error), transcript),
            };
            self.emitter.emit(EventKind::ModelMessage(reply.clone()));
            let calls = reply.tool_calls.clone();
            transcript.push(Message::Assistant(reply.clone()));
            if calls.is_empty() {
                let text = reply.text.unwrap_or_default();
                return RunOutcome::Completed { text, transcript };
            }
            rounds += 1;
            if rounds > self.agent.options.max_steps {
                let max_steps = self.agent.options.max_steps;
                return failed(RunError::MaxStepsExceeded { max_steps }, transcript);
            }

            self.state(RunState::ExecutingTools);
            let results = join_all(calls.into_iter().map(|call| self.call(call))).await;
            if cancellation.is_cancelled() {
                return RunOutcome::Cancelled { transcript };
            }
            let unanswered = results.iter().find(|result| {
                matches!(result.outcome, Err(ToolError::NotImplemented))
                    && self.agent.runtime.registry().is_external(&result.tool_name)
            });
            let no_handler = unanswered.map(|result| RunError::NoHandler {
                tool_name: result.tool_name.clone(),
                call_id: result.call_id.clone(),
            });
            transcript.extend(
                results
                    .iter()
                    .map(|result| Message::ToolResult(ToolResultMessage::from(result))),
            );
            if let Some(error) = no_handler {
                return failed(error, transcript);
            }
        }
    }

    /// One tool call, from validation to its `Result` event.
    async fn call(&self, call: ToolCall) -> ToolCallResult {
        let outcome = self.answer(&call).await;
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

    async fn answer(&self, call: &ToolCall) -> ToolResult<ToolOutput> {
        let runtime = &self.agent.runtime;
        let prepared = runtime.prepare(&call.tool_name, call.arguments.clone())?;
        let validated = ToolCall {
            call_id: call.call_id.clone(),
            tool_name: call.tool_name.clone(),
            arguments: prepared.arguments().clone(),
        };
        if self.needs_approval(&call.tool_name) {
            self.approval(&validated).await?;
        }
        if runtime.registry().is_external(&call.tool_name) {
            return self.external(validated).await;
        }
        self.tool_event(ToolStreamEvent::Call {
            call: validated,
            external: false,
        });
        let emitter = self.emitter.clone();
        let options = CallOptions {
            cancellation: Some(self.control.cancellation().clone()),
            progress: Some(ProgressSink::new(move |call_id, progress| {
                emitter.emit(EventKind::Tool(ToolStreamEvent::Progress {
                    call_id: call_id.to_owned(),
                    progress,
                }));
            })),
        };
        runtime
            .execute_prepared(prepared, &call.call_id, options)
            .await
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

    /// Asks the handlers for an approval and waits for it.
    async fn approval(&self, call: &ToolCall) -> ToolResult<()> {
        if !self.has_handlers {
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
    }

    /// Hands an external call to the handlers and waits for their answer.
    async fn external(&self, call: ToolCall) -> ToolResult<ToolOutput> {
        if !self.has_handlers {
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
    }

    /// Waits for a handler's answer, until the deadline or cancellation.
    async fn wait<T>(
        &self,
        call_id: &str,
        answer: oneshot::Receiver<T>,
        deadline: Duration,
    ) -> ToolResult<T> {
        let cancellation = self.control.cancellation();
        let outcome = tokio::select! {
            biased;
            () = cancellation.cancelled() => Err(ToolError::Cancelled),
            answer = tokio::time::timeout(deadline, answer) => match answer {
                Ok(Ok(answer)) => Ok(answer),
                // The sender is dropped only when the run finishes.
                Ok(Err(_dropped)) => Err(ToolError::Cancelled),
                Err(_elapsed) => Err(ToolError::Timeout { after: deadline }),
            },
        };
        if outcome.is_err() {
            self.control.expire(call_id);
        }
        outcome
    }

    fn state(&self, state: RunState) {
        self.emitter.emit(EventKind::State(state));
    }

    fn tool_event(&self, event: ToolStreamEvent) {
        self.emitter.emit(EventKind::Tool(event));
    }
}

fn failed(error: RunError, transcript: Vec<Message>) -> RunOutcome {
    tracing::warn!(%error, "run failed");
    RunOutcome::Failed { error, transcript }
}

//! What a run tells its observers: envelopes of events, in one order.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::channel::mpsc::{unbounded, UnboundedReceiver, UnboundedSender};
use futures::StreamExt;
use serde::Serialize;

use super::control::RunControl;
use crate::conversation::AssistantMessage;
use crate::tool::Progress;
use crate::tool::{ToolCall, ToolCallResult};

/// The phases a run goes through (its [`EventKind::State`] events).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum RunPhase {
    /// Waiting for the model's next message.
    AwaitingModel,
    /// Running the tool calls of the model's last message.
    ExecutingTools,
    /// The model gave its final answer.
    Completed,
    /// The run stopped on an error.
    Failed,
    /// The run was cancelled.
    Cancelled,
    /// The run stopped at its waits and gave back its
    /// [`RunState`](super::RunState), to go on from there
    /// ([`RuntimeInvocation::pause_at_waits`](super::RuntimeInvocation::pause_at_waits)).
    Paused,
}

impl RunPhase {
    /// Whether the run is over in this phase (a paused run goes on once
    /// resumed).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

/// One event of a run, with its place in the run's order.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The run it belongs to.
    pub run_id: Arc<str>,
    /// Its position among the run's events, from 1, without gaps.
    pub sequence: u64,
    /// When it was emitted.
    pub timestamp: SystemTime,
    /// What happened.
    pub kind: EventKind,
}

/// What happened. Serialized as `{"type": .., "value": ..}`, for a UI
/// that follows a run from elsewhere.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum EventKind {
    /// The run entered a phase.
    State(RunPhase),
    /// The model sent a message.
    ModelMessage(AssistantMessage),
    /// A piece of the model's message while it streams; the whole message
    /// follows as [`ModelMessage`](EventKind::ModelMessage).
    ModelDelta(crate::conversation::ModelDelta),
    /// A tool call progressed.
    Tool(ToolStreamEvent),
    /// A guardrail gave its verdict.
    Guardrail(super::GuardrailEvent),
    /// The run's final answer, as the run completes with it: its text, or
    /// a typed answer's JSON. The `Completed` state follows.
    Output(String),
    /// An event of an agent this run called as a tool, nested under the
    /// call.
    Agent(super::AgentEvent),
    /// The conversation neared the model's context window and was
    /// compacted ([`Agent::context`](super::Agent::context)) before the
    /// next request: about how many tokens it took before and after.
    Compacted {
        /// The estimate before.
        before: u64,
        /// The estimate after.
        after: u64,
    },
    /// The model handed the conversation to another agent
    /// ([`Agent::handoff`](super::Agent::handoff)); the run goes on there.
    Handoff {
        /// The agent's name.
        to: String,
    },
}

impl EventKind {
    /// For an event that asks for an answer (an approval requested, an
    /// external call), what the call is answered by through the root
    /// run's [`RunControl`]: its id for a call of the run itself, its path
    /// for a call of an agent the run called as a tool, each step
    /// `name#call_id` (`billing#c3/refund#c1`). `None` for other events.
    ///
    /// ```
    /// use behest::run::{AgentEvent, EventKind, ToolStreamEvent};
    /// use behest::ToolCall;
    ///
    /// let asked = EventKind::Tool(ToolStreamEvent::ApprovalRequested {
    ///     call: ToolCall::new("c1", "refund", "{}"),
    /// });
    /// assert_eq!(asked.call_path().as_deref(), Some("c1"));
    /// ```
    pub fn call_path(&self) -> Option<String> {
        match self {
            EventKind::Agent(_) => self.step_path(),
            _ => self.asked().map(|call| call.call_id.clone()),
        }
    }

    /// The path of the call below an agent's call.
    fn step_path(&self) -> Option<String> {
        match self {
            EventKind::Agent(event) => {
                let below = event.kind.step_path()?;
                Some(format!("{}#{}/{below}", event.agent, event.call_id))
            }
            _ => self
                .asked()
                .map(|call| super::answers::step(&call.tool_name, &call.call_id)),
        }
    }

    /// The call an event asks an answer for.
    fn asked(&self) -> Option<&crate::tool::ToolCall> {
        match self {
            EventKind::Tool(ToolStreamEvent::ApprovalRequested { call })
            | EventKind::Tool(ToolStreamEvent::Call {
                call,
                external: true,
            }) => Some(call),
            _ => None,
        }
    }
}

/// The life of one tool call.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolStreamEvent {
    /// A validated call is about to run. For an external tool
    /// (`external: true`) a handler answers it with
    /// [`RunControl::resolve`]; its arguments are the decoded object.
    Call {
        /// The call.
        call: ToolCall,
        /// Whether a handler must answer it.
        external: bool,
    },
    /// The call needs an approval: a handler answers with
    /// [`RunControl::approve`] or [`RunControl::deny`].
    ApprovalRequested {
        /// The call awaiting approval.
        call: ToolCall,
    },
    /// The tool reported progress.
    Progress {
        /// The call reporting.
        call_id: String,
        /// The report.
        progress: Progress,
    },
    /// An external call or an approval has waited this long with no
    /// answer; the run keeps waiting until the deadline. Said once per
    /// wait, after [`RunOptions::waiting_notice`](super::RunOptions::waiting_notice).
    Waiting {
        /// The waiting call.
        call_id: String,
        /// How long it has waited.
        waited: std::time::Duration,
        /// How long it will wait in all.
        deadline: std::time::Duration,
    },
    /// The call finished; every call ends with exactly one.
    Result {
        /// Its result.
        result: ToolCallResult,
    },
}

/// A subscribed handler.
pub(crate) type Handler = Arc<dyn Fn(Envelope, RunControl) + Send + Sync>;

/// Numbers events and hands every sink its own copy, in order.
pub(crate) struct Emitter {
    run_id: Arc<str>,
    state: Mutex<EmitterState>,
}

struct EmitterState {
    sequence: u64,
    sinks: Vec<UnboundedSender<Envelope>>,
}

impl Emitter {
    pub fn new(run_id: Arc<str>) -> Self {
        Self {
            run_id,
            state: Mutex::new(EmitterState {
                sequence: 0,
                sinks: Vec::new(),
            }),
        }
    }

    pub fn run_id(&self) -> Arc<str> {
        self.run_id.clone()
    }

    /// Numbers the events from after `sequence`: a run that goes on from
    /// its state goes on with its numbers.
    pub fn go_on_after(&self, sequence: u64) {
        self.lock().sequence = sequence;
    }

    /// How many events were numbered.
    pub fn sequence(&self) -> u64 {
        self.lock().sequence
    }

    /// A new sink that receives every event from now on.
    pub fn subscribe(&self) -> UnboundedReceiver<Envelope> {
        let (sender, receiver) = unbounded();
        self.lock().sinks.push(sender);
        receiver
    }

    pub fn emit(&self, kind: EventKind) {
        // Numbering and sending under one lock keeps every sink's order the
        // order of the sequence numbers.
        let mut state = self.lock();
        state.sequence = state.sequence.saturating_add(1);
        let envelope = Envelope {
            run_id: self.run_id.clone(),
            sequence: state.sequence,
            timestamp: SystemTime::now(),
            kind,
        };
        state
            .sinks
            .retain(|sink| sink.unbounded_send(envelope.clone()).is_ok());
    }

    /// Whether some sink is still read: a handler, or a stream not dropped.
    pub fn has_sinks(&self) -> bool {
        self.lock().sinks.iter().any(|sink| !sink.is_closed())
    }

    /// Closes every sink: streams end once they have delivered the rest.
    pub fn close(&self) {
        self.lock().sinks.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, EmitterState> {
        // A poisoned lock only means a panic elsewhere while sending; the
        // state itself is always consistent.
        crate::sync::lock(&self.state)
    }
}

/// Runs a handler on its own task, one envelope at a time, in order. A
/// panic in the handler is logged and the handler keeps receiving.
pub(crate) fn spawn_handler(
    handler: Handler,
    mut events: UnboundedReceiver<Envelope>,
    control: RunControl,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(envelope) = events.next().await {
            let sequence = envelope.sequence;
            // `from_call` in the handler checks with the runtime's limits.
            let limits = control.limits().clone();
            let call = AssertUnwindSafe(|| {
                crate::limits::with_limits(limits, || handler(envelope, control.clone()));
            });
            if std::panic::catch_unwind(call).is_err() {
                tracing::error!(sequence, "a run handler panicked; the run goes on");
            }
        }
    })
}

/// The events of a run as a [`Stream`](futures::Stream), for async
/// consumers. Ends when the run is over and every event was delivered.
#[derive(Debug)]
pub struct EventStream {
    receiver: UnboundedReceiver<Envelope>,
}

impl EventStream {
    pub(crate) fn new(receiver: UnboundedReceiver<Envelope>) -> Self {
        Self { receiver }
    }
}

impl futures::Stream for EventStream {
    type Item = Envelope;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Envelope>> {
        self.receiver.poll_next_unpin(cx)
    }
}

//! Steering a run from its handlers: answering external calls, approving
//! calls, cancelling.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::limits::Limits;
use crate::tool::{ToolOutput, ToolResult};

/// Why a control request was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ControlError {
    /// The run has no call of that id waiting.
    #[error("no call `{call_id}` is waiting in this run")]
    UnknownCall {
        /// The id given.
        call_id: String,
    },
    /// The call was answered already; the first answer stands.
    #[error("call `{call_id}` was answered already; the first answer stands")]
    AlreadyAnswered {
        /// The id given.
        call_id: String,
    },
    /// The call waits for another kind of answer.
    #[error("call `{call_id}` is waiting for {waiting}, not for this")]
    WrongAnswer {
        /// The id given.
        call_id: String,
        /// What it waits for.
        waiting: &'static str,
    },
    /// The call stopped waiting (its deadline passed, or the run was
    /// cancelled) before the answer arrived; the answer was not used.
    #[error(
        "call `{call_id}` stopped waiting before this answer arrived; the answer was not used"
    )]
    Expired {
        /// The id given.
        call_id: String,
    },
    /// The run is over.
    #[error("the run is over")]
    RunFinished,
}

/// An approval decision.
#[derive(Debug)]
pub(crate) enum Decision {
    Approve,
    Deny(String),
}

enum Waiter {
    External(oneshot::Sender<ToolResult<ToolOutput>>),
    Approval(oneshot::Sender<Decision>),
}

#[derive(Default)]
struct Waiting {
    waiters: HashMap<String, Waiter>,
    answered: HashSet<String>,
    expired: HashSet<String>,
    finished: bool,
}

/// A handle to steer a run: every handler gets one, and it can be cloned and
/// moved to other tasks, so answers can come later and from anywhere.
#[derive(Clone)]
pub struct RunControl {
    shared: Arc<Shared>,
    /// On handles given out by [`RuntimeInvocation::control`](super::RuntimeInvocation::control),
    /// and their clones: while one lives, someone outside the handlers can
    /// answer.
    _outside: Option<Arc<()>>,
}

struct Shared {
    cancellation: CancellationToken,
    waiting: Mutex<Waiting>,
    limits: Limits,
    /// Counts the handles held outside the handlers (see `outside`).
    outside: Arc<()>,
}

impl RunControl {
    pub(crate) fn new(limits: Limits) -> Self {
        Self {
            shared: Arc::new(Shared {
                cancellation: CancellationToken::new(),
                waiting: Mutex::new(Waiting::default()),
                limits,
                outside: Arc::new(()),
            }),
            _outside: None,
        }
    }

    /// A handle for outside the handlers: while it (or a clone) lives, the
    /// run counts on it to answer external calls and approvals.
    pub(crate) fn outside_handle(&self) -> Self {
        Self {
            shared: self.shared.clone(),
            _outside: Some(self.shared.outside.clone()),
        }
    }

    /// Whether a handle given out for outside the handlers still lives.
    pub(crate) fn held_outside(&self) -> bool {
        Arc::strong_count(&self.shared.outside) > 1
    }

    /// The limits of the run's runtime: what
    /// [`from_call_with`](crate::ExternalToolArgs::from_call_with) should
    /// check a call with outside a handler (inside one, `from_call` already
    /// does).
    pub fn limits(&self) -> &Limits {
        &self.shared.limits
    }

    /// Answers an external call: its output, or the error the model reads.
    /// A call of the run goes by its id; a call of an agent the run runs as
    /// a tool, at any depth, by its path
    /// ([`EventKind::call_path`](super::EventKind::call_path)).
    ///
    /// `Ok` means the run has the answer: it becomes the call's result.
    pub fn resolve(
        &self,
        call_id: &str,
        result: ToolResult<ToolOutput>,
    ) -> Result<(), ControlError> {
        match self.take(call_id, "a result")? {
            Waiter::External(sender) => self.delivered(call_id, sender.send(result)),
            Waiter::Approval(_) => unreachable!("take checks the kind"),
        }
    }

    /// Approves a call waiting for approval (by its id, or its path for a
    /// call of a nested agent).
    pub fn approve(&self, call_id: &str) -> Result<(), ControlError> {
        self.decide(call_id, Decision::Approve)
    }

    /// Denies a call waiting for approval (by its id, or its path); the
    /// model reads `reason`.
    pub fn deny(&self, call_id: &str, reason: impl Into<String>) -> Result<(), ControlError> {
        self.decide(call_id, Decision::Deny(reason.into()))
    }

    /// Cancels the run: running tools see their cancellation token, waiting
    /// calls are released, and the run ends `Cancelled`.
    pub fn cancel(&self) {
        self.shared.cancellation.cancel();
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancellation.is_cancelled()
    }

    pub(crate) fn cancellation(&self) -> &CancellationToken {
        &self.shared.cancellation
    }

    fn decide(&self, call_id: &str, decision: Decision) -> Result<(), ControlError> {
        match self.take(call_id, "an approval")? {
            Waiter::Approval(sender) => self.delivered(call_id, sender.send(decision)),
            Waiter::External(_) => unreachable!("take checks the kind"),
        }
    }

    /// Removes the waiter of `call_id` if it waits for `answer`.
    fn take(&self, call_id: &str, answer: &'static str) -> Result<Waiter, ControlError> {
        let mut waiting = self.lock();
        if waiting.finished
            && !waiting.answered.contains(call_id)
            && !waiting.expired.contains(call_id)
        {
            return Err(ControlError::RunFinished);
        }
        let waits_for = match waiting.waiters.get(call_id) {
            Some(Waiter::External(_)) => "a result",
            Some(Waiter::Approval(_)) => "an approval",
            None if waiting.expired.contains(call_id) => {
                return Err(ControlError::Expired {
                    call_id: call_id.to_owned(),
                })
            }
            None if waiting.answered.contains(call_id) => {
                return Err(ControlError::AlreadyAnswered {
                    call_id: call_id.to_owned(),
                })
            }
            None => {
                return Err(ControlError::UnknownCall {
                    call_id: call_id.to_owned(),
                })
            }
        };
        if waits_for != answer {
            return Err(ControlError::WrongAnswer {
                call_id: call_id.to_owned(),
                waiting: waits_for,
            });
        }
        waiting.answered.insert(call_id.to_owned());
        Ok(waiting.waiters.remove(call_id).expect("checked above"))
    }

    /// Registers a call that waits for a handler's result.
    pub(crate) fn await_result(&self, call_id: &str) -> oneshot::Receiver<ToolResult<ToolOutput>> {
        let (sender, receiver) = oneshot::channel();
        self.register(call_id, Waiter::External(sender));
        receiver
    }

    /// Registers a call that waits for an approval.
    pub(crate) fn await_approval(&self, call_id: &str) -> oneshot::Receiver<Decision> {
        let (sender, receiver) = oneshot::channel();
        self.register(call_id, Waiter::Approval(sender));
        receiver
    }

    fn register(&self, call_id: &str, waiter: Waiter) {
        let mut waiting = self.lock();
        waiting.answered.remove(call_id);
        waiting.expired.remove(call_id);
        waiting.waiters.insert(call_id.to_owned(), waiter);
    }

    /// Stops waiting for `call_id` (its deadline passed, or the run was
    /// cancelled): later answers are refused as [`ControlError::Expired`].
    pub(crate) fn expire(&self, call_id: &str) {
        let mut waiting = self.lock();
        if waiting.waiters.remove(call_id).is_some() {
            waiting.expired.insert(call_id.to_owned());
        }
    }

    /// Ends the run: every waiter is released, every later request refused.
    pub(crate) fn finish(&self) {
        let mut waiting = self.lock();
        waiting.finished = true;
        waiting.waiters.clear();
    }

    /// `Ok` if the waiting call received the answer. The waiter closes its
    /// channel when it stops waiting and then takes what arrived before, so
    /// a send that succeeded is always read; one that failed leaves the
    /// call expired, not answered.
    fn delivered<T>(&self, call_id: &str, sent: Result<(), T>) -> Result<(), ControlError> {
        if sent.is_ok() {
            return Ok(());
        }
        let mut waiting = self.lock();
        waiting.answered.remove(call_id);
        waiting.expired.insert(call_id.to_owned());
        Err(ControlError::Expired {
            call_id: call_id.to_owned(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        crate::sync::lock(&self.shared.waiting)
    }
}

impl std::fmt::Debug for RunControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunControl")
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

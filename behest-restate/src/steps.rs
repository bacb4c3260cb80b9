//! A run's steps journaled by Restate: each model turn and tool call is a
//! `ctx.run` entry, approvals and external answers are durable promises
//! raced against durable timers.

use std::sync::Mutex;

use behest::run::{ModelError, ModelTurn, RunSteps, StepKind, ToolStep};
use behest::{
    AssistantMessage, EventKind, Message, RunControl, ToolError, ToolOutput, ToolResult,
    ToolStreamEvent,
};
use futures::future::BoxFuture;
use restate_sdk::prelude::*;

use crate::wire::{Answer, Approval, JournaledResult, Pending, Status};

/// How many times a model turn that failed in a way that may pass is asked
/// again before the failure stands.
const MODEL_ATTEMPTS: u32 = 4;

/// The state key of a run's [`Status`].
pub(crate) const STATUS: &str = "status";

/// The promise an external call's answer resolves.
pub(crate) fn answer_key(call_id: &str) -> String {
    format!("answer:{call_id}")
}

/// The promise a call's approval resolves.
pub(crate) fn approval_key(call_id: &str) -> String {
    format!("approval:{call_id}")
}

/// The steps of one run, on its workflow's context.
pub(crate) struct RestateSteps<'a, 'ctx> {
    pub(crate) ctx: &'a WorkflowContext<'ctx>,
    /// Cancels the run when Restate cancels the invocation.
    pub(crate) control: RunControl,
    pub(crate) status: Mutex<Status>,
    /// The run's events so far, as the run told them.
    pub(crate) events: Mutex<Vec<serde_json::Value>>,
    /// One step at a time (the run asks them so; a fair lock keeps it so
    /// whoever calls): restate-sdk keeps one context operation in flight,
    /// and a replay must meet the journal's entries in their order.
    pub(crate) turn: tokio::sync::Mutex<()>,
}

impl RestateSteps<'_, '_> {
    fn publish(&self, change: impl FnOnce(&mut Status)) {
        let status = {
            let mut status = self.status.lock().unwrap_or_else(|p| p.into_inner());
            change(&mut status);
            status.events = self
                .events
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            status.state = if status.pending.is_empty() {
                "running".to_owned()
            } else {
                "waiting".to_owned()
            };
            status.clone()
        };
        self.ctx.set(STATUS, Json(status));
    }

    /// Restate cancelled the invocation: the run ends `Cancelled`.
    fn cancelled(&self) -> ToolResult<ToolOutput> {
        self.control.cancel();
        Err(ToolError::Cancelled)
    }

    /// Runs `step`'s call as one journal entry.
    async fn run_call(&self, step: ToolStep) -> ToolResult<ToolOutput> {
        let name = format!("call {}", step.call.call_id);
        let journaled = self
            .ctx
            .run(move || async move { Ok(Json(JournaledResult::from(step.run().await))) })
            .name(name)
            .await;
        match journaled {
            Ok(Json(result)) => result.into(),
            Err(error) if error.code() == 409 => self.cancelled(),
            // Restate could not keep the entry: the run cannot go on.
            Err(error) => Err(ToolError::execution(format!(
                "the durable step failed: {}",
                error.message()
            ))),
        }
    }

    fn waiting(&self, step: &ToolStep, waits_for: &str) {
        let pending = Pending {
            call: step.call.clone(),
            waits_for: waits_for.to_owned(),
        };
        self.publish(|status| status.pending.push(pending));
    }

    fn answered(&self, step: &ToolStep) {
        let call_id = step.call.call_id.clone();
        self.publish(|status| {
            status
                .pending
                .retain(|pending| pending.call.call_id != call_id);
            status.steps += 1;
        });
    }
}

impl RunSteps for RestateSteps<'_, '_> {
    fn model_turn(&self, turn: ModelTurn) -> BoxFuture<'_, Result<AssistantMessage, ModelError>> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            let name = format!("model turn {}", turn.index);
            // A failure that may pass (a rate limit, an overload) is
            // Restate's to retry, a few times; any other is journaled:
            // played again, the run fails the same way.
            let retry = RunRetryPolicy::default()
                .initial_delay(std::time::Duration::from_secs(1))
                .max_attempts(MODEL_ATTEMPTS);
            let journaled = self
                .ctx
                .run(move || async move {
                    match turn.ask().await {
                        Ok(answer) => Ok(Json(Ok(answer))),
                        Err(error) if error.retryable => Err(HandlerError::from(error)),
                        Err(error) => Ok(Json(Err(error.to_string()))),
                    }
                })
                .retry_policy(retry)
                .name(name)
                .await;
            let answer = match journaled {
                Ok(Json(answer)) => answer.map_err(ModelError::new),
                Err(error) if error.code() == 409 => {
                    self.control.cancel();
                    Err(ModelError::new("the run was cancelled"))
                }
                Err(error) => Err(ModelError::new(error.message().to_owned())),
            };
            self.publish(|status| status.steps += 1);
            answer
        })
    }

    fn event(&self, kind: &EventKind) {
        // The transcript so far grows with the turns and results.
        let said = match kind {
            EventKind::ModelMessage(reply) => Some(Message::Assistant(reply.clone())),
            EventKind::Tool(ToolStreamEvent::Result { result }) => {
                Some(Message::ToolResult(result.into()))
            }
            _ => None,
        };
        if let Some(said) = said {
            self.status
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .transcript
                .push(said);
        }
        let event = serde_json::json!({ "kind": kind });
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(event);
    }

    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            // Restate tells one waiting step of a cancellation; the others
            // of the round learn it here, and ask nothing more of it.
            if self.control.is_cancelled() {
                return self.cancelled();
            }
            match step.kind {
                StepKind::External { deadline } => {
                    self.waiting(&step, "answer");
                    let key = answer_key(&step.call.call_id);
                    let outcome: Result<ToolOutput, ToolError> = restate_sdk::select! {
                        answer = self.ctx.promise::<Json<Answer>>(&key) => match answer {
                            Ok(Json(answer)) => Ok(answer.output),
                            Err(error) => Err(ToolError::execution(error.message().to_owned())),
                        },
                        _ = self.ctx.sleep(deadline) => Err(ToolError::Timeout { after: deadline }),
                        on_cancel => return self.cancelled(),
                    };
                    self.answered(&step);
                    outcome
                }
                StepKind::NeedsApproval { deadline } => {
                    self.waiting(&step, "approval");
                    let key = approval_key(&step.call.call_id);
                    let denied: Option<String> = restate_sdk::select! {
                        approval = self.ctx.promise::<Json<Approval>>(&key) => match approval {
                            Ok(Json(approval)) if approval.approved => None,
                            Ok(Json(approval)) => Some(approval.reason.unwrap_or_else(|| "denied".to_owned())),
                            Err(error) => Some(error.message().to_owned()),
                        },
                        _ = self.ctx.sleep(deadline) => Some(format!("nobody approved it within {deadline:?}")),
                        on_cancel => return self.cancelled(),
                    };
                    self.answered(&step);
                    match denied {
                        None => self.run_call(step).await,
                        Some(reason) => Err(ToolError::ApprovalDenied { reason }),
                    }
                }
                _ => {
                    let result = self.run_call(step).await;
                    self.publish(|status| status.steps += 1);
                    result
                }
            }
        })
    }
}

//! A run's calls: each through the runtime's one entry point, with the
//! run's part in it ([`RunHooks`]: the stages on each call and output,
//! approvals, outside answers, a journal's steps), the round's results in
//! the turn's order, and the run stopping at its waits and going on from
//! them.

use std::time::Duration;

use futures::future::{join_all, BoxFuture};
use tokio::sync::oneshot;

use super::agent_tool::ResumeAgent;
use super::control::{Decision, RunControl};
use super::events::{EventKind, ToolStreamEvent};
use super::part::{result_message, Looping, Run};
use super::stage::Ending;
use super::stages::STAGES;
use super::state::{Answer, RunState, Slot, Wait, WaitKind};
use super::steps::{RunSteps, StepKind, ToolStep};
use super::{RunError, RunOutcome};
use crate::conversation::{Message, ToolResultMessage};
use crate::runtime::{CallOptions, LocalRun, Route, RunHooks, ToolCall, ToolCallResult};
use crate::tool::{ProgressSink, ToolError, ToolOutput, ToolResult};

impl Run<'_> {
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
    /// some), to its `Result` event; `None` for a call that waits in a run
    /// that stops at its waits.
    async fn call(&self, call: ToolCall) -> Option<ToolCallResult> {
        let refused = match crate::sync::lock(&self.offered).as_ref() {
            Some(offered) if !offered.contains(&call.tool_name) => Some(not_offered(
                &call.tool_name,
                offered.contains(super::tool_search::SEARCH_TOOLS),
            )),
            _ => None,
        };
        if let Some(refused) = refused {
            return Some(self.finished(call, Err(ToolError::execution(refused))));
        }
        let options = self.call_options();
        let hooks: &dyn RunHooks = self;
        let given = call.clone();
        let result = self
            .agent
            .runtime
            .call_in(call, options, Some(&hooks))
            .await;
        if self.adopt(&given) || self.waits_for(&result.call_id) {
            return None;
        }
        // A call started at once ends here (a routed one ended in
        // `dispatch`): the stages see its outcome.
        let ran = crate::sync::lock(&self.running).remove(&result.call_id);
        let result = match ran {
            Some(tool_name) => {
                let call = ToolCall {
                    call_id: result.call_id,
                    tool_name,
                    arguments: serde_json::Value::Null,
                };
                let outcome = self.outputs(&call, result.outcome).await;
                ToolCallResult {
                    call_id: call.call_id,
                    tool_name: call.tool_name,
                    outcome,
                }
            }
            None => result,
        };
        self.tool_event(ToolStreamEvent::Result {
            result: result.clone(),
        });
        Some(result)
    }

    /// The stages' look at a call's outcome, the other way round from
    /// their order, as layers unwind.
    async fn outputs(
        &self,
        call: &ToolCall,
        mut outcome: ToolResult<ToolOutput>,
    ) -> ToolResult<ToolOutput> {
        for stage in STAGES.iter().rev() {
            outcome = stage.on_output(self, call, outcome).await;
        }
        outcome
    }

    /// Whether the call `call_id` waits, in a run that stops at its waits.
    fn waits_for(&self, call_id: &str) -> bool {
        crate::sync::lock(&self.waits)
            .iter()
            .any(|wait| wait.call.call_id == call_id)
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
        let deadlines = self.deadlines();
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
                    deadline: deadlines.external,
                    approval: approval.then_some(deadlines.approval),
                }
            }
            Route::NeedsApproval => {
                self.tool_event(ToolStreamEvent::ApprovalRequested { call: call.clone() });
                StepKind::NeedsApproval {
                    deadline: deadlines.approval,
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

    /// Whether someone can answer an external call or an approval: a
    /// handler of the root run, or a
    /// [`control`](super::RuntimeInvocation::control) handle of the root
    /// held outside the handlers. A stream of events alone only observes.
    fn answerable(&self) -> bool {
        self.lineage.answers.answerable()
    }

    /// How long calls wait: as the agent holding the run says at the root,
    /// as the root says below it.
    fn deadlines(&self) -> Deadlines {
        let answers = &self.lineage.answers;
        let options = &self.agent.options;
        if answers.at_root() {
            Deadlines {
                approval: options.approval_deadline,
                external: options.external_deadline,
                notice: options.waiting_notice,
            }
        } else {
            Deadlines {
                approval: answers.approval_deadline,
                external: answers.external_deadline,
                notice: answers.waiting_notice,
            }
        }
    }

    /// What `call` waits on (the root's control) and is known by there
    /// (its id at the root, its path below).
    fn asked(&self, call: &ToolCall) -> (&RunControl, String) {
        let answers = &self.lineage.answers;
        (
            &answers.control,
            answers.path(&call.tool_name, &call.call_id),
        )
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
        (control, path): (&RunControl, String),
        call_id: &str,
        mut answer: oneshot::Receiver<T>,
        deadline: Duration,
    ) -> ToolResult<T> {
        let cancellation = self.control.cancellation();
        let waiting = self.deadlines().notice;
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
                control.expire(&path);
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
}

impl RunHooks for Run<'_> {
    fn routes(&self, tool_name: &str) -> bool {
        self.steps.is_some()
            || self.needs_approval(tool_name)
            || STAGES.iter().any(|stage| stage.sees_calls(self, tool_name))
    }

    fn dispatch(
        &self,
        call: ToolCall,
        route: Route,
        run: LocalRun,
    ) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            let given = call.clone();
            let mut passed = Some((call, run));
            let mut refused = None;
            let mut seen = 0;
            for stage in STAGES {
                let Some((call, run)) = passed.take() else {
                    break;
                };
                match stage.on_call(self, call, run).await {
                    Ok(pair) => passed = Some(pair),
                    Err(error) => {
                        refused = Some(error);
                        break;
                    }
                }
                seen += 1;
            }
            let outcome = match (passed, refused) {
                (Some((call, run)), None) => self.carry_out(call, route, run).await,
                (_, Some(error)) => Err(error),
                (None, None) => Err(ToolError::execution("not run")),
            };
            if self.adopt(&given) || self.waits_for(&given.call_id) {
                return outcome;
            }
            // The stages that saw the call see its outcome, as layers unwind.
            let mut outcome = outcome;
            for stage in STAGES[..seen].iter().rev() {
                outcome = stage.on_output(self, &given, outcome).await;
            }
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
        // No stage needs to see it before it runs (those calls are
        // routed): its outcome is seen when it ends, in `call`.
        super::bounds::count_start(self, tool_name);
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
            if self.pausing {
                self.tool_event(ToolStreamEvent::ApprovalRequested { call: call.clone() });
                return Err(self.stop_at(call.clone(), WaitKind::Approval));
            }
            if !self.answerable() {
                return Err(ToolError::ApprovalDenied {
                    reason: "the call needs an approval and nobody is there to give it".to_owned(),
                });
            }
            let (control, path) = self.asked(call);
            let decision = control.await_approval(&path);
            self.tool_event(ToolStreamEvent::ApprovalRequested { call: call.clone() });
            let deadline = self.deadlines().approval;
            match self
                .wait((control, path), &call.call_id, decision, deadline)
                .await
            {
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
            if self.pausing {
                self.tool_event(ToolStreamEvent::Call {
                    call: call.clone(),
                    external: true,
                });
                return Err(self.stop_at(call, WaitKind::Answer));
            }
            if !self.answerable() {
                return Err(ToolError::NotImplemented);
            }
            let call_id = call.call_id.clone();
            let (control, path) = self.asked(&call);
            let answer = control.await_result(&path);
            self.tool_event(ToolStreamEvent::Call {
                call,
                external: true,
            });
            let deadline = self.deadlines().external;
            self.wait((control, path), &call_id, answer, deadline)
                .await?
        })
    }

    /// Marks `call` waiting for `kind`: the run stops once the round's
    /// other calls have their results. The error given back is no result:
    /// the call has none until it is answered.
    fn stop_at(&self, call: ToolCall, kind: WaitKind) -> ToolError {
        crate::sync::lock(&self.waits).push(Wait {
            call,
            kind,
            answer: None,
            nested: None,
        });
        ToolError::execution("waiting")
    }

    /// Whether `call` ran an agent whose run stopped at its waits: then
    /// the call waits, with that run's state, and the run stops at it.
    fn adopt(&self, call: &ToolCall) -> bool {
        let stopped = crate::sync::lock(&self.lineage.stops).remove(&call.call_id);
        let Some(state) = stopped else {
            return false;
        };
        crate::sync::lock(&self.waits).push(Wait {
            call: call.clone(),
            kind: WaitKind::Agent,
            answer: None,
            nested: Some(Box::new(state)),
        });
        true
    }
}

/// How long a run's calls wait for their answers.
struct Deadlines {
    approval: Duration,
    external: Duration,
    notice: Duration,
}

/// What became of one call of a round.
enum Ended {
    /// Its result, given now.
    Now(ToolCallResult),
    /// Its result, given before the run stopped.
    Kept(ToolResultMessage),
    /// It waits.
    Waiting,
}

impl Run<'_> {
    /// The round of `calls`: each runs (at once, or one by one for a
    /// journal); their results go into the transcript in the turn's order.
    /// `None` when the loop goes on.
    pub(super) async fn round(
        &self,
        looping: &mut Looping,
        calls: Vec<ToolCall>,
    ) -> Option<Ending> {
        let ended: Vec<Option<ToolCallResult>> = if self.steps.is_some() {
            // A journal is written, and read back, one step at a time: the
            // round's calls go in the turn's order.
            let mut results = Vec::with_capacity(calls.len());
            for call in calls.iter().cloned() {
                results.push(self.call(call).await);
            }
            results
        } else {
            join_all(calls.iter().cloned().map(|call| self.call(call))).await
        };
        let ended = ended
            .into_iter()
            .map(|result| result.map_or(Ended::Waiting, Ended::Now))
            .collect();
        self.end_round(looping, calls, ended).await
    }

    /// The round the run stopped at, its waits answered as `round` says:
    /// each answered call goes on (an unanswered one waits again), and the
    /// round ends as any does. `None` when the loop goes on.
    pub(super) async fn resume_round(
        &self,
        looping: &mut Looping,
        round: Vec<Slot>,
    ) -> Option<Ending> {
        let calls: Vec<ToolCall> = round
            .iter()
            .map(|slot| match slot {
                Slot::Done(result) => ToolCall {
                    call_id: result.call_id.clone(),
                    tool_name: result.tool_name.clone(),
                    arguments: serde_json::Value::Null,
                },
                Slot::Waiting(wait) => wait.call.clone(),
            })
            .collect();
        let ended = join_all(round.into_iter().map(|slot| async move {
            match slot {
                Slot::Done(result) => Ended::Kept(result),
                Slot::Waiting(wait) => self.answered(wait).await.map_or(Ended::Waiting, Ended::Now),
            }
        }))
        .await;
        self.end_round(looping, calls, ended).await
    }

    /// A call the run stopped at, answered (or waiting again: `None`).
    async fn answered(&self, wait: Wait) -> Option<ToolCallResult> {
        let Wait {
            call,
            kind,
            answer,
            nested,
        } = wait;
        let external = self.agent.runtime.registry().is_external(&call.tool_name);
        let outcome = match (kind, answer) {
            (WaitKind::Approval, Some(Answer::Denied(reason))) => {
                Err(ToolError::ApprovalDenied { reason })
            }
            (WaitKind::Approval, answer) => {
                let approved = match answer {
                    Some(_) => Ok(()),
                    None => self.approve(&call).await,
                };
                match approved {
                    Err(_) if self.waits_for(&call.call_id) => return None,
                    Err(error) => Err(error),
                    Ok(()) if external => self.answered_outside(call.clone()).await,
                    Ok(()) => {
                        self.announce(&|| call.clone());
                        match self.agent.runtime.local_run(&call, self.call_options()) {
                            Ok(run) => run.run().await,
                            Err(error) => Err(error),
                        }
                    }
                }
            }
            (WaitKind::Answer, Some(Answer::Output(output))) => {
                self.agent.runtime.within_output_limit(output)
            }
            (WaitKind::Answer, Some(Answer::Failed(message))) => Err(ToolError::execution(message)),
            (WaitKind::Answer, _) => self.answered_outside(call.clone()).await,
            (WaitKind::Agent, _) => match nested {
                Some(state) => self.resume_agent(&call, *state).await,
                None => Err(ToolError::execution(
                    "not run: the state of its agent's run is missing",
                )),
            },
        };
        if self.adopt(&call) || self.waits_for(&call.call_id) {
            return None;
        }
        let outcome = self.outputs(&call, outcome).await;
        Some(self.finished(call, outcome))
    }

    /// The agent that `call` ran as a tool, going on from the state its
    /// run stopped at (its waits answered there, or stopped at again).
    async fn resume_agent(&self, call: &ToolCall, state: RunState) -> ToolResult<ToolOutput> {
        let options = self.call_options().extension(ResumeAgent(state));
        match self.agent.runtime.local_run(call, options) {
            Ok(run) => run.run().await,
            Err(error) => Err(error),
        }
    }

    /// An external call answered by a handler (or stopped at again), the
    /// answer held to the output limit a tool's own output meets.
    async fn answered_outside(&self, call: ToolCall) -> ToolResult<ToolOutput> {
        let output = self.answer(call).await?;
        self.agent.runtime.within_output_limit(output)
    }

    /// Ends a round whose calls `ended` as said: the run stops at the
    /// calls that wait, or their results go into the transcript and the
    /// round's ends are checked (a cancellation, a stage that stopped the
    /// run, an external call nobody answers).
    async fn end_round(
        &self,
        looping: &mut Looping,
        calls: Vec<ToolCall>,
        ended: Vec<Ended>,
    ) -> Option<Ending> {
        let waits = std::mem::take(&mut *crate::sync::lock(&self.waits));
        let stopped = self.control.cancellation().is_cancelled()
            || crate::sync::lock(&self.tripped).is_some();
        if !waits.is_empty() && !stopped {
            let round = calls
                .iter()
                .zip(ended)
                .map(|(call, ended)| match ended {
                    Ended::Now(result) => Slot::Done(ToolResultMessage::from(&result)),
                    Ended::Kept(result) => Slot::Done(result),
                    Ended::Waiting => Slot::Waiting(
                        waits
                            .iter()
                            .find(|wait| wait.call.call_id == call.call_id)
                            .cloned()
                            .expect("a call that waits is among the waits"),
                    ),
                })
                .collect();
            return Some(Ending::End(RunOutcome::stopped(
                self.state_of(looping, round),
            )));
        }
        let mut unanswered = None;
        for (call, ended) in calls.into_iter().zip(ended) {
            let message = match ended {
                Ended::Kept(result) => Message::ToolResult(result),
                Ended::Now(result) => {
                    let nobody = matches!(result.outcome, Err(ToolError::NotImplemented))
                        && self.agent.runtime.registry().is_external(&result.tool_name);
                    if nobody && unanswered.is_none() {
                        unanswered = Some(RunError::NoHandler {
                            tool_name: result.tool_name.clone(),
                            call_id: result.call_id.clone(),
                        });
                    }
                    result_message(&result)
                }
                // The run stops: a call that waits will not run.
                Ended::Waiting => {
                    let outcome = Err(if self.control.cancellation().is_cancelled() {
                        ToolError::Cancelled
                    } else {
                        ToolError::execution("not run: the run stopped")
                    });
                    let outcome = self.outputs(&call, outcome).await;
                    result_message(&self.finished(call, outcome))
                }
            };
            self.add(&mut looping.transcript, message);
        }
        if self.control.cancellation().is_cancelled() {
            return Some(Ending::End(RunOutcome::cancelled(looping.take())));
        }
        let tripped = crate::sync::lock(&self.tripped).take();
        if let Some(error) = tripped.or(unanswered) {
            return Some(Ending::End(RunOutcome::failed(error, looping.take())));
        }
        None
    }

    /// The run's state, stopped at `round`.
    fn state_of(&self, looping: &mut Looping, round: Vec<Slot>) -> RunState {
        let mut progress = looping.progress.clone();
        progress.decisions = self.decisions.load(std::sync::atomic::Ordering::Relaxed);
        RunState {
            format: RunState::FORMAT,
            run_id: self.emitter.run_id().to_string(),
            sequence: self.emitter.sequence(),
            started_at: self.started_at,
            holder: self.holder.to_vec(),
            transcript: looping.take(),
            // Told by the run, from its books, when it ends.
            spent: Default::default(),
            progress,
            round,
        }
    }
}

/// Why a call of `tool`, not offered at its step, is not run; where tools
/// are found by a search (`searched`), when a tool found is offered.
fn not_offered(tool: &str, searched: bool) -> String {
    let search = super::tool_search::SEARCH_TOOLS;
    let hint = if searched {
        format!(" (tools that `{search}` finds are offered from the step after the search)")
    } else {
        String::new()
    };
    format!("not run: the tool `{tool}` is not offered at this step{hint}")
}

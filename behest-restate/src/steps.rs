//! A run's steps journaled by Restate: each model turn and tool call is a
//! `ctx.run` entry, approvals, external answers and decisions on unknown
//! outcomes are durable promises raced against durable timers, and what
//! each step adds to the run's status is one page of state (`state.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use behest::run::{ModelError, ModelTurn, RunSteps, StepKind, ToolStep};
use behest::{
    Agent, AssistantMessage, EventKind, Message, RunControl, ToolCall, ToolError, ToolOutput,
    ToolResult, ToolStreamEvent,
};
use futures::future::BoxFuture;
use restate_sdk::prelude::*;
use serde_json::json;

use crate::state::{page_key, Header, Page, Waiting, HEADER};
use crate::wire::{Answer, Approval, DurableOutcome, JournaledResult, Resolution, Resolve};

/// How many times a model turn that failed in a way that may pass is asked
/// again before the failure stands.
const MODEL_ATTEMPTS: u32 = 4;

/// How many steps a page of status holds at most: a page is written when
/// the run waits, when it ends, and after this many steps (a write a step
/// cost about a third of a step's time). A status read while the run
/// works lags it by fewer steps than this. A count of steps, not a time:
/// a run played back must write what it wrote.
const STEPS_A_PAGE: usize = 8;

/// The steps of one run, on its workflow's context.
pub(crate) struct RestateSteps<'a, 'ctx> {
    ctx: &'a WorkflowContext<'ctx>,
    agent: &'a Agent,
    /// Cancels the run when Restate cancels the invocation.
    control: RunControl,
    /// The largest output, answer or model turn a step may journal.
    max_step_bytes: usize,
    book: Mutex<Book>,
    /// One step at a time (the run asks them so; a fair lock keeps it so
    /// whoever calls): restate-sdk keeps one context operation in flight,
    /// and a replay must meet the journal's entries in their order.
    turn: tokio::sync::Mutex<()>,
}

/// What the run has written of its state, and what it has yet to.
struct Book {
    header: Header,
    /// The page being filled.
    page: Page,
    /// Pages written.
    pages: usize,
    /// The transcript as the pages hold it.
    transcript: Vec<Message>,
    /// Promises made, for keys no earlier wait used.
    waits: usize,
    /// The step count of the last page written.
    flushed_at: usize,
    /// The transcript's length in the last page written.
    flushed_length: usize,
}

impl Book {
    /// Adds `message` to the transcript; its place.
    fn push(&mut self, message: Message) -> usize {
        let at = self.transcript.len();
        self.transcript.push(message.clone());
        self.page.messages.push((at, message));
        self.page.length = self.transcript.len();
        at
    }
}

impl<'a, 'ctx> RestateSteps<'a, 'ctx> {
    /// The steps of a run of `agent` on `conversation`.
    pub(crate) fn new(
        ctx: &'a WorkflowContext<'ctx>,
        agent: &'a Agent,
        control: RunControl,
        conversation: &[Message],
        max_step_bytes: usize,
    ) -> Self {
        let mut book = Book {
            header: Header {
                state: "running".to_owned(),
                pending: Vec::new(),
            },
            page: Page::default(),
            pages: 0,
            transcript: Vec::new(),
            waits: 0,
            flushed_at: 0,
            flushed_length: 0,
        };
        for message in conversation {
            book.push(message.clone());
        }
        Self {
            ctx,
            agent,
            control,
            max_step_bytes,
            book: Mutex::new(book),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    /// Writes the page being filled once it holds [`STEPS_A_PAGE`] steps.
    fn flush_due(&self) {
        let mut book = self.book();
        if book.page.steps - book.flushed_at >= STEPS_A_PAGE {
            self.flush(&mut book);
        }
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn write_header(&self, book: &Book) {
        self.ctx.set(HEADER, Json(book.header.clone()));
    }

    /// Writes the page being filled, if it adds anything.
    fn flush(&self, book: &mut Book) {
        let page = &book.page;
        if page.is_empty() && page.steps == book.flushed_at && page.length == book.flushed_length {
            return;
        }
        let next = Page {
            steps: book.page.steps,
            length: book.page.length,
            ..Page::default()
        };
        let page = std::mem::replace(&mut book.page, next);
        book.flushed_at = page.steps;
        book.flushed_length = page.length;
        self.ctx.set(&page_key(book.pages), Json(page));
        book.pages += 1;
    }

    /// One more step done.
    fn stepped(&self) {
        self.book().page.steps += 1;
    }

    /// The run waits for `waits_for` on `call`: said in its header; the
    /// promise made for this wait.
    fn wait_begins(&self, call: &ToolCall, waits_for: &str) -> String {
        let mut book = self.book();
        book.waits += 1;
        let promise = format!("{waits_for}:{}:{}", book.waits, call.call_id);
        book.header.pending.push(Waiting {
            call: call.clone(),
            waits_for: waits_for.to_owned(),
            promise: promise.clone(),
        });
        book.header.state = "waiting".to_owned();
        self.flush(&mut book);
        self.write_header(&book);
        promise
    }

    /// The wait for `call_id` is over.
    fn wait_ends(&self, call_id: &str) {
        let mut book = self.book();
        book.header
            .pending
            .retain(|waiting| waiting.call.call_id != call_id);
        if book.header.pending.is_empty() {
            book.header.state = "running".to_owned();
        }
        self.write_header(&book);
    }

    /// The run ended with `outcome`: its header says so, and the
    /// transcript its pages hold is the outcome's (a reminder the model
    /// was sent is in no event).
    pub(crate) fn finish(&self, outcome: &DurableOutcome) {
        let mut book = self.book();
        let transcript = outcome.transcript();
        let same = book
            .transcript
            .iter()
            .zip(transcript)
            .take_while(|(written, given)| written == given)
            .count();
        for (at, message) in transcript.iter().enumerate().skip(same) {
            book.page.messages.push((at, message.clone()));
        }
        book.transcript = transcript.to_vec();
        book.page.length = transcript.len();
        self.flush(&mut book);
        book.header.pending.clear();
        book.header.state = match outcome {
            DurableOutcome::Completed { .. } => "completed",
            DurableOutcome::Failed { .. } => "failed",
            DurableOutcome::Cancelled { .. } => "cancelled",
        }
        .to_owned();
        self.write_header(&book);
    }

    /// Restate cancelled the invocation: the run ends `Cancelled`.
    fn cancelled(&self) -> ToolResult<ToolOutput> {
        self.control.cancel();
        Err(ToolError::Cancelled)
    }

    /// `result`, or an error that says it is over the step limit.
    fn bounded(result: JournaledResult, max_step_bytes: usize) -> JournaledResult {
        let JournaledResult::Output(output) = &result else {
            return result;
        };
        let size = serde_json::to_vec(output).map_or(usize::MAX, |bytes| bytes.len());
        if size <= max_step_bytes {
            return result;
        }
        JournaledResult::Error(format!(
            "the output is {size} bytes, more than a durable step keeps ({max_step_bytes} bytes): return less, or a reference to where the rest is"
        ))
    }

    /// Whether the call's tool says it may run twice.
    fn idempotent(&self, tool_name: &str) -> bool {
        self.agent
            .runtime()
            .registry()
            .spec(tool_name)
            .is_some_and(|spec| {
                spec.annotations.idempotent_hint == Some(true)
                    || spec.annotations.read_only_hint == Some(true)
            })
    }

    /// Runs `step`'s call as one journal entry, with an idempotency key of
    /// the run's id and the call's. A tool not marked idempotent has its
    /// start journaled first: played again after a crash that cut it, its
    /// outcome is unknown, and a person decides ([`Resolution`]) instead
    /// of running it again unasked.
    async fn run_call(&self, step: ToolStep) -> ToolResult<ToolOutput> {
        let call = step.call.clone();
        let step = step.idempotency_key(format!("{}/{}", self.ctx.key(), call.call_id));
        let mut fresh = true;
        if !self.idempotent(&call.tool_name) {
            let started_here = Arc::new(AtomicBool::new(false));
            let flag = started_here.clone();
            let marked = self
                .ctx
                .run(move || async move {
                    flag.store(true, Ordering::SeqCst);
                    Ok(())
                })
                .name(format!("start call {}", call.call_id))
                .await;
            if let Err(error) = marked {
                return self.failed_step(&error);
            }
            fresh = started_here.load(Ordering::SeqCst);
        }
        if fresh {
            return self.journal_call(step, "call").await;
        }
        // Started by an earlier attempt, never recorded: the entry says so.
        let journaled = self
            .ctx
            .run(|| async { Ok(Json(JournaledResult::Unknown)) })
            .name(format!("call {}", call.call_id))
            .await;
        match journaled {
            Ok(Json(result)) => match result.known() {
                Some(outcome) => outcome,
                None => self.unknown_outcome(step).await,
            },
            Err(error) => self.failed_step(&error),
        }
    }

    /// Runs `step` in a journal entry named `what` and the call's id.
    async fn journal_call(&self, step: ToolStep, what: &str) -> ToolResult<ToolOutput> {
        let name = format!("{what} {}", step.call.call_id);
        let max_step_bytes = self.max_step_bytes;
        // What the tool gave, kept here: Restate may tell of a
        // cancellation instead of the entry it journaled.
        let ran: Arc<Mutex<Option<JournaledResult>>> = Arc::default();
        let slot = ran.clone();
        let journaled = self
            .ctx
            .run(move || async move {
                let result = Self::bounded(JournaledResult::from(step.run().await), max_step_bytes);
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(result.clone());
                Ok(Json(result))
            })
            .name(name)
            .await;
        match journaled {
            Ok(Json(result)) => result.known().unwrap_or(Err(ToolError::Cancelled)),
            Err(error) if error.code() == 409 => {
                self.control.cancel();
                // The run ends cancelled; the transcript says what the
                // call did when it ran to its end here.
                let ran = ran.lock().unwrap_or_else(|p| p.into_inner()).take();
                match ran.and_then(JournaledResult::known) {
                    Some(outcome) => outcome,
                    None => Err(ToolError::Cancelled),
                }
            }
            Err(error) => self.failed_step(&error),
        }
    }

    /// A journal entry that Restate did not keep: a cancellation (the
    /// call did not start) ends the run; anything else is the call's
    /// error.
    fn failed_step(&self, error: &TerminalError) -> ToolResult<ToolOutput> {
        if error.code() == 409 {
            return self.cancelled();
        }
        Err(ToolError::execution(format!(
            "the durable step failed: {}",
            error.message()
        )))
    }

    /// A call cut by a crash: the run waits (up to the agent's approval
    /// deadline) for a person to say what it did.
    async fn unknown_outcome(&self, step: ToolStep) -> ToolResult<ToolOutput> {
        let deadline = self.agent.options().approval_deadline;
        let call_id = step.call.call_id.clone();
        let promise = self.wait_begins(&step.call, "outcome");
        let decided: Option<Resolution> = restate_sdk::select! {
            resolve = self.ctx.promise::<Json<Resolve>>(&promise) => match resolve {
                Ok(Json(resolve)) => Some(resolve.resolution),
                Err(error) => Some(Resolution::Failed(error.message().to_owned())),
            },
            _ = self.ctx.sleep(deadline) => None,
            on_cancel => {
                self.wait_ends(&call_id);
                self.control.cancel();
                return Err(ToolError::execution(
                    "the run was cancelled while this call's outcome was unknown: it may or may not have run",
                ));
            }
        };
        self.wait_ends(&call_id);
        match decided {
            Some(Resolution::Ran(output)) => Ok(output),
            Some(Resolution::Failed(reason)) => Err(ToolError::execution(reason)),
            Some(Resolution::RunAgain) => self.journal_call(step, "call again").await,
            None => Err(ToolError::execution(format!(
                "the call was cut by a crash and may or may not have run; nobody said which within {deadline:?}"
            ))),
        }
    }

    /// Waits for an answer to an external call, within `deadline`.
    async fn external(&self, step: &ToolStep, deadline: Duration) -> ToolResult<ToolOutput> {
        let promise = self.wait_begins(&step.call, "answer");
        let outcome: ToolResult<ToolOutput> = restate_sdk::select! {
            answer = self.ctx.promise::<Json<Answer>>(&promise) => match answer {
                Ok(Json(answer)) => Ok(answer.output),
                Err(error) => Err(ToolError::execution(error.message().to_owned())),
            },
            _ = self.ctx.sleep(deadline) => Err(ToolError::Timeout { after: deadline }),
            on_cancel => {
                self.wait_ends(&step.call.call_id);
                return self.cancelled();
            }
        };
        self.wait_ends(&step.call.call_id);
        outcome
    }

    /// Waits for an approval, within `deadline`; the call runs once
    /// approved.
    async fn approved(&self, step: ToolStep, deadline: Duration) -> ToolResult<ToolOutput> {
        let promise = self.wait_begins(&step.call, "approval");
        let denied: Option<String> = restate_sdk::select! {
            approval = self.ctx.promise::<Json<Approval>>(&promise) => match approval {
                Ok(Json(approval)) if approval.approved => None,
                Ok(Json(approval)) => Some(approval.reason.unwrap_or_else(|| "denied".to_owned())),
                Err(error) => Some(error.message().to_owned()),
            },
            _ = self.ctx.sleep(deadline) => Some(format!("nobody approved it within {deadline:?}")),
            on_cancel => {
                self.wait_ends(&step.call.call_id);
                return self.cancelled();
            }
        };
        self.wait_ends(&step.call.call_id);
        match denied {
            None => self.run_call(step).await,
            Some(reason) => Err(ToolError::ApprovalDenied { reason }),
        }
    }
}

impl RunSteps for RestateSteps<'_, '_> {
    fn model_turn(&self, turn: ModelTurn) -> BoxFuture<'_, Result<AssistantMessage, ModelError>> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            self.flush_due();
            let name = format!("model turn {}", turn.index);
            let max_step_bytes = self.max_step_bytes;
            // A failure that may pass (a rate limit, an overload) is
            // Restate's to retry, a few times; any other is journaled:
            // played again, the run fails the same way.
            let retry = RunRetryPolicy::default()
                .initial_delay(Duration::from_secs(1))
                .max_attempts(MODEL_ATTEMPTS);
            let journaled = self
                .ctx
                .run(move || async move {
                    match turn.ask().await {
                        Ok(answer) => {
                            let size =
                                serde_json::to_vec(&answer).map_or(usize::MAX, |bytes| bytes.len());
                            if size > max_step_bytes {
                                return Ok(Json(Err(format!(
                                    "the model's answer is {size} bytes, more than a durable step keeps ({max_step_bytes} bytes)"
                                ))));
                            }
                            Ok(Json(Ok(answer)))
                        }
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
            self.stepped();
            answer
        })
    }

    fn event(&self, kind: &EventKind) {
        let mut book = self.book();
        // A reply or a result is kept once, in the transcript; its event
        // names its place there.
        let event = match kind {
            EventKind::ModelMessage(reply) => {
                let at = book.push(Message::Assistant(reply.clone()));
                json!({"kind": {"type": "model_message"}, "message": at})
            }
            EventKind::Tool(ToolStreamEvent::Result { result }) => {
                let at = book.push(Message::ToolResult(result.into()));
                json!({
                    "kind": {"type": "tool", "value": {
                        "event": "result",
                        "call_id": result.call_id,
                        "tool_name": result.tool_name,
                        "is_error": result.is_error(),
                    }},
                    "message": at,
                })
            }
            other => json!({ "kind": other }),
        };
        book.page.events.push(event);
    }

    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            self.flush_due();
            // Restate tells one waiting step of a cancellation; the others
            // of the round learn it here, and ask nothing more of it.
            if self.control.is_cancelled() {
                return self.cancelled();
            }
            let outcome = match step.kind {
                StepKind::External { deadline } => self.external(&step, deadline).await,
                StepKind::NeedsApproval { deadline } => self.approved(step, deadline).await,
                _ => self.run_call(step).await,
            };
            self.stepped();
            outcome
        })
    }
}

//! A run's steps journaled by Restate: each model turn and tool call is a
//! `ctx.run` entry; approvals, external answers and decisions on unknown
//! outcomes are durable promises raced against durable timers; what the
//! steps add to the run's status that the journal does not hold goes into
//! pages of state (`state.rs`, `transcript.rs`).
//!
//! Everything written here follows from the run's steps alone (never from
//! a clock or from what one attempt saw and a replay would not): a run
//! played back after a crash writes the journal entries it wrote before.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use behest::run::{GuardrailAction, ModelError, ModelTurn, RunSteps, StepKind, ToolStep};
use behest::{
    Agent, AssistantMessage, EventKind, Message, RunControl, ToolCall, ToolError, ToolOutput,
    ToolResult, ToolStreamEvent,
};
use futures::future::BoxFuture;
use restate_sdk::prelude::*;
use serde_json::json;

use crate::state::{page_key, Header, Page, Waiting, HEADER};
use crate::transcript::{after_cancel_entry, call_entry, model_turn_entry, Kept, Part};
use crate::wire::{
    json_size, over_the_step_limit, Answer, Approval, DurableOutcome, JournaledResult, Resolution,
    Resolve,
};

/// How many times a model turn that failed in a way that may pass is asked
/// again before the failure stands.
const MODEL_ATTEMPTS: u32 = 4;

/// How many steps a page of status holds at most: a page is written when
/// the run waits, when it ends, after this many steps, and once it holds
/// a step's limit of bytes (a write a step cost about a third of a step's
/// time). A status read while the run works lags it by fewer steps than
/// this. A count, not a time: a run played back writes what it wrote.
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
    /// Its size as JSON, about.
    page_bytes: usize,
    /// Pages written.
    pages: usize,
    /// The step count of the last page written.
    flushed: usize,
    /// The transcript: how it goes on from the journal's entries.
    kept: Kept,
    /// Promises made, for keys no earlier wait used.
    waits: usize,
}

impl Book {
    /// Adds `message` to the transcript.
    fn push(&mut self, message: Message) {
        self.kept.message(message, &mut self.page.parts);
        if let Some(Part::Message(message)) = self.page.parts.last() {
            self.page_bytes += json_size(message);
        }
    }

    /// The run's transcript is `truth`.
    fn settle(&mut self, truth: &[Message]) {
        let before = self.page.parts.len();
        self.kept.settle(truth, &mut self.page.parts);
        self.page_bytes += self.page.parts[before..]
            .iter()
            .map(json_size)
            .sum::<usize>();
    }

    /// Keeps an event of the agent at `agent` (the root's without one),
    /// with where the root's transcript stood.
    fn event(&mut self, agent: Option<&str>, kind: &EventKind) {
        let event = match agent {
            None => json!({"at": self.kept.len(), "kind": kind}),
            Some(agent) => json!({"at": self.kept.len(), "agent": agent, "kind": kind}),
        };
        self.page_bytes += json_size(&event);
        self.page.events.push(event);
    }
}

/// Whether a status keeps an event of the root's: not what the status
/// tells otherwise (its state, the transcript's replies, calls and
/// results, the outcome), nor a guardrail's verdict that let something
/// pass as it was (the journal keeps each verdict).
fn kept_at_the_root(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::State(_)
            | EventKind::ModelMessage(_)
            | EventKind::Output(_)
            | EventKind::Tool(
                ToolStreamEvent::Call {
                    external: false,
                    ..
                } | ToolStreamEvent::Result { .. }
            )
    ) && !passed(kind)
}

/// Whether a status keeps an event of a nested agent's: as the root's,
/// but its replies and results are not the root's transcript, so they
/// are kept.
fn kept_below(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::State(_)
            | EventKind::Output(_)
            | EventKind::Tool(ToolStreamEvent::Call {
                external: false,
                ..
            })
    ) && !passed(kind)
}

/// Whether `kind` is a guardrail's verdict that let something pass as it
/// was.
fn passed(kind: &EventKind) -> bool {
    matches!(kind, EventKind::Guardrail(verdict) if verdict.action == GuardrailAction::Allowed)
}

/// How one attempt at a call went.
enum Attempt {
    /// It has an outcome.
    Done(ToolResult<ToolOutput>),
    /// An earlier attempt started it and recorded nothing: nobody knows
    /// what it did. The step, to run it again if a person says so.
    Unknown(ToolStep),
}

impl<'a, 'ctx> RestateSteps<'a, 'ctx> {
    /// The steps of a run of `agent` on `input`.
    pub(crate) fn new(
        ctx: &'a WorkflowContext<'ctx>,
        agent: &'a Agent,
        control: RunControl,
        input: &[Message],
        max_step_bytes: usize,
    ) -> Self {
        // The input is the invocation's, in the journal already.
        let book = Book {
            header: Header {
                state: "running".to_owned(),
                pending: Vec::new(),
            },
            page: Page::default(),
            page_bytes: 0,
            pages: 0,
            flushed: 0,
            kept: Kept::new(input),
            waits: 0,
        };
        Self {
            ctx,
            agent,
            control,
            max_step_bytes,
            book: Mutex::new(book),
            turn: tokio::sync::Mutex::new(()),
        }
    }

    fn book(&self) -> MutexGuard<'_, Book> {
        self.book
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The journal now holds the entry `name` of the agent at `at`, or
    /// failed to: at the root, the transcript learns what it gives.
    fn journaled<T: serde::Serialize>(
        &self,
        at: &str,
        name: &str,
        journaled: &Result<Json<T>, TerminalError>,
    ) {
        if !at.is_empty() {
            return;
        }
        let mut book = self.book();
        match journaled
            .as_ref()
            .map(|Json(value)| serde_json::to_vec(value))
        {
            Ok(Ok(value)) => book.kept.entry(name, &value),
            _ => book.kept.broken(name),
        }
    }

    fn write_header(&self, book: &Book) {
        self.ctx.set(HEADER, Json(book.header.clone()));
    }

    /// Writes the page being filled, if it adds anything.
    fn flush(&self, book: &mut Book) {
        let page = &book.page;
        if page.is_empty() && page.steps == book.flushed {
            return;
        }
        let next = Page {
            steps: page.steps,
            ..Page::default()
        };
        let page = std::mem::replace(&mut book.page, next);
        book.flushed = page.steps;
        book.page_bytes = 0;
        self.ctx.set(&page_key(book.pages), Json(page));
        book.pages += 1;
    }

    /// Writes the page being filled once it holds [`STEPS_A_PAGE`] steps
    /// or a step's limit of bytes.
    fn flush_due(&self) {
        let mut book = self.book();
        if book.page.steps - book.flushed >= STEPS_A_PAGE || book.page_bytes >= self.max_step_bytes
        {
            self.flush(&mut book);
        }
    }

    /// One more step done.
    fn stepped(&self) {
        self.book().page.steps += 1;
    }

    /// The run waits for `waits_for` on `call`: said in its header; the
    /// promise made for this wait.
    fn wait_begins(&self, at: &str, call: &ToolCall, waits_for: &str) -> Wait {
        let mut book = self.book();
        book.waits += 1;
        // A call of a nested agent waits by its path.
        let call = ToolCall {
            call_id: path(at, call),
            ..call.clone()
        };
        let promise = format!("{waits_for}:{}:{}", book.waits, call.call_id);
        let wait = Wait {
            promise: promise.clone(),
            call_id: call.call_id.clone(),
        };
        book.header.pending.push(Waiting {
            call,
            waits_for: waits_for.to_owned(),
            promise,
        });
        book.header.state = "waiting".to_owned();
        self.flush(&mut book);
        self.write_header(&book);
        wait
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

    /// The run ended with `outcome`: its last page says how (every wait
    /// has ended, so the header waits for nothing).
    pub(crate) fn finish(&self, outcome: &DurableOutcome) {
        let mut book = self.book();
        debug_assert!(book.header.pending.is_empty());
        // The outcome's transcript is the run's last word (a guardrail's
        // rewrite of the answer, say).
        book.settle(outcome.transcript());
        let ended = match outcome {
            DurableOutcome::Completed { .. } => "completed",
            DurableOutcome::Failed { .. } => "failed",
            DurableOutcome::Cancelled { .. } => "cancelled",
        };
        book.page.ended = Some(ended.to_owned());
        self.flush(&mut book);
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
        let size = json_size(output);
        if size <= max_step_bytes {
            return result;
        }
        JournaledResult::Error(format!(
            "{}: return less, or a reference to where the rest is",
            over_the_step_limit("the output", size, max_step_bytes)
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

    /// Runs `step`'s call, with an idempotency key of the run's id and the
    /// call's. A tool not marked idempotent has its start journaled before
    /// each attempt: played again after a crash that cut it, its outcome
    /// is unknown, and a person decides ([`Resolution`]) instead of it
    /// running again unasked.
    async fn run_call(&self, at: &str, step: ToolStep) -> ToolResult<ToolOutput> {
        let key = format!("{}/{at}{}", self.ctx.key(), step.call.call_id);
        let mut step = step.idempotency_key(key);
        for attempt in 0.. {
            match self.attempt(at, step, attempt).await {
                Attempt::Done(outcome) => return outcome,
                Attempt::Unknown(cut) => match self.unknown_outcome(at, &cut.call).await {
                    Ok(known) => return known,
                    Err(RunAgain) => step = cut,
                },
            }
        }
        unreachable!("the attempts end in an outcome")
    }

    /// Attempt `attempt` (from 0) at `step`'s call.
    async fn attempt(&self, at: &str, step: ToolStep, attempt: usize) -> Attempt {
        let name = format!("{at}{}", call_entry(&step.call.call_id, attempt));
        if step.keeps_checkpoints() {
            return self.call_in_parts(at, step, name).await;
        }
        if self.idempotent(&step.call.tool_name) {
            return Attempt::Done(self.journal_call(at, step, name).await);
        }
        match self.begun_here(format!("start {name}")).await {
            Err(error) => return Attempt::Done(self.failed_step(&error)),
            Ok(true) => return Attempt::Done(self.journal_call(at, step, name).await),
            Ok(false) => {}
        }
        // Started by an earlier attempt, never recorded: the entry says so.
        let journaled = self.begun_before(name.clone()).await;
        self.journaled(at, &name, &journaled);
        match journaled {
            Ok(Json(result)) => match result.known() {
                Some(outcome) => Attempt::Done(outcome),
                None => Attempt::Unknown(step),
            },
            Err(error) => Attempt::Done(self.failed_step(&error)),
        }
    }

    /// Journals the entry `marker`, which says a step begins: whether this
    /// attempt is the one that began it (false when an earlier attempt
    /// did, and the journal gives the entry back).
    async fn begun_here(&self, marker: String) -> Result<bool, TerminalError> {
        let began = Arc::new(AtomicBool::new(false));
        let flag = began.clone();
        self.ctx
            .run(move || async move {
                flag.store(true, Ordering::SeqCst);
                Ok(())
            })
            .name(marker)
            .await?;
        Ok(began.load(Ordering::SeqCst))
    }

    /// The entry `name` of a step an earlier attempt began: what the
    /// journal holds, or, when a crash cut the step before it ended,
    /// [`JournaledResult::Unknown`].
    async fn begun_before(&self, name: String) -> Result<Json<JournaledResult>, TerminalError> {
        self.ctx
            .run(|| async { Ok(Json(JournaledResult::Unknown)) })
            .name(name)
            .await
    }

    /// Runs `step`, whose tool can be run in two parts
    /// ([`CallPart`](behest::CallPart)): the start, which must happen once
    /// (an imported MCP tool's `tools/call`), in an entry of its own, then
    /// the rest (awaiting the server's task) in the call's entry `name`,
    /// from what the start kept. Played again after a crash in the rest,
    /// the call goes on from the same start. A start cut by a crash is
    /// what any call cut by one is: run again for a tool marked
    /// idempotent, else of an unknown outcome.
    async fn call_in_parts(&self, at: &str, step: ToolStep, name: String) -> Attempt {
        let start_entry = format!("{at}start part of {}", &name[at.len()..]);
        let starting = step.clone().extension(behest::CallPart::Start);
        let max_step_bytes = self.max_step_bytes;
        let run_start = move || async move {
            let result = JournaledResult::from(starting.run().await);
            Ok(Json(Self::bounded(result, max_step_bytes)))
        };
        let started = if self.idempotent(&step.call.tool_name) {
            self.ctx.run(run_start).name(start_entry).await
        } else {
            // The start's beginning is journaled first, as any call's is.
            match self.begun_here(format!("begun {start_entry}")).await {
                Err(error) => return Attempt::Done(self.failed_step(&error)),
                Ok(true) => self.ctx.run(run_start).name(start_entry).await,
                // Begun by an earlier attempt: its entry says what it
                // kept, or that a crash cut it.
                Ok(false) => self.begun_before(start_entry).await,
            }
        };
        let kept = match started {
            Ok(Json(result)) => match result.known() {
                Some(Ok(output)) => output.text.unwrap_or_default(),
                // A start that failed is the call's outcome.
                Some(Err(error)) => return Attempt::Done(Err(error)),
                None => return Attempt::Unknown(step),
            },
            Err(error) => return Attempt::Done(self.failed_step(&error)),
        };
        let kept: serde_json::Value = match serde_json::from_str(&kept) {
            Ok(kept) => kept,
            Err(error) => {
                return Attempt::Done(Err(ToolError::execution(format!(
                    "the engine could not read what the start of `{}` kept: {error}",
                    step.call.tool_name
                ))))
            }
        };
        let rest = step.extension(behest::CallPart::Finish(kept));
        Attempt::Done(self.journal_call(at, rest, name).await)
    }

    /// Runs `step`, a call of the agent at `at`, in the journal entry
    /// `name`.
    async fn journal_call(&self, at: &str, step: ToolStep, name: String) -> ToolResult<ToolOutput> {
        let max_step_bytes = self.max_step_bytes;
        // What this attempt saw of the tool, should the entry not be told.
        let seen: Arc<Mutex<Option<JournaledResult>>> = Arc::default();
        let keep = seen.clone();
        let journaled = self
            .ctx
            .run(move || async move {
                let result = Self::bounded(JournaledResult::from(step.run().await), max_step_bytes);
                *lock(&keep) = Some(result.clone());
                Ok(Json(result))
            })
            .name(name.clone())
            .await;
        self.journaled(at, &name, &journaled);
        match journaled {
            Ok(Json(result)) => result.known().unwrap_or(Err(ToolError::Cancelled)),
            // Cancelled while the tool ran: Restate tells of the
            // cancellation rather than of the entry, in this attempt and
            // in a replay alike.
            Err(error) if error.code() == 409 => {
                self.control.cancel();
                let seen = lock(&seen).take();
                self.kept_after_cancel(at, &name, seen).await
            }
            Err(error) => self.failed_step(&error),
        }
    }

    /// The outcome of a call the run was cancelled during: this attempt
    /// saw the tool end, and journals what it did in an entry of its own,
    /// which a replay reads back; a replay with no such entry (the service
    /// stopped before it) cannot know, and says so.
    async fn kept_after_cancel(
        &self,
        at: &str,
        name: &str,
        seen: Option<JournaledResult>,
    ) -> ToolResult<ToolOutput> {
        let kept = after_cancel_entry(name);
        let journaled = self
            .ctx
            .run(move || async move { Ok(Json(seen.unwrap_or(JournaledResult::Unknown))) })
            .name(kept.clone())
            .await;
        self.journaled(at, &kept, &journaled);
        match journaled {
            Ok(Json(result)) => result.known().unwrap_or_else(|| {
                Err(ToolError::execution(format!(
                    "the run was cancelled while this call ran; the tool was not stopped and may have finished (Restate's journal has its outcome, in the entry `{name}`)"
                )))
            }),
            Err(error) => Err(ToolError::execution(format!(
                "the run was cancelled while this call ran, and its outcome could not be kept: {}",
                error.message()
            ))),
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
    /// deadline) for a person to say what it did; `Err` to run it again.
    async fn unknown_outcome(
        &self,
        at: &str,
        call: &ToolCall,
    ) -> Result<ToolResult<ToolOutput>, RunAgain> {
        let deadline = self.agent.options().approval_deadline;
        let Wait { promise, call_id } = self.wait_begins(at, call, "outcome");
        let decided: Option<Resolution> = restate_sdk::select! {
            resolve = self.ctx.promise::<Json<Resolve>>(&promise) => match resolve {
                Ok(Json(resolve)) => Some(resolve.resolution),
                Err(error) => Some(Resolution::Failed(error.message().to_owned())),
            },
            _ = self.ctx.sleep(deadline) => None,
            on_cancel => {
                self.wait_ends(&call_id);
                self.control.cancel();
                return Ok(Err(ToolError::execution(
                    "the run was cancelled while this call's outcome was unknown: it may or may not have run",
                )));
            }
        };
        self.wait_ends(&call_id);
        match decided {
            Some(Resolution::Ran(output)) => Ok(Ok(output)),
            Some(Resolution::Failed(reason)) => Ok(Err(ToolError::execution(reason))),
            Some(Resolution::RunAgain) => Err(RunAgain),
            None => Ok(Err(ToolError::execution(format!(
                "the call was cut by a crash and may or may not have run; nobody said which within {deadline:?}"
            )))),
        }
    }

    /// Waits for an answer to an external call, within `deadline`.
    async fn external(
        &self,
        at: &str,
        call: &ToolCall,
        deadline: Duration,
    ) -> ToolResult<ToolOutput> {
        let Wait { promise, call_id } = self.wait_begins(at, call, "answer");
        let outcome: ToolResult<ToolOutput> = restate_sdk::select! {
            answer = self.ctx.promise::<Json<Answer>>(&promise) => match answer {
                Ok(Json(answer)) => Ok(answer.output),
                Err(error) => Err(ToolError::execution(error.message().to_owned())),
            },
            _ = self.ctx.sleep(deadline) => Err(ToolError::Timeout { after: deadline }),
            on_cancel => {
                self.wait_ends(&call_id);
                return self.cancelled();
            }
        };
        self.wait_ends(&call_id);
        outcome
    }

    /// Waits for an approval of `call`, within `deadline`: `Err` with
    /// the call's result when it is not given.
    async fn approval(&self, at: &str, call: &ToolCall, deadline: Duration) -> ToolResult<()> {
        let Wait { promise, call_id } = self.wait_begins(at, call, "approval");
        let denied: Option<String> = restate_sdk::select! {
            approval = self.ctx.promise::<Json<Approval>>(&promise) => match approval {
                Ok(Json(approval)) if approval.approved => None,
                Ok(Json(approval)) => Some(approval.reason.unwrap_or_else(|| "denied".to_owned())),
                Err(error) => Some(error.message().to_owned()),
            },
            _ = self.ctx.sleep(deadline) => Some(format!("nobody approved it within {deadline:?}")),
            on_cancel => {
                self.wait_ends(&call_id);
                self.cancelled()?;
                None
            }
        };
        self.wait_ends(&call_id);
        match denied {
            None => Ok(()),
            Some(reason) => Err(ToolError::ApprovalDenied { reason }),
        }
    }

    /// The outcome of `step`, a call of the agent at `at` (`""` for the
    /// root, `name#call_id/…` below), as its kind asks.
    async fn carry_out(&self, at: &str, step: ToolStep) -> ToolResult<ToolOutput> {
        match step.kind {
            StepKind::External { deadline, approval } => {
                if let Some(approval) = approval {
                    self.approval(at, &step.call, approval).await?;
                }
                self.external(at, &step.call, deadline).await
            }
            StepKind::NeedsApproval { deadline } => {
                self.approval(at, &step.call, deadline).await?;
                self.run_step(at, step).await
            }
            _ => self.run_step(at, step).await,
        }
    }

    /// Runs `step`: an agent's call as the steps of its own run, each
    /// journaled under the call's path; any other as one journaled call.
    async fn run_step(&self, at: &str, step: ToolStep) -> ToolResult<ToolOutput> {
        if step.agent().is_none() {
            return self.run_call(at, step).await;
        }
        let below = Below {
            steps: self,
            at: format!("{at}{}#{}/", step.call.tool_name, step.call.call_id),
        };
        step.run_with(&below).await
    }

    /// A model turn of the agent at `at`.
    async fn model_turn_at(
        &self,
        at: &str,
        turn: ModelTurn<'_>,
    ) -> Result<AssistantMessage, ModelError> {
        self.flush_due();
        // A nested agent's run has a control of its own: the root's
        // cancellation reaches it here, before another turn is paid for.
        if self.control.is_cancelled() {
            return Err(ModelError::new("the run was cancelled"));
        }
        let name = format!("{at}{}", model_turn_entry(turn.index));
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
                        let size = json_size(&answer);
                        if size > max_step_bytes {
                            let why =
                                over_the_step_limit("the model's answer", size, max_step_bytes);
                            return Ok(Json(Err(why)));
                        }
                        Ok(Json(Ok(answer)))
                    }
                    Err(error) if error.retryable => Err(HandlerError::from(error)),
                    Err(error) => Ok(Json(Err(error.to_string()))),
                }
            })
            .retry_policy(retry)
            .name(name.clone())
            .await;
        self.journaled(at, &name, &journaled);
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
    }

    /// A decision of the agent at `at`.
    async fn decision_at(
        &self,
        at: &str,
        name: String,
        decide: BoxFuture<'_, serde_json::Value>,
    ) -> serde_json::Value {
        let name = format!("{at}{name}");
        let journaled = self
            .ctx
            .run(move || async move { Ok(Json(decide.await)) })
            .name(name.clone())
            .await;
        self.journaled(at, &name, &journaled);
        match journaled {
            Ok(Json(decided)) => decided,
            Err(error) => {
                if error.code() == 409 {
                    self.control.cancel();
                }
                // Read by the run as a decision it could not make.
                json!({"error": error.message()})
            }
        }
    }

    /// A tool call of the agent at `at`.
    async fn tool_call_at(&self, at: &str, step: ToolStep) -> ToolResult<ToolOutput> {
        self.flush_due();
        // Restate tells one waiting step of a cancellation; the others
        // of the round learn it here, and ask nothing more of it.
        if self.control.is_cancelled() {
            return self.cancelled();
        }
        let outcome = self.carry_out(at, step).await;
        self.stepped();
        outcome
    }
}

/// A wait begun: the promise that answers it, and the call's name in the
/// run's header (its id, or its path below the root).
struct Wait {
    promise: String,
    call_id: String,
}

/// What the call `call` of the agent at `at` is known by: its id at the
/// root, its path below.
fn path(at: &str, call: &ToolCall) -> String {
    if at.is_empty() {
        call.call_id.clone()
    } else {
        format!("{at}{}#{}", call.tool_name, call.call_id)
    }
}

/// The steps of an agent run as a tool, at `at` in the tree: journaled in
/// the root's journal one by one, named under the call's path. The root's
/// step holds the one-at-a-time lock for them all.
struct Below<'s, 'a, 'ctx> {
    steps: &'s RestateSteps<'a, 'ctx>,
    at: String,
}

impl RunSteps for Below<'_, '_, '_> {
    fn model_turn<'t>(
        &'t self,
        turn: ModelTurn<'t>,
    ) -> BoxFuture<'t, Result<AssistantMessage, ModelError>> {
        Box::pin(self.steps.model_turn_at(&self.at, turn))
    }

    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(self.steps.tool_call_at(&self.at, step))
    }

    fn event(&self, kind: &EventKind) {
        if !kept_below(kind) {
            return;
        }
        // Kept with the path of the agent that told it.
        self.steps
            .book()
            .event(Some(self.at.trim_end_matches('/')), kind);
    }

    fn decision<'t>(
        &'t self,
        name: String,
        decide: BoxFuture<'t, serde_json::Value>,
    ) -> BoxFuture<'t, serde_json::Value> {
        Box::pin(self.steps.decision_at(&self.at, name, decide))
    }
}

/// A person said to run a call again.
struct RunAgain;

/// `mutex`, whatever a panic left in it.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl RunSteps for RestateSteps<'_, '_> {
    fn model_turn<'s>(
        &'s self,
        turn: ModelTurn<'s>,
    ) -> BoxFuture<'s, Result<AssistantMessage, ModelError>> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            self.model_turn_at("", turn).await
        })
    }

    fn event(&self, kind: &EventKind) {
        if kept_at_the_root(kind) {
            self.book().event(None, kind);
        }
    }

    fn message(&self, message: &Message) {
        self.book().push(message.clone());
    }

    fn rewritten(&self, transcript: &[Message]) {
        self.book().settle(transcript);
    }

    fn decision<'a>(
        &'a self,
        name: String,
        decide: BoxFuture<'a, serde_json::Value>,
    ) -> BoxFuture<'a, serde_json::Value> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            self.decision_at("", name, decide).await
        })
    }

    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            let _one_at_a_time = self.turn.lock().await;
            self.tool_call_at("", step).await
        })
    }
}

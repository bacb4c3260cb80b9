//! Guardrails: checks a run makes on the user's message, on the final
//! answer, and on each tool call before it runs and on its output before
//! the model sees it. Each may allow, rewrite, refuse with a message the
//! model reads, or stop the run.

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use super::events::EventKind;
use super::part::{Looping, Run};
use super::stage::{Decided, Flow, Stage};
use super::Agent;
use super::{RunError, RunOutcome};
use crate::conversation::{ContentPart, Message, ToolResultMessage};
use crate::runtime::LocalRun;
use crate::tool::{ToolCall, ToolError, ToolOutput, ToolResult};

/// What a guardrail decides about what it checked.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Verdict<T> {
    /// It passes as it is.
    Allow,
    /// It passes as this instead (a message with a secret masked, arguments
    /// within bounds, an output trimmed); later guardrails see this.
    Rewrite(T),
    /// It does not pass, and the model reads why: the user's message is
    /// withheld, the answer sent back, the call not run, the output
    /// withheld. The run goes on.
    Refuse(String),
    /// The run stops here (a tripwire), failing with
    /// [`RunError::Guardrail`](super::RunError::Guardrail); a call stopped
    /// so does not run.
    Stop(String),
}

/// Where a guardrail checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GuardrailStage {
    /// The user's last message, before the model is first asked.
    Input,
    /// The final answer (its text, or a typed answer's JSON).
    Output,
    /// A tool call's validated arguments, before it runs.
    ToolCall,
    /// A tool call's output, before the model sees it.
    ToolOutput,
}

impl std::fmt::Display for GuardrailStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Input => "user's message",
            Self::Output => "final answer",
            Self::ToolCall => "tool call",
            Self::ToolOutput => "tool output",
        })
    }
}

/// What a guardrail did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum GuardrailAction {
    /// Let it pass as it was.
    Allowed,
    /// Let it pass rewritten.
    Rewrote,
    /// Refused it; the model reads why.
    Refused,
    /// Stopped the run.
    Stopped,
}

/// A guardrail fired: the run's [`EventKind::Guardrail`] event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct GuardrailEvent {
    /// The guardrail's name.
    pub guardrail: String,
    /// Where it checked.
    pub stage: GuardrailStage,
    /// The call it checked, at the tool stages.
    pub call_id: Option<String>,
    /// What it did.
    pub action: GuardrailAction,
    /// Why, when it refused or stopped.
    pub reason: Option<String>,
}

type Check<I, O> = Arc<dyn Fn(I) -> BoxFuture<'static, Verdict<O>> + Send + Sync>;

/// One named guardrail: a check of `I` that may rewrite it as `O`.
pub(crate) struct Guard<I, O> {
    name: String,
    check: Check<I, O>,
}

impl<I, O> Clone for Guard<I, O> {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            check: self.check.clone(),
        }
    }
}

impl<I, O> std::fmt::Debug for Guard<I, O> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

impl<I: 'static, O: 'static> Guard<I, O> {
    pub(crate) fn new<F, Fut>(name: impl Into<String>, check: F) -> Self
    where
        F: Fn(I) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Verdict<O>> + Send + 'static,
    {
        Self {
            name: name.into(),
            check: Arc::new(move |input| Box::pin(check(input))),
        }
    }
}

/// An agent's guardrails, by stage, each run in the order added.
#[derive(Clone, Debug, Default)]
pub(crate) struct Guardrails {
    pub(crate) input: Vec<Guard<String, String>>,
    pub(crate) output: Vec<Guard<String, String>>,
    pub(crate) tool_call: Vec<Guard<ToolCall, Value>>,
    pub(crate) tool_output: Vec<Guard<(ToolCall, ToolOutput), ToolOutput>>,
}

/// The stage of the guardrails.
pub(super) struct Guarded;

impl Stage for Guarded {
    fn start<'a>(&'a self, run: &'a Run<'_>, looping: &'a mut Looping) -> Decided<'a, Flow> {
        Box::pin(async move {
            match run.guard_input(&mut looping.transcript).await {
                Ok(()) => Flow::Go,
                Err(error) => Flow::End(RunOutcome::failed(error, looping.take())),
            }
        })
    }

    fn on_outcome<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        outcome: RunOutcome,
    ) -> Decided<'a, Option<RunOutcome>> {
        Box::pin(async move {
            match run.guard_answer(outcome).await {
                Ok(outcome) => Some(outcome),
                Err(back) => {
                    looping.transcript = back;
                    None
                }
            }
        })
    }

    fn sees_calls(&self, run: &Run<'_>, _tool_name: &str) -> bool {
        run.agent
            .options
            .features
            .get::<Guardrails>()
            .is_some_and(|guardrails| {
                !guardrails.tool_call.is_empty() || !guardrails.tool_output.is_empty()
            })
    }

    fn on_call<'a>(
        &'a self,
        run: &'a Run<'_>,
        call: ToolCall,
        local: LocalRun,
    ) -> Decided<'a, ToolResult<(ToolCall, LocalRun)>> {
        Box::pin(run.guard_call(call, local))
    }

    fn on_output<'a>(
        &'a self,
        run: &'a Run<'_>,
        call: &'a ToolCall,
        outcome: ToolResult<ToolOutput>,
    ) -> Decided<'a, ToolResult<ToolOutput>> {
        Box::pin(async move {
            match outcome {
                Ok(output) => run.guard_output(call.clone(), output).await,
                Err(error) => Err(error),
            }
        })
    }
}

impl Agent {
    /// Checks the user's last message before the model is first asked:
    /// the guardrail `check` gets its text (a message of parts: its text
    /// parts) and may let it pass ([`Verdict::Allow`]), pass it rewritten,
    /// withhold it from the model with a note the model reads
    /// ([`Verdict::Refuse`]), or stop the run before anything happens
    /// ([`Verdict::Stop`], [`RunError::Guardrail`]). Guardrails of a stage
    /// run in the order added, each on what the one before let pass; each
    /// verdict is an [`EventKind::Guardrail`] event. A guardrail is async:
    /// it may ask a model of its own.
    ///
    /// ```
    /// use behest::run::{ScriptedTurn, Verdict};
    /// use behest::{Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let model = ScriptedModel::new([ScriptedTurn::text("Noted.")]);
    /// let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
    ///     .input_guardrail("no_card_numbers", |text: String| async move {
    ///         if text.chars().filter(char::is_ascii_digit).count() >= 13 {
    ///             Verdict::Rewrite(text.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect())
    ///         } else {
    ///             Verdict::Allow
    ///         }
    ///     });
    /// let outcome = agent.invoke([Message::user("My card is 4111 1111 1111 1111")]).await;
    /// assert_eq!(outcome.transcript()[0], Message::user("My card is #### #### #### ####"));
    /// # }
    /// ```
    #[must_use]
    pub fn input_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<String>> + Send + 'static,
    {
        let guard = Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.input.push(guard))
    }

    /// Checks the final answer before the run completes with it: its text,
    /// or a typed answer's JSON. A rewrite is the answer (a typed run's
    /// must still match its type); a refusal is sent back for the model to
    /// answer again (a round against [`max_steps`](Self::max_steps)); a
    /// stop fails the run. See [`input_guardrail`](Self::input_guardrail).
    #[must_use]
    pub fn output_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<String>> + Send + 'static,
    {
        let guard = Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.output.push(guard))
    }

    /// Checks each tool call once its arguments are validated, before it
    /// runs (or is put to a person or a handler): the guardrail gets the
    /// call with its validated arguments. A rewrite gives new arguments,
    /// validated again; a refusal is the call's error result, which the
    /// model reads, and the tool does not run; a stop does not run it and
    /// fails the run once the round's other calls have their results. See
    /// [`input_guardrail`](Self::input_guardrail).
    #[must_use]
    pub fn tool_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn(crate::ToolCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<serde_json::Value>> + Send + 'static,
    {
        let guard = Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.tool_call.push(guard))
    }

    /// Checks each tool call's output before the model sees it: the
    /// guardrail gets the call and its output. A rewrite is the output the
    /// model reads; a refusal withholds it (the model reads why, as the
    /// call's error); a stop fails the run once the round's calls have
    /// their results. See [`input_guardrail`](Self::input_guardrail).
    #[must_use]
    pub fn tool_output_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn((crate::ToolCall, crate::ToolOutput)) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<crate::ToolOutput>> + Send + 'static,
    {
        let guard = Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.tool_output.push(guard))
    }

    /// This agent with its guardrails changed by `add`.
    fn with_guardrails(mut self, add: impl FnOnce(&mut Guardrails)) -> Self {
        self.options_mut().features.update(add);
        self
    }
}

impl Run<'_> {
    /// The agent's guardrails of one stage, `of` says which (none when the
    /// agent has none).
    fn guardrails<T>(&self, of: impl Fn(&Guardrails) -> &[T]) -> &[T] {
        self.agent
            .options
            .features
            .get::<Guardrails>()
            .map_or(&[], of)
    }
}

/// How a stage's guardrails judged.
pub(crate) enum Judged<T> {
    /// Passed, perhaps rewritten.
    Pass(T),
    /// A guardrail refused: its name and why.
    Refused(String, String),
    /// A guardrail stopped the run: its name and why.
    Stopped(String, String),
    /// A guardrail panicked: the run's error for it.
    Panicked(RunError),
}

impl Run<'_> {
    /// Runs `guards` in order on `input`, each on what the one before let
    /// pass (`rewrite` puts a rewrite in place), telling each verdict.
    pub(crate) async fn judge<
        I: Clone + Send,
        O: Serialize + serde::de::DeserializeOwned + Send,
    >(
        &self,
        guards: &[Guard<I, O>],
        stage: GuardrailStage,
        call_id: Option<&str>,
        mut input: I,
        rewrite: impl Fn(&mut I, O),
    ) -> Judged<I> {
        for guard in guards {
            let span = tracing::info_span!(
                "guardrail",
                behest.guardrail.name = %guard.name,
                behest.guardrail.stage = %stage,
                gen_ai.tool.call.id = call_id,
                behest.guardrail.action = tracing::field::Empty,
            );
            // Asked only when polled: a run played again from a journal
            // does not ask the guardrail at all. A panic is the run's error.
            let asked = input.clone();
            let traced = span.clone();
            let part = format!("the {stage} guardrail `{}`", guard.name);
            let checked = part.clone();
            let check = async move {
                let checking = super::panics::caught_async(&checked, || (guard.check)(asked));
                tracing::Instrument::instrument(checking, traced).await
            };
            let verdict = match self.steps {
                None => check.await,
                // Journaled: a run played again gets the verdict it had.
                Some(_) => {
                    let what = format!("guardrail `{}`", guard.name);
                    let decided = self
                        .decide(
                            &what,
                            Box::pin(async move {
                                match check.await {
                                    Ok(verdict) => {
                                        serde_json::to_value(verdict).unwrap_or(Value::Null)
                                    }
                                    Err(RunError::Panicked { message, .. }) => {
                                        serde_json::json!({ "panicked": message })
                                    }
                                    Err(error) => {
                                        serde_json::json!({ "panicked": error.to_string() })
                                    }
                                }
                            }),
                        )
                        .await;
                    match decided.get("panicked").and_then(Value::as_str) {
                        Some(message) => Err(RunError::Panicked {
                            part,
                            message: message.to_owned(),
                        }),
                        None => Ok(serde_json::from_value(decided).unwrap_or_else(|error| {
                            Verdict::Stop(format!(
                                "the journaled verdict could not be read: {error}"
                            ))
                        })),
                    }
                }
            };
            let verdict = match verdict {
                Ok(verdict) => verdict,
                Err(error) => {
                    span.record("behest.guardrail.action", "stopped");
                    self.emit(EventKind::Guardrail(GuardrailEvent {
                        guardrail: guard.name.clone(),
                        stage,
                        call_id: call_id.map(str::to_owned),
                        action: GuardrailAction::Stopped,
                        reason: Some(error.to_string()),
                    }));
                    return Judged::Panicked(error);
                }
            };
            let (action, reason) = match &verdict {
                Verdict::Allow => (GuardrailAction::Allowed, None),
                Verdict::Rewrite(_) => (GuardrailAction::Rewrote, None),
                Verdict::Refuse(why) => (GuardrailAction::Refused, Some(why.clone())),
                Verdict::Stop(why) => (GuardrailAction::Stopped, Some(why.clone())),
            };
            span.record(
                "behest.guardrail.action",
                format!("{action:?}").to_lowercase(),
            );
            if action != GuardrailAction::Allowed {
                tracing::info!(guardrail = %guard.name, %stage, ?action, reason = reason.as_deref().unwrap_or(""), "a guardrail fired");
            }
            self.emit(EventKind::Guardrail(GuardrailEvent {
                guardrail: guard.name.clone(),
                stage,
                call_id: call_id.map(str::to_owned),
                action,
                reason,
            }));
            match verdict {
                Verdict::Allow => {}
                Verdict::Rewrite(rewritten) => rewrite(&mut input, rewritten),
                Verdict::Refuse(why) => return Judged::Refused(guard.name.clone(), why),
                Verdict::Stop(why) => return Judged::Stopped(guard.name.clone(), why),
            }
        }
        Judged::Pass(input)
    }

    /// The input guardrails on the transcript's last user message: the
    /// transcript with it rewritten or withheld, or the run's error.
    pub(crate) async fn guard_input(
        &self,
        transcript: &mut [Message],
    ) -> Result<(), super::RunError> {
        let guards = self.guardrails(|guardrails| &guardrails.input);
        if guards.is_empty() {
            return Ok(());
        }
        let Some(message) = transcript
            .iter_mut()
            .rev()
            .find(|message| matches!(message, Message::User { .. } | Message::UserParts { .. }))
        else {
            return Ok(());
        };
        let text = user_text(message);
        match self
            .judge(
                guards,
                GuardrailStage::Input,
                None,
                text.clone(),
                |text, new| *text = new,
            )
            .await
        {
            Judged::Pass(passed) => {
                if passed != text {
                    set_user_text(message, passed);
                }
                Ok(())
            }
            Judged::Refused(guardrail, why) => {
                *message = Message::user(format!(
                    "(The user's message was withheld by the guardrail `{guardrail}`: {why})"
                ));
                Ok(())
            }
            Judged::Stopped(guardrail, reason) => Err(super::RunError::Guardrail {
                guardrail,
                stage: GuardrailStage::Input,
                reason,
            }),
            Judged::Panicked(error) => Err(error),
        }
    }
}

impl Run<'_> {
    /// The output guardrails on a completed run's answer: the outcome to
    /// return, or (refused) the transcript to go on with, the refusal in
    /// it for the model to read.
    pub(crate) async fn guard_answer(
        &self,
        outcome: RunOutcome,
    ) -> Result<RunOutcome, Vec<Message>> {
        let guards = self.guardrails(|guardrails| &guardrails.output);
        let RunOutcome::Completed {
            text,
            mut transcript,
            ..
        } = outcome
        else {
            return Ok(outcome);
        };
        if guards.is_empty() {
            return Ok(RunOutcome::completed(text, transcript));
        }
        let judged = self
            .judge(
                guards,
                GuardrailStage::Output,
                None,
                text.clone(),
                |text, new| *text = new,
            )
            .await;
        match judged {
            Judged::Pass(passed) if passed == text => Ok(RunOutcome::completed(text, transcript)),
            Judged::Pass(passed) => match &self.agent.options.final_output {
                // A typed answer rewritten must still be of its type.
                Some(output) => match output.accept_text(&passed, self.agent.runtime.limits()) {
                    Ok(value) => Ok(RunOutcome::completed(value.to_string(), transcript)),
                    Err(reason) => Ok(RunOutcome::failed(
                        RunError::Output {
                            message: format!(
                                "a guardrail's rewrite of the answer does not match the type asked for: {reason}"
                            ),
                        },
                        transcript,
                    )),
                },
                // The transcript says what the caller was given.
                None => {
                    if let Some(Message::Assistant(reply)) = transcript.last_mut() {
                        reply.text = Some(passed.clone());
                    }
                    Ok(RunOutcome::completed(passed, transcript))
                }
            },
            Judged::Refused(guardrail, why) => {
                for message in refusal_of_answer(&transcript, &guardrail, &why) {
                    self.add(&mut transcript, message);
                }
                Err(transcript)
            }
            Judged::Stopped(guardrail, reason) => Ok(RunOutcome::failed(
                RunError::Guardrail {
                    guardrail,
                    stage: GuardrailStage::Output,
                    reason,
                },
                transcript,
            )),
            Judged::Panicked(error) => Ok(RunOutcome::failed(error, transcript)),
        }
    }

    /// The tool-call guardrails on a validated call: the call (and its run)
    /// as they let it pass, or the call's result without running it.
    pub(crate) async fn guard_call(
        &self,
        call: ToolCall,
        run: LocalRun,
    ) -> ToolResult<(ToolCall, LocalRun)> {
        let guards = self.guardrails(|guardrails| &guardrails.tool_call);
        if guards.is_empty() {
            return Ok((call, run));
        }
        let call_id = call.call_id.clone();
        let judged = self
            .judge(
                guards,
                GuardrailStage::ToolCall,
                Some(&call_id),
                call.clone(),
                |call, arguments| {
                    call.arguments = arguments;
                },
            )
            .await;
        match judged {
            Judged::Pass(passed) if passed.arguments == call.arguments => Ok((passed, run)),
            Judged::Pass(passed) => {
                let run = run.with_arguments(&passed.tool_name, passed.arguments.clone())?;
                Ok((passed, run))
            }
            Judged::Refused(guardrail, why) => Err(ToolError::execution(format!(
                "not run: the guardrail `{guardrail}` refused the call: {why}"
            ))),
            Judged::Stopped(guardrail, reason) => {
                Err(self.trip(guardrail, GuardrailStage::ToolCall, reason))
            }
            Judged::Panicked(error) => Err(self.trip_on(error)),
        }
    }

    /// The tool-output guardrails on a call's output: the output the model
    /// reads, or the call's error.
    pub(crate) async fn guard_output(
        &self,
        call: ToolCall,
        output: ToolOutput,
    ) -> ToolResult<ToolOutput> {
        let guards = self.guardrails(|guardrails| &guardrails.tool_output);
        if guards.is_empty() {
            return Ok(output);
        }
        let call_id = call.call_id.clone();
        let judged = self
            .judge(
                guards,
                GuardrailStage::ToolOutput,
                Some(&call_id),
                (call, output),
                |(_, output), new| {
                    *output = new;
                },
            )
            .await;
        match judged {
            Judged::Pass((_, output)) => Ok(output),
            Judged::Refused(guardrail, why) => Err(ToolError::execution(format!(
                "the output was withheld by the guardrail `{guardrail}`: {why}"
            ))),
            Judged::Stopped(guardrail, reason) => {
                Err(self.trip(guardrail, GuardrailStage::ToolOutput, reason))
            }
            Judged::Panicked(error) => Err(self.trip_on(error)),
        }
    }

    /// Marks the run stopped by `guardrail` (it fails once the round's
    /// calls have their results): the stopped call's error.
    fn trip(&self, guardrail: String, stage: GuardrailStage, reason: String) -> ToolError {
        let said = format!("not run: the guardrail `{guardrail}` stopped the run: {reason}");
        let mut tripped = crate::sync::lock(&self.tripped);
        // The first guardrail to stop the run is the one it names.
        tripped.get_or_insert(RunError::Guardrail {
            guardrail,
            stage,
            reason,
        });
        ToolError::execution(said)
    }

    /// Marks the run failed with `error` (a guardrail that panicked) once
    /// the round's calls have their results: the call's error, which says
    /// only that the check failed.
    fn trip_on(&self, error: RunError) -> ToolError {
        let said = match &error {
            RunError::Panicked { part, .. } => format!("not run: {part} failed"),
            other => format!("not run: {other}"),
        };
        crate::sync::lock(&self.tripped).get_or_insert(error);
        ToolError::execution(said)
    }
}

/// The text of a user message (a message of parts: its text parts).
fn user_text(message: &Message) -> String {
    match message {
        Message::User { text } => text.clone(),
        Message::UserParts { parts } => parts
            .iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Puts `text` in place of a user message's text (a message of parts
/// keeps its other parts, the text where its first text part was).
fn set_user_text(message: &mut Message, text: String) {
    match message {
        Message::User { text: old } => *old = text,
        Message::UserParts { parts } => {
            let first = parts
                .iter()
                .position(|part| matches!(part, ContentPart::Text { .. }))
                .unwrap_or(0);
            parts.retain(|part| !matches!(part, ContentPart::Text { .. }));
            let first = first.min(parts.len());
            parts.insert(first, ContentPart::Text { text });
        }
        _ => {}
    }
}

/// What the model reads when the final answer is refused: a result for
/// each of the last turn's calls that has none (the `final_answer` call of
/// a typed run), or else a user message.
pub(crate) fn refusal_of_answer(
    transcript: &[Message],
    guardrail: &str,
    why: &str,
) -> Vec<Message> {
    let said =
        format!("Your answer was not accepted (guardrail `{guardrail}`): {why}. Answer again.");
    let unanswered: Vec<&ToolCall> = transcript
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::Assistant(reply) => Some(reply),
            _ => None,
        })
        .map(|reply| {
            reply
                .tool_calls
                .iter()
                .filter(|call| {
                    !transcript.iter().any(|message| {
                        matches!(message, Message::ToolResult(result) if result.call_id == call.call_id)
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if unanswered.is_empty() {
        return vec![Message::user(said)];
    }
    unanswered
        .into_iter()
        .map(|call| {
            Message::ToolResult(
                ToolResultMessage::new(call.call_id.clone(), call.tool_name.clone(), said.clone())
                    .with_error(true),
            )
        })
        .collect()
}

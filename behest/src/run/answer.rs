//! The answer stage: what a model turn means for the run. A turn that
//! would end the run must be whole (a turn cut at the token cap, filtered
//! or refused is no answer; a paused one is sent back). A typed run's final
//! answer ([`Agent::with_output`]) is asked for natively or through the
//! `final_answer` tool, taken, reminded about or refused here.

use super::output::{FinalOutput, FINAL_ANSWER};
use super::part::{result_message, Looping, Run};
use super::part::{Offer, Offered};
use super::stage::{Decided, Flow, Stage};
use super::{Agent, RunError, RunOutcome};
use crate::conversation::{AssistantMessage, Message, StopKind};
use crate::runtime::{ToolCall, ToolCallResult};
use crate::tool::ToolError;

/// The answer stage.
pub(super) struct Answer;

impl Stage for Answer {
    fn offer(&self, agent: &Agent, offer: &mut Offer) {
        if let Some(output) = &agent.options.final_output {
            // A model that answers in a schema's shape is asked for the
            // answer so; any other is offered the `final_answer` tool.
            if agent.model.supports_structured_output() {
                offer.output = Some(output.native_spec());
            } else {
                offer.tools.push(Offered {
                    spec: output.spec.clone(),
                    what: "the typed answer's tool".to_owned(),
                });
            }
        }
    }

    fn after_answer<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        reply: &'a AssistantMessage,
        calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        Box::pin(std::future::ready(run.after_turn(reply, looping, calls)))
    }
}

/// What a typed run makes of a reply.
enum Final {
    /// The answer, as JSON text: the run completes.
    Given(String),
    /// A text reply that is not the answer: remind the model with
    /// `reminder`, or fail with `failure` when no reminder is left.
    Remind { reminder: String, failure: String },
    /// No answer yet: the run goes on.
    NotYet,
    /// A `final_answer` call was refused with `result`: with a reminder
    /// left, the model reads it, the turn's other calls still run and the
    /// model answers again; without, the run fails with `failure`.
    Refused {
        failure: String,
        result: ToolCallResult,
    },
}

impl Run<'_> {
    /// What follows `reply`, already in the transcript (the results and
    /// reminders it calls for are added there); `calls` are left to run.
    fn after_turn(
        &self,
        reply: &AssistantMessage,
        looping: &mut Looping,
        calls: &mut Vec<ToolCall>,
    ) -> Flow {
        let transcript = &mut looping.transcript;
        // A turn that would end the run must be whole: one cut at the
        // token cap, filtered or refused is no answer. A paused turn is
        // sent back as it is for the model to go on.
        if let (true, Some(stop)) = (calls.is_empty(), &reply.stop) {
            match stop.kind {
                StopKind::Completed => {}
                StopKind::Paused => return Flow::Ask,
                // A reason behest does not know (a compatible server's
                // own) is no proof of a cut: the answer stands.
                StopKind::Other => {
                    tracing::warn!(stop = %stop.raw, "the model ended its turn for a reason behest does not know");
                }
                _ => {
                    let reason = stop.clone();
                    let transcript = std::mem::take(transcript);
                    return Flow::End(RunOutcome::failed(
                        RunError::Incomplete { reason },
                        transcript,
                    ));
                }
            }
        }
        let Some(output) = &self.agent.options.final_output else {
            return Flow::Go;
        };
        let look = if self.offer.output.is_some() {
            self.native_answer(output, reply)
        } else {
            self.final_answer(output, reply, calls, transcript)
        };
        let end = |error, transcript: &mut Vec<Message>| {
            Flow::End(RunOutcome::failed(error, std::mem::take(transcript)))
        };
        // Reminders are counted over the agent's part of the run.
        let reminders = looping
            .progress
            .reminders
            .get_or_insert(self.agent.options.output_reminders);
        match look {
            Final::Given(text) => {
                let transcript = std::mem::take(transcript);
                Flow::End(RunOutcome::completed(text, transcript))
            }
            Final::Remind { reminder, .. } if *reminders > 0 => {
                *reminders -= 1;
                self.add(transcript, Message::user(reminder));
                Flow::Ask
            }
            Final::Remind { failure, .. } => end(RunError::Output { message: failure }, transcript),
            // No answer yet: calls left run, and a text with none is the
            // answer (the loop's to take).
            Final::NotYet => Flow::Go,
            Final::Refused { failure, result } if *reminders == 0 => {
                // Every call in a transcript gets its result.
                let why = "not run: the run ended on a final answer that does not match";
                self.close_turn(transcript, reply, result, calls.drain(..), why);
                end(RunError::Output { message: failure }, transcript)
            }
            // The model reads why its answer was refused, with the other
            // calls' results beside it; with no other call in the turn, it
            // answers again at once.
            Final::Refused { result, .. } => {
                self.add(transcript, result_message(&result));
                *reminders -= 1;
                if calls.is_empty() {
                    Flow::Ask
                } else {
                    Flow::Go
                }
            }
        }
    }

    /// A natively typed run's look at a reply: tool calls are not the
    /// answer yet; a text is, if it matches the schema, and is sent back
    /// with the reason if it does not.
    fn native_answer(&self, output: &FinalOutput, reply: &AssistantMessage) -> Final {
        if !reply.tool_calls.is_empty() {
            return Final::NotYet;
        }
        let text = reply.text.as_deref().unwrap_or_default();
        match output.accept_text(text, self.agent.runtime.limits()) {
            Ok(value) => Final::Given(value.to_string()),
            Err(reason) => Final::Remind {
                reminder: format!(
                    "Your answer does not have the required format: {reason}. Answer again, with JSON that matches the schema."
                ),
                failure: format!("the model's answer does not have the required format: {reason}"),
            },
        }
    }

    /// A typed run's look at a reply: an accepted `final_answer` call ends
    /// the run (the turn's other calls are answered, not run); a refused
    /// one gets its argument error, which the caller puts in the transcript
    /// (and runs the other calls) while a reminder is left; a text-only
    /// reply is taken if it is the answer as JSON, else reminded.
    fn final_answer(
        &self,
        output: &FinalOutput,
        reply: &AssistantMessage,
        calls: &mut Vec<ToolCall>,
        transcript: &mut Vec<Message>,
    ) -> Final {
        let limits = self.agent.runtime.limits();
        if calls.is_empty() {
            let text = reply.text.as_deref().unwrap_or_default();
            return match output.accept_text(text, limits) {
                Ok(value) => Final::Given(value.to_string()),
                Err(_) => Final::Remind {
                    reminder: format!(
                        "Give your final answer by calling the `{FINAL_ANSWER}` tool."
                    ),
                    failure: format!(
                        "the model answered without calling `{FINAL_ANSWER}`, the tool that gives the typed answer"
                    ),
                },
            };
        }
        let Some(position) = calls.iter().position(|call| call.tool_name == FINAL_ANSWER) else {
            return Final::NotYet;
        };
        let final_call = calls.remove(position);
        match output.accept(&final_call.arguments, limits) {
            Ok(value) => {
                let given = self.finished(final_call, Ok(FinalOutput::accepted()));
                let why = "not run: the final answer was given";
                self.close_turn(transcript, reply, given, calls.drain(..), why);
                Final::Given(value.to_string())
            }
            Err(error) => {
                let failure =
                    format!("the model's `{FINAL_ANSWER}` does not match the type: {error}");
                let result = self.finished(final_call, Err(error));
                Final::Refused { failure, result }
            }
        }
    }

    /// Ends a turn on its `final_answer`: `given`, that call's own result,
    /// then every call in `rest` answered as not run, for `why`.
    fn close_turn(
        &self,
        transcript: &mut Vec<Message>,
        reply: &AssistantMessage,
        given: ToolCallResult,
        rest: impl Iterator<Item = ToolCall>,
        why: &str,
    ) {
        // In the order of the reply's calls, as providers expect.
        let position = |call_id: &str| {
            reply
                .tool_calls
                .iter()
                .position(|call| call.call_id == call_id)
        };
        let mut rest: Vec<ToolCall> = rest.collect();
        rest.sort_by_key(|call| position(&call.call_id));
        let (before, after): (Vec<_>, Vec<_>) = rest
            .into_iter()
            .partition(|call| position(&call.call_id) < position(&given.call_id));
        self.unrun(transcript, before, |_| ToolError::execution(why));
        self.add(transcript, result_message(&given));
        self.unrun(transcript, after, |_| ToolError::execution(why));
    }
}

impl Agent {
    /// Asks every run for a final answer of type `T`, validated against
    /// `T`'s schema. A model that [supports structured
    /// output](crate::Model::supports_structured_output) (the OpenAI and Gemini clients) is
    /// asked for it in that shape, and a final text that does not match is
    /// sent back with the reason; any other model gives it by calling the
    /// `final_answer` tool (offered besides the agent's tools), and a
    /// mismatch goes back as an argument error to correct. A mismatch is
    /// sent back [`output_reminders`](Self::output_reminders) times (once by
    /// default); the next one fails the run with [`RunError::Output`]. The answer is
    /// the completed run's text as JSON; [`RunOutcome::output`] reads it as
    /// `T`. See also [`output`](Self::output).
    #[must_use]
    pub fn with_output<T: schemars::JsonSchema>(mut self) -> Self {
        self.options_mut().final_output = Some(FinalOutput::of::<T>());
        self
    }

    /// How many times a typed run sends an answer back for correction
    /// before it fails with [`RunError::Output`]: a `final_answer` call or a
    /// structured answer that does not match the type, or a text instead
    /// of a `final_answer` call. Default 1; 0 fails at the first mismatch.
    /// Holds for [`with_output`](Self::with_output) and
    /// [`output`](Self::output), in either order.
    #[must_use]
    pub fn output_reminders(mut self, reminders: usize) -> Self {
        self.options_mut().output_reminders = reminders;
        self
    }
}

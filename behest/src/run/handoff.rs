//! Handoffs: a run's model passes the conversation to another agent
//! ([`Agent::handoff`]), and the run goes on there, with that agent's
//! model, tools, instructions and typed output.

use std::sync::Arc;

use serde_json::json;

use super::agent::Agent;
use super::part::{result_message, Looping, Offer, Offered, Run};
use super::stage::{Decided, Flow, Passing, Stage};
use super::{EventKind, RunError, RunOutcome};
use crate::conversation::Message;
use crate::tool::{ToolCall, ToolError, ToolOutput, ToolSpec};

/// How many times one run may be handed off before it fails: agents that
/// hand a conversation back and forth would otherwise never end.
pub const MAX_HANDOFFS: usize = 8;

/// What a conversation handed off is turned into before the next agent
/// sees it (drop tool calls, keep the last messages, …).
pub type InputFilter = Arc<dyn Fn(Vec<Message>) -> Vec<Message> + Send + Sync>;

/// The agents a run's model may hand the conversation to: the agent's
/// settings of this feature.
#[derive(Clone, Default)]
pub(crate) struct Targets(Vec<Handoff>);

impl Targets {
    /// The handoff of `name` (its tool-safe name), if there is one.
    pub(crate) fn named(&self, name: &str) -> Option<&Handoff> {
        self.0.iter().find(|handoff| handoff.name == name)
    }
}

/// One agent a run's model may hand the conversation to.
#[derive(Clone)]
pub(crate) struct Handoff {
    /// The agent's name, in the tool `transfer_to_<name>`.
    pub(crate) name: String,
    /// The name as the builder was given it.
    given_name: String,
    description: String,
    pub(crate) agent: Agent,
    filter: Option<InputFilter>,
}

impl std::fmt::Debug for Handoff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handoff")
            .field("name", &self.name)
            .field("filtered", &self.filter.is_some())
            .finish_non_exhaustive()
    }
}

impl Handoff {
    /// The tool the model calls to hand off.
    fn tool_name(&self) -> String {
        format!("transfer_to_{}", self.name)
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            self.tool_name(),
            format!(
                "Hand the conversation to {}: {}",
                self.name, self.description
            ),
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
        )
    }
}

/// The stage of handoffs.
pub(super) struct Handoffs;

impl Stage for Handoffs {
    fn offer(&self, agent: &Agent, offer: &mut Offer) {
        let Some(targets) = agent.options.features.get::<Targets>() else {
            return;
        };
        offer.tools.extend(targets.0.iter().map(|handoff| Offered {
            spec: handoff.spec(),
            what: format!("the handoff named `{}`", handoff.given_name),
        }));
    }

    fn before_calls<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        let targets = run.agent.options.features.get::<Targets>();
        let asked = targets.and_then(|targets| {
            calls.iter().find_map(|call| {
                let to = targets
                    .0
                    .iter()
                    .find(|to| to.tool_name() == call.tool_name)?;
                Some((to.clone(), call.call_id.clone()))
            })
        });
        let flow = match asked {
            None => Flow::Go,
            Some((to, call_id)) => run.hand_off(looping, std::mem::take(calls), &to, &call_id),
        };
        Box::pin(std::future::ready(flow))
    }
}

impl Run<'_> {
    /// Hands the run to `to`, asked for by the call `call_id` among
    /// `calls`: every call gets its result (the handoff's says where the
    /// conversation went, the others were not run), and the next agent
    /// gets the conversation as it should see it.
    fn hand_off(
        &self,
        looping: &mut Looping,
        calls: Vec<ToolCall>,
        to: &Handoff,
        call_id: &str,
    ) -> Flow {
        let name = &to.name;
        for call in calls {
            if call.call_id == call_id {
                let said = ToolOutput::text(format!("Handed off to {name}."));
                let result = self.finished(call, Ok(said));
                self.add(&mut looping.transcript, result_message(&result));
            } else {
                self.unrun(&mut looping.transcript, vec![call], |_| {
                    ToolError::execution(format!(
                        "not run: the conversation was handed off to {name}"
                    ))
                });
            }
        }
        looping.progress.handoffs = looping.progress.handoffs.saturating_add(1);
        if looping.progress.handoffs > MAX_HANDOFFS {
            let error = RunError::Handoffs { max: MAX_HANDOFFS };
            return Flow::End(RunOutcome::failed(error, looping.take()));
        }
        self.emit(EventKind::Handoff { to: name.clone() });
        let conversation = match pass_on(looping.take(), self.agent, to) {
            Ok(conversation) => conversation,
            Err((error, transcript)) => return Flow::End(RunOutcome::failed(error, transcript)),
        };
        // A filter must leave every result beside its call.
        if let Some(why) = super::context::broken_pairs(&conversation) {
            let error = RunError::Context {
                message: format!("the input filter of the handoff to {name}: {why}"),
            };
            return Flow::End(RunOutcome::failed(error, conversation));
        }
        Flow::HandOff(Passing {
            name: name.clone(),
            agent: to.agent.clone(),
            conversation,
        })
    }
}

impl Agent {
    /// Lets the model hand the conversation to `agent`, by calling the tool
    /// `transfer_to_<name>` (offered beside the agent's own, described by
    /// `description`; characters of `name` a provider refuses in a tool
    /// name become `_`). The run goes on there: the conversation so far
    /// (this agent's instructions replaced by that agent's), that agent's
    /// model, tools, guardrails and typed output; the run's usage and
    /// request count carry over, and its events say so
    /// ([`EventKind::Handoff`]). The handoff call gets a result saying where
    /// the conversation went; other calls of the turn are not run. A run
    /// is handed off at most [`MAX_HANDOFFS`] times.
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let billing = Agent::new(
    ///     ScriptedModel::new([ScriptedTurn::text("Your invoice is on its way.")]),
    ///     ToolRuntime::new(ToolRegistry::new()),
    /// )
    /// .instructions("You handle billing.");
    /// let triage = Agent::new(
    ///     ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new("h1", "transfer_to_billing", "{}")])]),
    ///     ToolRuntime::new(ToolRegistry::new()),
    /// )
    /// .instructions("You route questions.")
    /// .handoff("billing", "invoices and payments", billing);
    /// let outcome = triage.invoke([Message::user("Where is my invoice?")]).await;
    /// assert_eq!(outcome.text(), Some("Your invoice is on its way."));
    /// assert_eq!(outcome.transcript()[0], Message::system("You handle billing."));
    /// # }
    /// ```
    #[must_use]
    pub fn handoff(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Agent,
    ) -> Self {
        self.with_handoff(name.into(), description.into(), agent, None)
    }

    /// [`handoff`](Self::handoff), the conversation passed through
    /// `filter` first (to drop tool calls and their results, keep the last
    /// messages, summarise, …). What it returns must keep each tool result
    /// beside its call and begin with the user: the run checks, and fails
    /// with [`RunError::Context`] if not; a filter that panics fails it
    /// with [`RunError::Panicked`].
    #[must_use]
    pub fn handoff_filtered(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Agent,
        filter: impl Fn(Vec<Message>) -> Vec<Message> + Send + Sync + 'static,
    ) -> Self {
        let filter: InputFilter = Arc::new(filter);
        self.with_handoff(name.into(), description.into(), agent, Some(filter))
    }

    /// This agent able to hand the conversation to `agent` under `name`.
    fn with_handoff(
        mut self,
        name: String,
        description: String,
        agent: Agent,
        filter: Option<InputFilter>,
    ) -> Self {
        let handoff = Handoff {
            name: tool_safe(&name),
            given_name: name,
            description,
            agent,
            filter,
        };
        self.options_mut()
            .features
            .update(|targets: &mut Targets| targets.0.push(handoff));
        self
    }
}

/// The conversation as the next agent gets it: the last agent's
/// instructions out, the filter applied, the next one's instructions in.
/// A filter that panics is the run's error, beside the transcript as it
/// was given to it.
fn pass_on(
    mut transcript: Vec<Message>,
    from: &Agent,
    to: &Handoff,
) -> Result<Vec<Message>, (RunError, Vec<Message>)> {
    if let (Some(instructions), Some(Message::System { text })) =
        (&from.options.instructions, transcript.first())
    {
        if text == instructions {
            transcript.remove(0);
        }
    }
    if let Some(filter) = &to.filter {
        let given = transcript.clone();
        let part = format!("the input filter of the handoff to {}", to.name);
        transcript =
            super::panics::caught(&part, || filter(transcript)).map_err(|error| (error, given))?;
    }
    Ok(with_instructions(&to.agent, transcript))
}

/// `name` as a part of a tool name every provider takes
/// (`^[a-zA-Z0-9_-]{1,64}$` with `transfer_to_` before it): other
/// characters become `_`, and it is cut at 52 characters.
pub(crate) fn tool_safe(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64 - "transfer_to_".len())
        .collect();
    if safe.is_empty() {
        "agent".to_owned()
    } else {
        safe
    }
}

/// `conversation` with `agent`'s instructions first, when it has some.
pub(crate) fn with_instructions(agent: &Agent, mut conversation: Vec<Message>) -> Vec<Message> {
    if let Some(instructions) = &agent.options.instructions {
        conversation.insert(0, Message::system(instructions.clone()));
    }
    conversation
}

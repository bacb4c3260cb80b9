//! Handoffs: a run's model passes the conversation to another agent
//! ([`Agent::handoff`]), and the run goes on there, with that agent's
//! model, tools, instructions and typed output.

use std::sync::Arc;

use serde_json::json;

use super::{Agent, RunError};
use crate::conversation::Message;
use crate::tool::{ToolCall, ToolSpec};

/// How many times one run may be handed off before it fails: agents that
/// hand a conversation back and forth would otherwise never end.
pub const MAX_HANDOFFS: usize = 8;

/// What a conversation handed off is turned into before the next agent
/// sees it (drop tool calls, keep the last messages, …).
pub type InputFilter = Arc<dyn Fn(Vec<Message>) -> Vec<Message> + Send + Sync>;

/// One agent a run's model may hand the conversation to.
#[derive(Clone)]
pub(crate) struct Handoff {
    /// The agent's name, in the tool `transfer_to_<name>`.
    pub(crate) name: String,
    /// The name as the builder was given it.
    pub(crate) given_name: String,
    pub(crate) description: String,
    pub(crate) agent: Agent,
    pub(crate) filter: Option<InputFilter>,
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
    pub(crate) fn tool_name(&self) -> String {
        format!("transfer_to_{}", self.name)
    }

    pub(crate) fn spec(&self) -> ToolSpec {
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

/// A handoff the model asked for: to whom, by which call.
pub(crate) struct Asked {
    pub(crate) to: Handoff,
    pub(crate) call: ToolCall,
}

/// The first of `calls` that hands off, among `handoffs`.
pub(crate) fn asked_for(handoffs: &[Handoff], calls: &[ToolCall]) -> Option<Asked> {
    calls.iter().find_map(|call| {
        handoffs
            .iter()
            .find(|handoff| handoff.tool_name() == call.tool_name)
            .map(|handoff| Asked {
                to: handoff.clone(),
                call: call.clone(),
            })
    })
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

/// The conversation as the next agent gets it: the last agent's
/// instructions out, the filter applied, the next one's instructions in.
/// A filter that panics is the run's error, beside the transcript as it
/// was given to it.
pub(crate) fn pass_on(
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

/// `conversation` with `agent`'s instructions first, when it has some.
pub(crate) fn with_instructions(agent: &Agent, mut conversation: Vec<Message>) -> Vec<Message> {
    if let Some(instructions) = &agent.options.instructions {
        conversation.insert(0, Message::system(instructions.clone()));
    }
    conversation
}

//! A provider-neutral conversation: the messages, turns, token counts,
//! reasoning state and streamed pieces that runs and wire formats both
//! speak. It names nothing above it: [`run`](crate::run) builds
//! conversations, [`providers`](crate::providers) maps them to and from each
//! format.

mod content;
mod delta;
mod message;
mod reasoning;
mod stop;

mod wire;

pub use crate::usage::Usage;
pub use content::{ContentPart, MediaSource};
pub use delta::{DeltaSink, ModelDelta};
pub use message::{AssistantMessage, Message, ToolResultMessage};
pub(crate) use reasoning::TurnPart;
pub use reasoning::{Reasoning, ReasoningPlace};
pub use stop::{StopKind, StopReason};
pub use wire::WireFormat;

use crate::tool::ToolCall;

/// The name of the tool that call `call_id` called, from the conversation.
pub(crate) fn tool_name_of(conversation: &[Message], call_id: &str) -> String {
    last_call(conversation, |call| call.call_id == call_id)
        .map(|call| call.tool_name.clone())
        .unwrap_or_default()
}

/// The latest call in the conversation that `wanted` accepts.
pub(crate) fn last_call(
    conversation: &[Message],
    wanted: impl Fn(&ToolCall) -> bool,
) -> Option<&ToolCall> {
    conversation.iter().rev().find_map(|message| match message {
        Message::Assistant(assistant) => {
            assistant.tool_calls.iter().rev().find(|call| wanted(call))
        }
        _ => None,
    })
}

//! A provider's reasoning state, kept on the turn it belongs to.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{AssistantMessage, WireFormat};
use crate::tool::ToolCall;

/// One piece of a provider's reasoning state, opaque to behest: it goes
/// back unchanged, and only to the wire format it came in (mapping a
/// conversation to another format drops it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reasoning {
    /// The wire format it came in.
    pub provider: WireFormat,
    /// Where in the turn it goes back.
    pub place: ReasoningPlace,
    /// The provider's JSON as it came: the whole entry for
    /// [`ReasoningPlace::Entry`], otherwise the fields that go on the part
    /// the place names.
    pub data: Value,
}

/// Where a piece of reasoning goes back in its turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReasoningPlace {
    /// An entry of its own: an Anthropic thinking block, a Responses
    /// reasoning item, a Gemini thought part. It goes after the turn's
    /// first `after_calls` tool calls, and before the text when that is 0.
    Entry {
        /// How many of the turn's tool calls came before it.
        after_calls: usize,
    },
    /// Fields of the turn: `reasoning_content` on a Chat message, a
    /// `thoughtSignature` on Gemini's text part.
    Turn,
    /// Fields of the part that carries one call: a `thoughtSignature` on
    /// Gemini's `functionCall` part, the item id that pairs a Responses
    /// `function_call` with the reasoning before it.
    Call {
        /// The id of that call.
        call_id: String,
    },
}

/// One part of a model turn, as a provider lists them.
pub(crate) enum TurnPart<'m> {
    /// A reasoning entry, as it came.
    Reasoning(&'m Value),
    /// The turn's text.
    Text(&'m str),
    /// A tool call.
    Call(&'m ToolCall),
}

/// The reasoning bookkeeping of a turn: what a format's reader keeps as it
/// reads a turn, and what its writer puts back where it came from.
impl AssistantMessage {
    /// Keeps `data` as a reasoning entry of its own, after the calls the
    /// message has so far.
    pub(crate) fn push_reasoning_entry(&mut self, format: WireFormat, data: Value) {
        let after_calls = self.tool_calls.len();
        self.push_reasoning(format, ReasoningPlace::Entry { after_calls }, data);
    }

    /// Keeps `fields` of the turn itself.
    pub(crate) fn push_turn_fields(&mut self, format: WireFormat, fields: Value) {
        self.push_reasoning(format, ReasoningPlace::Turn, fields);
    }

    /// Keeps `fields` of the part that carries call `call_id`.
    pub(crate) fn push_call_fields(&mut self, format: WireFormat, call_id: &str, fields: Value) {
        let place = ReasoningPlace::Call {
            call_id: call_id.to_owned(),
        };
        self.push_reasoning(format, place, fields);
    }

    fn push_reasoning(&mut self, format: WireFormat, place: ReasoningPlace, data: Value) {
        self.reasoning.push(Reasoning {
            provider: format,
            place,
            data,
        });
    }

    /// Whether the message has reasoning entries of `format`.
    pub(crate) fn has_reasoning_entries(&self, format: WireFormat) -> bool {
        self.reasoning.iter().any(|reasoning| {
            reasoning.provider == format && matches!(reasoning.place, ReasoningPlace::Entry { .. })
        })
    }

    /// The turn's text, calls and `format`'s reasoning entries in the order
    /// they came: each entry after the calls that came before it, the
    /// entries that came before every call ahead of the text. Reasoning of
    /// other formats is left out. A turn without text whose format keeps
    /// fields on the text part gets an empty text, to carry them.
    pub(crate) fn turn_parts<'m>(&'m self, format: WireFormat) -> Vec<TurnPart<'m>> {
        let mine = || {
            self.reasoning
                .iter()
                .filter(move |reasoning| reasoning.provider == format)
        };
        let mut entries: Vec<(usize, &'m Value)> = mine()
            .filter_map(|reasoning| match reasoning.place {
                ReasoningPlace::Entry { after_calls } => Some((after_calls, &reasoning.data)),
                _ => None,
            })
            .collect();
        entries.sort_by_key(|(after_calls, _)| *after_calls);
        let mut entries = entries.into_iter().peekable();
        let mut entries_after = |parts: &mut Vec<TurnPart<'m>>, calls: usize| {
            while let Some((_, data)) = entries.next_if(|(after_calls, _)| *after_calls <= calls) {
                parts.push(TurnPart::Reasoning(data));
            }
        };
        let mut parts = Vec::new();
        entries_after(&mut parts, 0);
        let has_turn_fields = mine().any(|reasoning| reasoning.place == ReasoningPlace::Turn);
        match (&self.text, has_turn_fields) {
            (Some(text), _) => parts.push(TurnPart::Text(text)),
            (None, true) => parts.push(TurnPart::Text("")),
            (None, false) => {}
        }
        for (calls, call) in self.tool_calls.iter().enumerate() {
            entries_after(&mut parts, calls);
            parts.push(TurnPart::Call(call));
        }
        entries_after(&mut parts, usize::MAX);
        parts
    }

    /// Adds `format`'s fields of the turn to `target`.
    pub(crate) fn add_turn_fields(&self, target: &mut Value, format: WireFormat) {
        self.add_fields(target, format, |place| *place == ReasoningPlace::Turn);
    }

    /// Adds `format`'s fields of call `call_id`'s part to `target`.
    pub(crate) fn add_call_fields(&self, target: &mut Value, format: WireFormat, call_id: &str) {
        self.add_fields(
            target,
            format,
            |place| matches!(place, ReasoningPlace::Call { call_id: id } if id == call_id),
        );
    }

    fn add_fields(
        &self,
        target: &mut Value,
        format: WireFormat,
        wanted: impl Fn(&ReasoningPlace) -> bool,
    ) {
        let Some(target) = target.as_object_mut() else {
            return;
        };
        for reasoning in &self.reasoning {
            if reasoning.provider != format || !wanted(&reasoning.place) {
                continue;
            }
            if let Some(fields) = reasoning.data.as_object() {
                target.extend(fields.clone());
            }
        }
    }
}

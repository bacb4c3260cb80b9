//! Reading a streamed answer: each format's assembler reads an event once,
//! and returns the pieces it added while it builds the whole message, so a
//! streamed piece and the assembled turn cannot disagree.

use serde_json::Value;

use super::ParseError;
use crate::conversation::{AssistantMessage, ModelDelta};

/// What one stream event added.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Pushed {
    /// The pieces of the turn the event carried, to show as they come.
    pub deltas: Vec<ModelDelta>,
    /// Whether the event is the format's end marker: a stream that stops
    /// before one was cut.
    pub ended: bool,
    /// The error the provider reported in the stream, as it came; the
    /// event added nothing else.
    pub error: Option<Value>,
}

impl Pushed {
    /// The pieces of one event that is not the end marker.
    pub(crate) fn deltas(deltas: Vec<ModelDelta>) -> Self {
        Self {
            deltas,
            ..Self::default()
        }
    }

    /// An event that reports an error.
    pub(crate) fn error(event: &Value) -> Self {
        Self {
            error: Some(event.clone()),
            ..Self::default()
        }
    }

    /// With the end marker seen, or not.
    pub(crate) fn ending(mut self, ended: bool) -> Self {
        self.ended = ended;
        self
    }
}

/// A format's stream assembler: events in, pieces out as they come, the
/// whole message at the end.
pub trait StreamAssembler: Default + Send {
    /// The format's end marker, to name when a stream stops before it.
    const END_MARKER: &'static str;

    /// Reads one event (an SSE `data` payload).
    fn push(&mut self, event: &Value) -> Result<Pushed, ParseError>;

    /// Reads one event from its JSON text, where the format reads events
    /// of its usual shape straight into its own types (one pass, no
    /// [`Value`]). `None` leaves the event to [`push`](Self::push), once
    /// the caller has parsed it: text that is not JSON, or an event of
    /// another shape. Either way the event adds the same.
    fn push_json(&mut self, data: &str) -> Option<Result<Pushed, ParseError>> {
        let _unread = data;
        None
    }

    /// [`push_json`](Self::push_json) with the event's pieces pushed onto
    /// `deltas` rather than into a `Vec` of their own in
    /// [`Pushed::deltas`]: the model clients keep one `deltas` for a
    /// whole stream, which saves an allocation per event. On `Err`,
    /// `deltas` may hold some of the failed event's pieces.
    #[doc(hidden)]
    fn __push_json_into(
        &mut self,
        data: &str,
        deltas: &mut Vec<ModelDelta>,
    ) -> Option<Result<Pushed, ParseError>> {
        let pushed = self.push_json(data)?;
        Some(pushed.map(|mut pushed| {
            deltas.append(&mut pushed.deltas);
            pushed
        }))
    }

    /// The assembled message, with the token counts the stream reported.
    fn finish(self) -> AssistantMessage;
}

/// A string field of an event, as a piece's text.
pub(crate) fn text_at(value: &Value, pointer: &str) -> Option<String> {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

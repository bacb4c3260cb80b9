//! A streamed Gemini answer, assembled from its chunks.

use serde_json::{Map, Value};

use super::{is_reasoning_part, is_thought, signature, GeneratedIds, SIGNATURE};
use crate::conversation::{AssistantMessage, ModelDelta, WireFormat};
use crate::providers::stream::{text_at, Pushed, StreamAssembler};
use crate::providers::{str_field, ParseError};
use crate::tool::ToolCall;

/// Assembles a streamed response: whole `functionCall` parts, or calls
/// streamed as `partialArgs` (`willContinue`) and closed by an empty
/// `functionCall`; consecutive thought parts are joined into one.
#[derive(Debug, Default)]
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    message: AssistantMessage,
    text: String,
    open: Option<OpenCall>,
    ids: GeneratedIds,
    /// Whether the last reasoning entry is a thought part that the next
    /// thought piece continues.
    thinking: bool,
}

/// A call whose last fragment said `willContinue`.
#[derive(Debug)]
struct OpenCall {
    id: Option<String>,
    name: String,
    args: Map<String, Value>,
    signature: Option<Value>,
}

/// What a `functionCall` part says of the call it belongs to.
struct Fragment<'a> {
    /// The function named, if any (an empty name is none).
    name: Option<&'a str>,
    /// The call's id, if any (an empty id is none).
    id: Option<&'a str>,
    /// Whether more of the call follows (`willContinue`).
    continues: bool,
}

impl<'a> Fragment<'a> {
    fn of(call: &'a Value) -> Self {
        let text = |key: &str| {
            call.get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        Self {
            name: text("name"),
            id: text("id"),
            continues: call
                .get("willContinue")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// Whether this part repeats the open call named `name` (with `id`)
    /// rather than starting the next one: a call closes before the next
    /// starts, so only a different name or id means a new call.
    fn repeats(&self, name: &str, id: Option<&str>) -> bool {
        self.name == Some(name) && (self.id.is_none() || id.is_none() || id == self.id)
    }
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for Stream {
    const END_MARKER: &'static str = "a `finishReason`";

    /// Adds one chunk; a chunk with a `finishReason` ends the turn. A
    /// call's piece has the index of its call in the assembled message.
    fn push(&mut self, chunk: &Value) -> Result<Pushed, ParseError> {
        if chunk.get("error").is_some() {
            return Ok(Pushed::error(chunk));
        }
        if let Some(blocked) = super::blocked_prompt(chunk) {
            return Err(blocked);
        }
        self.usage =
            crate::providers::usage::merge(self.usage, crate::providers::usage::gemini(chunk));
        let finish_reason = chunk
            .pointer("/candidates/0/finishReason")
            .and_then(Value::as_str);
        if let Some(reason) = finish_reason {
            self.message.stop = Some(super::stop_reason(reason));
        }
        let ended = finish_reason.is_some();
        let mut deltas = Vec::new();
        let parts = chunk
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                deltas.push(if is_thought(part) {
                    ModelDelta::Reasoning(text.to_owned())
                } else {
                    ModelDelta::Text(text.to_owned())
                });
            }
            if let Some(call) = part.get("functionCall") {
                self.thinking = false;
                if let Some(index) = self.function_call(call, signature(part))? {
                    deltas.push(ModelDelta::ToolCall {
                        index,
                        id: text_at(call, "/id"),
                        name: text_at(call, "/name"),
                        arguments: call.get("args").map(Value::to_string).unwrap_or_default(),
                    });
                }
            } else if is_reasoning_part(part) {
                self.thought(part);
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                self.thinking = false;
                self.text.push_str(text);
                if let Some(fields) = signature(part) {
                    self.message.push_turn_fields(WireFormat::Gemini, fields);
                }
            }
        }
        Ok(Pushed::deltas(deltas).ending(ended))
    }

    /// The assembled message.
    fn finish(mut self) -> AssistantMessage {
        self.close();
        self.message.text = (!self.text.is_empty()).then_some(self.text);
        self.message.usage = self.usage;
        self.message
    }
}

impl Stream {
    /// Adds a thought piece to the thought part before it, or starts one. A
    /// signature ends a part: it comes with its last piece.
    fn thought(&mut self, part: &Value) {
        let growing =
            self.message.reasoning.last_mut().filter(|last| {
                self.thinking && is_thought(part) && last.data.get(SIGNATURE).is_none()
            });
        match growing {
            Some(last) => {
                let text = [&last.data, part]
                    .iter()
                    .filter_map(|piece| piece.get("text").and_then(Value::as_str))
                    .collect::<String>();
                if let (Some(joined), Some(piece)) = (last.data.as_object_mut(), part.as_object()) {
                    joined.extend(piece.clone());
                    joined.insert("text".into(), Value::String(text));
                }
            }
            None => self
                .message
                .push_reasoning_entry(WireFormat::Gemini, part.clone()),
        }
        self.thinking = is_thought(part);
    }

    /// Adds a `functionCall` part; returns the index its call has in the
    /// assembled message, or `None` for a nameless part with no call open,
    /// which makes no call.
    fn function_call(
        &mut self,
        call: &Value,
        signature: Option<Value>,
    ) -> Result<Option<usize>, ParseError> {
        let fragment = Fragment::of(call);
        let Fragment {
            name,
            id,
            continues,
        } = fragment;
        if let Some(name) = name {
            match &mut self.open {
                Some(open) if fragment.repeats(&open.name, open.id.as_deref()) => {
                    open.id = open.id.take().or_else(|| id.map(str::to_owned));
                }
                _ => {
                    self.close();
                    self.open = Some(OpenCall {
                        id: id.map(str::to_owned),
                        name: name.to_owned(),
                        args: Map::new(),
                        signature: None,
                    });
                }
            }
        }
        // The open call is not yet among the closed ones before it.
        let index = self.open.is_some().then_some(self.message.tool_calls.len());
        if let Some(open) = &mut self.open {
            if let Some(args) = call.get("args").and_then(Value::as_object) {
                open.args.extend(args.clone());
            }
            open.signature = open.signature.take().or(signature);
        }
        for partial in call
            .get("partialArgs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(OpenCall { args, .. }) = &mut self.open else {
                return Err(ParseError::new("partialArgs for no open functionCall"));
            };
            let path = str_field(partial, "jsonPath", "partialArgs[]")?;
            let key = path.strip_prefix("$.").ok_or_else(|| {
                ParseError::new(format!("partialArgs[]: unsupported jsonPath `{path}`"))
            })?;
            if let Some(piece) = partial.get("stringValue").and_then(Value::as_str) {
                let slot = args
                    .entry(key.to_owned())
                    .or_insert_with(|| Value::String(String::new()));
                if let Value::String(text) = slot {
                    text.push_str(piece);
                }
            } else if let Some(value) = ["numberValue", "boolValue", "nullValue"]
                .iter()
                .find_map(|k| partial.get(*k))
            {
                args.insert(key.to_owned(), value.clone());
            }
        }
        if !continues {
            self.close();
        }
        Ok(index)
    }

    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            let id = open.id.unwrap_or_else(|| self.ids.next());
            if let Some(fields) = open.signature {
                self.message
                    .push_call_fields(WireFormat::Gemini, &id, fields);
            }
            self.message
                .tool_calls
                .push(ToolCall::new(id, open.name, Value::Object(open.args)));
        }
    }
}

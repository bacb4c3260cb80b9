//! A streamed Converse answer (ConverseStream), assembled from its events.
//!
//! ConverseStream sends AWS event-stream frames; each frame's event type is
//! in a header and its payload is JSON. The model clients hand each event
//! on as one JSON object keyed by its type, as the AWS SDKs show them:
//! `{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "Hi"}}}`.
//! An exception frame comes as `{"error": {"type": "throttlingException",
//! "message": "…"}}`.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::conversation::{AssistantMessage, ModelDelta, StopReason, Usage, WireFormat};
use crate::providers::stream::{Pushed, StreamAssembler};
use crate::providers::{str_field, ParseError};
use crate::tool::ToolCall;

/// Assembles a streamed Converse message: text, tool input fragments and
/// reasoning joined per content block, in block order.
#[derive(Debug, Default)]
pub struct Stream {
    usage: Option<Usage>,
    blocks: BTreeMap<u64, Block>,
    stop: Option<StopReason>,
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
    /// Reasoning text with its signature, or redacted reasoning.
    Reasoning {
        text: String,
        signature: Option<String>,
        redacted: Option<String>,
    },
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for Stream {
    const END_MARKER: &'static str = "`messageStop`";

    /// Adds one event; `messageStop` ends the message (the `metadata`
    /// event with the usage comes after it, and is read when it comes).
    fn push(&mut self, event: &Value) -> Result<Pushed, ParseError> {
        if event.get("error").is_some() {
            return Ok(Pushed::error(event));
        }
        let mut deltas = Vec::new();
        if let Some(start) = event.get("contentBlockStart") {
            let index = block_index(start, "contentBlockStart")?;
            if let Some(call) = start.pointer("/start/toolUse") {
                let id = str_field(call, "toolUseId", "toolUse")?.to_owned();
                let name = str_field(call, "name", "toolUse")?.to_owned();
                deltas.push(ModelDelta::ToolCall {
                    index: position(index),
                    id: Some(id.clone()),
                    name: Some(name.clone()),
                    arguments: String::new(),
                });
                self.blocks.entry(index).or_insert(Block::ToolUse {
                    id,
                    name,
                    json: String::new(),
                });
            }
        } else if let Some(delta) = event.get("contentBlockDelta") {
            let index = block_index(delta, "contentBlockDelta")?;
            let delta = delta
                .get("delta")
                .ok_or_else(|| ParseError::new("contentBlockDelta: `delta` is missing"))?;
            deltas.extend(self.delta(index, delta)?);
        } else if let Some(stop) = event.get("messageStop") {
            self.stop = stop
                .get("stopReason")
                .and_then(Value::as_str)
                .map(super::stop_reason);
            return Ok(Pushed::deltas(deltas).ending(true));
        } else if event.get("metadata").is_some() {
            self.usage = crate::providers::usage::merge(self.usage, super::usage(event));
        }
        Ok(Pushed::deltas(deltas))
    }

    /// Reads a text delta (most of a stream's events) straight from its
    /// text; any other event is left to [`push`](Self::push).
    fn push_json(&mut self, data: &str) -> Option<Result<Pushed, ParseError>> {
        let mut deltas = Vec::new();
        let pushed = self.push_text_json(data, &mut deltas)?;
        Some(pushed.map(|pushed| Pushed { deltas, ..pushed }))
    }

    fn __push_json_into(
        &mut self,
        data: &str,
        deltas: &mut Vec<ModelDelta>,
    ) -> Option<Result<Pushed, ParseError>> {
        self.push_text_json(data, deltas)
    }

    /// The assembled message. Tool input that reads as a JSON object is
    /// that object, as the whole answer has it; empty input is `{}`;
    /// anything else is left as text for the runtime to report.
    fn finish(self) -> AssistantMessage {
        let mut message = AssistantMessage {
            usage: self.usage,
            stop: self.stop,
            ..AssistantMessage::default()
        };
        let mut text = String::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(piece) => text.push_str(&piece),
                Block::ToolUse { id, name, json } => {
                    let arguments = if json.trim().is_empty() {
                        json!({})
                    } else {
                        match serde_json::from_str::<Value>(&json) {
                            Ok(object @ Value::Object(_)) => object,
                            _ => Value::String(json),
                        }
                    };
                    message.tool_calls.push(ToolCall::new(id, name, arguments));
                }
                Block::Reasoning {
                    text,
                    signature,
                    redacted,
                } => {
                    let block = match redacted {
                        Some(data) => json!({"reasoningContent": {"redactedContent": data}}),
                        None => {
                            let mut reasoning = json!({ "text": text });
                            if let Some(signature) = signature {
                                reasoning["signature"] = Value::String(signature);
                            }
                            json!({"reasoningContent": {"reasoningText": reasoning}})
                        }
                    };
                    message.push_reasoning_entry(WireFormat::Bedrock, block);
                }
            }
        }
        message.text = (!text.is_empty()).then_some(text);
        message
    }
}

/// `{"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "…"}}}`,
/// other fields (Bedrock's padding `p`) passed over.
#[derive(serde::Deserialize)]
struct TextDeltaEvent<'a> {
    #[serde(rename = "contentBlockDelta", borrow)]
    block: TextDeltaBlock<'a>,
}

#[derive(serde::Deserialize)]
struct TextDeltaBlock<'a> {
    #[serde(rename = "contentBlockIndex")]
    index: u64,
    #[serde(borrow)]
    delta: TextDelta<'a>,
}

#[derive(serde::Deserialize)]
struct TextDelta<'a> {
    #[serde(borrow)]
    text: std::borrow::Cow<'a, str>,
}

impl Stream {
    /// A text delta read straight from its JSON; `None` for any other
    /// event, which [`push`](StreamAssembler::push) reads.
    fn push_text_json(
        &mut self,
        data: &str,
        deltas: &mut Vec<ModelDelta>,
    ) -> Option<Result<Pushed, ParseError>> {
        let event: TextDeltaEvent<'_> = serde_json::from_str(data).ok()?;
        let TextDeltaEvent {
            block: TextDeltaBlock { index, delta },
        } = event;
        let block = self
            .blocks
            .entry(index)
            .or_insert_with(|| Block::Text(String::new()));
        // A text piece for a block that holds something else is left to
        // the general reader, which refuses it.
        let Block::Text(joined) = block else {
            return None;
        };
        joined.push_str(&delta.text);
        deltas.push(ModelDelta::Text(delta.text.into_owned()));
        Some(Ok(Pushed::default()))
    }

    /// Adds a block's delta; returns the piece it shows.
    fn delta(&mut self, index: u64, delta: &Value) -> Result<Option<ModelDelta>, ParseError> {
        if let Some(piece) = delta.get("text").and_then(Value::as_str) {
            let Block::Text(joined) = self
                .blocks
                .entry(index)
                .or_insert_with(|| Block::Text(String::new()))
            else {
                return Err(ParseError::new(format!(
                    "text for block {index}, which holds something else"
                )));
            };
            joined.push_str(piece);
            return Ok(Some(ModelDelta::Text(piece.to_owned())));
        }
        if let Some(call) = delta.get("toolUse") {
            let fragment = str_field(call, "input", "toolUse delta")?;
            let Some(Block::ToolUse { json, .. }) = self.blocks.get_mut(&index) else {
                return Err(ParseError::new(format!(
                    "a toolUse delta for block {index}, which did not start as a tool call"
                )));
            };
            json.push_str(fragment);
            return Ok(Some(ModelDelta::ToolCall {
                index: position(index),
                id: None,
                name: None,
                arguments: fragment.to_owned(),
            }));
        }
        if let Some(reasoning) = delta.get("reasoningContent") {
            let block = self
                .blocks
                .entry(index)
                .or_insert_with(|| Block::Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: None,
                });
            let Block::Reasoning {
                text,
                signature,
                redacted,
            } = block
            else {
                return Err(ParseError::new(format!(
                    "reasoning for block {index}, which holds something else"
                )));
            };
            if let Some(piece) = reasoning.get("text").and_then(Value::as_str) {
                text.push_str(piece);
                return Ok(Some(ModelDelta::Reasoning(piece.to_owned())));
            }
            if let Some(signed) = reasoning.get("signature").and_then(Value::as_str) {
                *signature = Some(signed.to_owned());
            }
            if let Some(data) = reasoning.get("redactedContent").and_then(Value::as_str) {
                *redacted = Some(data.to_owned());
            }
        }
        Ok(None)
    }
}

/// An event's `contentBlockIndex`.
fn block_index(event: &Value, kind: &str) -> Result<u64, ParseError> {
    event
        .get("contentBlockIndex")
        .and_then(Value::as_u64)
        .ok_or_else(|| ParseError::new(format!("{kind}: `contentBlockIndex` is missing")))
}

/// A block's index as a piece's position.
fn position(index: u64) -> usize {
    usize::try_from(index).unwrap_or(usize::MAX)
}

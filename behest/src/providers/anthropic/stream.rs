//! A streamed Messages answer, assembled from its events.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::THINKING;
use crate::conversation::{AssistantMessage, ModelDelta, StopReason, WireFormat};
use crate::providers::stream::{Pushed, StreamAssembler};
use crate::providers::{str_field, ParseError};
use crate::tool::ToolCall;

/// Assembles a streamed message from its events: text deltas,
/// `input_json_delta` fragments and thinking joined per content block, in
/// block order.
#[derive(Debug, Default)]
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    blocks: BTreeMap<u64, Block>,
    /// The `stop_reason` of the `message_delta` event.
    stop: Option<StopReason>,
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse(PartialUse),
    /// A `thinking` block as it started, its deltas added, or a
    /// `redacted_thinking` block, which comes whole.
    Thinking(Value),
    /// Another block (a server tool's use and its result): kept as it
    /// started, with the input its `input_json_delta`s join, to go back as
    /// it came.
    Kept(Value, String),
}

#[derive(Debug, Default)]
struct PartialUse {
    id: String,
    name: String,
    start_input: Value,
    json: String,
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for Stream {
    const END_MARKER: &'static str = "`message_stop`";

    /// Adds one event; `message_stop` ends the message. A piece's `index`
    /// is its content block's.
    fn push(&mut self, event: &Value) -> Result<Pushed, ParseError> {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if kind == "error" {
            return Ok(Pushed::error(event));
        }
        self.usage =
            crate::providers::usage::merge(self.usage, crate::providers::usage::anthropic(event));
        if let Some(reason) = event.pointer("/delta/stop_reason").and_then(Value::as_str) {
            self.stop = Some(super::stop_reason(reason));
        }
        let index = event.get("index").and_then(Value::as_u64);
        let mut deltas = Vec::new();
        match (kind, index) {
            ("content_block_start", Some(index)) => {
                let block = event.get("content_block").ok_or_else(|| {
                    ParseError::new("content_block_start: `content_block` is missing")
                })?;
                let block = started(block)?;
                if let Block::ToolUse(call) = &block {
                    deltas.push(ModelDelta::ToolCall {
                        index: usize::try_from(index).unwrap_or(usize::MAX),
                        id: Some(call.id.clone()),
                        name: Some(call.name.clone()),
                        arguments: String::new(),
                    });
                }
                // A repeated start must not wipe what the block received.
                self.blocks.entry(index).or_insert(block);
            }
            ("content_block_delta", Some(index)) => {
                let delta = event
                    .get("delta")
                    .ok_or_else(|| ParseError::new("content_block_delta: `delta` is missing"))?;
                deltas.extend(self.delta(index, delta)?);
            }
            _ => {}
        }
        Ok(Pushed::deltas(deltas).ending(kind == "message_stop"))
    }

    /// The assembled message. A block whose JSON stayed empty keeps the
    /// input it started with (`{}`); one whose JSON reads as an object has
    /// it, as the whole answer would; otherwise its text is left for the
    /// runtime to decode, which reports a truncated stream as an argument
    /// error.
    fn finish(self) -> AssistantMessage {
        let mut message = AssistantMessage {
            usage: self.usage,
            stop: self.stop,
            ..AssistantMessage::default()
        };
        let mut text = String::new();
        for block in self.blocks.into_values() {
            match block {
                Block::Text(part) => text.push_str(&part),
                Block::ToolUse(block) => {
                    // The whole answer's `input` is an object: a joined text
                    // that reads as one gives the same message.
                    let arguments = if block.json.trim().is_empty() {
                        block.start_input
                    } else {
                        match serde_json::from_str::<Value>(&block.json) {
                            Ok(object @ Value::Object(_)) => object,
                            _ => Value::String(block.json),
                        }
                    };
                    message
                        .tool_calls
                        .push(ToolCall::new(block.id, block.name, arguments));
                }
                Block::Thinking(block) => {
                    message.push_reasoning_entry(WireFormat::Anthropic, block)
                }
                Block::Kept(mut block, json) => {
                    // Only objects are kept (`started`); a JSON value is
                    // put in as it is read, never by indexing.
                    if let (Ok(input), Some(object)) =
                        (serde_json::from_str::<Value>(&json), block.as_object_mut())
                    {
                        object.insert("input".to_owned(), input);
                    }
                    message.push_reasoning_entry(WireFormat::Anthropic, block);
                }
            }
        }
        message.text = (!text.is_empty()).then_some(text);
        message
    }
}

impl Stream {
    /// Adds a `content_block_delta` to block `index`; returns the piece it
    /// shows.
    fn delta(&mut self, index: u64, delta: &Value) -> Result<Option<ModelDelta>, ParseError> {
        let piece = match delta.get("type").and_then(Value::as_str) {
            Some("text_delta") => {
                let text = str_field(delta, "text", "text_delta")?;
                let block = self
                    .blocks
                    .entry(index)
                    .or_insert_with(|| Block::Text(String::new()));
                if let Block::Text(joined) = block {
                    joined.push_str(text);
                }
                Some(ModelDelta::Text(text.to_owned()))
            }
            Some("input_json_delta") => {
                let fragment = str_field(delta, "partial_json", "input_json_delta")?;
                match self.blocks.get_mut(&index) {
                    Some(Block::ToolUse(block)) => block.json.push_str(fragment),
                    Some(Block::Kept(_, json)) => json.push_str(fragment),
                    Some(_) => {}
                    None => return Err(not_started("input_json_delta", index)),
                }
                Some(ModelDelta::ToolCall {
                    index: usize::try_from(index).unwrap_or(usize::MAX),
                    id: None,
                    name: None,
                    arguments: fragment.to_owned(),
                })
            }
            Some(kind @ ("thinking_delta" | "signature_delta")) => {
                let Some(Block::Thinking(block)) = self.blocks.get_mut(&index) else {
                    return Err(not_started(kind, index));
                };
                if kind == "thinking_delta" {
                    let piece = str_field(delta, "thinking", kind)?;
                    let joined =
                        format!("{}{piece}", block["thinking"].as_str().unwrap_or_default());
                    block["thinking"] = Value::String(joined);
                    Some(ModelDelta::Reasoning(piece.to_owned()))
                } else {
                    // The signature comes whole, once, at the end of the block.
                    block["signature"] =
                        Value::String(str_field(delta, "signature", kind)?.to_owned());
                    None
                }
            }
            _ => None,
        };
        Ok(piece)
    }
}

fn not_started(kind: &str, index: u64) -> ParseError {
    ParseError::new(format!("{kind} for block {index}, which did not start"))
}

/// A block as its `content_block_start` opens it: an object, or the
/// stream is broken.
fn started(block: &Value) -> Result<Block, ParseError> {
    if !block.is_object() {
        return Err(ParseError::new(
            "content_block_start: `content_block` is not an object",
        ));
    }
    Ok(match block.get("type").and_then(Value::as_str) {
        Some("text") => Block::Text(
            block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
        Some("tool_use") => Block::ToolUse(PartialUse {
            id: str_field(block, "id", "tool_use")?.to_owned(),
            name: str_field(block, "name", "tool_use")?.to_owned(),
            start_input: block.get("input").cloned().unwrap_or_else(|| json!({})),
            json: String::new(),
        }),
        Some(kind) if THINKING.contains(&kind) => Block::Thinking(block.clone()),
        _ => Block::Kept(block.clone(), String::new()),
    })
}

//! Anthropic Messages.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::stream::{Pushed, StreamAssembler};
use super::{
    arguments_object, content_text, convert, finish, schema, str_field, Export, ExportError,
    ParseError,
};
use crate::conversation::{
    tool_name_of, AssistantMessage, Message, ModelDelta, ToolResultMessage, TurnPart, WireFormat,
};
use crate::registry::ToolRegistry;
use crate::tool::ToolSpec;
use crate::tool::{ToolCall, ToolCallResult};

/// The registry as Messages `tools`.
pub fn tools(registry: &ToolRegistry) -> Result<Export, ExportError> {
    super::export(
        registry,
        WireFormat::Anthropic,
        &super::ExportOptions::default(),
    )
}

/// Tools as declarations of this format.
pub(crate) fn declare(specs: &[&ToolSpec]) -> Result<Export, ExportError> {
    finish(
        specs
            .iter()
            .map(|spec| {
                let (schema, lints) = convert(
                    spec,
                    WireFormat::Anthropic,
                    &[schema::common, schema::anthropic],
                );
                let declaration = json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": schema,
                });
                (declaration, lints)
            })
            .collect(),
    )
}

/// Tool declarations of a Messages request, as specs.
pub fn parse_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    request
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the request has no `tools` list"))?
        .iter()
        .map(|tool| {
            Ok(ToolSpec::new(
                str_field(tool, "name", "tools[]")?,
                tool.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                tool.get("input_schema")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            ))
        })
        .collect()
}

/// The assistant message of a Messages response.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_response_message(response)?;
    message.usage = super::usage::anthropic(response);
    Ok(message)
}

fn parse_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
    let content = response
        .get("content")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the response has no `content` list"))?;
    assistant_blocks(content)
}

/// Block types that carry thinking, which goes back unchanged and in
/// place: the API refuses a turn with tools whose thinking is missing.
const THINKING: [&str; 2] = ["thinking", "redacted_thinking"];

fn assistant_blocks(blocks: &[Value]) -> Result<AssistantMessage, ParseError> {
    let mut message = AssistantMessage::default();
    let mut text = String::new();
    for block in blocks {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(
                block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            Some("tool_use") => message.tool_calls.push(ToolCall::new(
                str_field(block, "id", "tool_use")?,
                str_field(block, "name", "tool_use")?,
                block.get("input").cloned().unwrap_or_else(|| json!({})),
            )),
            Some(kind) if THINKING.contains(&kind) => {
                message.push_reasoning_entry(WireFormat::Anthropic, block.clone());
            }
            _ => {}
        }
    }
    message.text = (!text.is_empty()).then_some(text);
    Ok(message)
}

/// Assembles a streamed message from its events: text deltas,
/// `input_json_delta` fragments and thinking joined per content block, in
/// block order.
#[derive(Debug, Default)]
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    blocks: BTreeMap<u64, Block>,
}

#[derive(Debug)]
enum Block {
    Text(String),
    ToolUse(PartialUse),
    /// A `thinking` block as it started, its deltas added, or a
    /// `redacted_thinking` block, which comes whole.
    Thinking(Value),
    /// A block the conversation does not carry (server tools and their
    /// results): its deltas are skipped.
    Other,
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
        self.usage = super::usage::merge(self.usage, super::usage::anthropic(event));
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
                Block::Other => {}
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

/// A block as its `content_block_start` opens it.
fn started(block: &Value) -> Result<Block, ParseError> {
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
        _ => Block::Other,
    })
}

/// A `tool_result` content block for a result, errors flagged.
pub fn result_block(result: &ToolCallResult) -> Value {
    tool_result_block(&ToolResultMessage::from(result))
}

fn tool_result_block(result: &ToolResultMessage) -> Value {
    json!({
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "content": result.content,
        "is_error": result.is_error,
    })
}

/// A conversation as Messages `system` and `messages`: tool results go in
/// the next user message, several in one.
pub fn messages(conversation: &[Message]) -> (Option<String>, Vec<Value>) {
    let mut system: Vec<&str> = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    for message in conversation {
        match message {
            Message::System { text } => system.push(text),
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant(assistant) => messages.push(json!({
                "role": "assistant",
                "content": assistant_content(assistant),
            })),
            Message::ToolResult(result) => {
                let block = tool_result_block(result);
                let appended = messages.last_mut().is_some_and(|last| {
                    let is_results = last["role"] == "user"
                        && last["content"].as_array().is_some_and(|blocks| {
                            blocks.iter().all(|b| b["type"] == "tool_result")
                        });
                    if is_results {
                        if let Some(blocks) = last["content"].as_array_mut() {
                            blocks.push(block.clone());
                        }
                    }
                    is_results
                });
                if !appended {
                    messages.push(json!({"role": "user", "content": [block]}));
                }
            }
        }
    }
    let system = (!system.is_empty()).then(|| system.join("\n\n"));
    (system, messages)
}

/// The blocks of a model turn: its thinking blocks as they came and where
/// they came, then text and `tool_use` blocks.
fn assistant_content(assistant: &AssistantMessage) -> Vec<Value> {
    assistant
        .turn_parts(WireFormat::Anthropic)
        .into_iter()
        .map(|part| match part {
            TurnPart::Reasoning(block) => block.clone(),
            TurnPart::Text(text) => json!({"type": "text", "text": text}),
            TurnPart::Call(call) => json!({
                "type": "tool_use",
                "id": call.call_id,
                "name": call.tool_name,
                "input": arguments_object(&call.arguments),
            }),
        })
        .collect()
}

/// Messages `system` and `messages` as a conversation.
pub fn from_messages(
    system: Option<&Value>,
    messages: &[Value],
) -> Result<Vec<Message>, ParseError> {
    let mut conversation = Vec::new();
    if let Some(system) = system {
        conversation.push(Message::System {
            text: content_text(system),
        });
    }
    for message in messages {
        let role = str_field(message, "role", "messages[]")?;
        let content = message.get("content").cloned().unwrap_or(Value::Null);
        match (role, &content) {
            ("assistant", Value::Array(blocks)) => {
                conversation.push(Message::Assistant(assistant_blocks(blocks)?));
            }
            ("assistant", other) => conversation.push(Message::Assistant(AssistantMessage::text(
                content_text(other),
            ))),
            (_, Value::Array(blocks)) => {
                let mut text = String::new();
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("tool_result") => {
                            let call_id =
                                str_field(block, "tool_use_id", "tool_result")?.to_owned();
                            conversation.push(Message::ToolResult(ToolResultMessage {
                                tool_name: tool_name_of(&conversation, &call_id),
                                call_id,
                                content: block.get("content").map(content_text).unwrap_or_default(),
                                structured: None,
                                is_error: block
                                    .get("is_error")
                                    .and_then(Value::as_bool)
                                    .unwrap_or(false),
                            }));
                        }
                        Some("text") => text.push_str(
                            block
                                .get("text")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        ),
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    conversation.push(Message::User { text });
                }
            }
            (_, other) => conversation.push(Message::User {
                text: content_text(other),
            }),
        }
    }
    Ok(conversation)
}

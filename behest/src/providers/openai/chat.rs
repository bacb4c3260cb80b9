//! OpenAI Chat Completions (and every server that speaks it): tool
//! declarations, responses whole and streamed, results and messages.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::chunk::{kept_call_fields, Chunk, Fragment, REASONING_FIELDS};
use super::{declaration, declarations, tool_list, PartialCall};
use crate::conversation::{
    tool_name_of, AssistantMessage, ContentPart, MediaSource, Message, ModelDelta, StopKind,
    StopReason, ToolResultMessage, WireFormat,
};
use crate::providers::stream::{Pushed, StreamAssembler};
use crate::providers::{
    arguments_text, content_text, str_field, Export, ExportError, ExportOptions, ParseError,
};
use crate::registry::ToolRegistry;
use crate::tool::{ToolCall, ToolCallResult, ToolSpec};

/// The registry as Chat Completions `tools`.
pub fn tools(registry: &ToolRegistry, options: &ExportOptions) -> Result<Export, ExportError> {
    crate::providers::export(registry, WireFormat::OpenAiChat, options)
}

/// Tools as Chat Completions `tools`.
pub(crate) fn declare(
    specs: &[&ToolSpec],
    is_strict: &dyn Fn(&str) -> bool,
    options: &ExportOptions,
) -> Result<Export, ExportError> {
    declarations(specs, is_strict, options, |spec, parameters, strict| {
        json!({
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": parameters,
                "strict": strict,
            }
        })
    })
}

/// Tool declarations of a Chat Completions request, as specs.
pub fn parse_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    tool_list(request)?
        .iter()
        .map(|tool| {
            let function = tool
                .get("function")
                .ok_or_else(|| ParseError::new("tools[]: `function` is missing"))?;
            declaration(function)
        })
        .collect()
}

/// The assistant message of a Chat Completions response.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_response_message(response)?;
    message.usage = crate::providers::usage::chat(response);
    let refusal = response
        .pointer("/choices/0/message/refusal")
        .and_then(Value::as_str)
        .filter(|refusal| !refusal.is_empty());
    message.stop = match refusal {
        // A refusal is the turn's text, and why it ended.
        Some(refusal) => {
            message.text.get_or_insert_with(|| refusal.to_owned());
            Some(StopReason::openai_refusal())
        }
        None => response
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str)
            .map(stop_reason),
    };
    Ok(message)
}

fn parse_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
    let message = response
        .pointer("/choices/0/message")
        .ok_or_else(|| ParseError::new("the response has no `choices[0].message`"))?;
    parse_chat_message(message)
}

fn parse_chat_message(message: &Value) -> Result<AssistantMessage, ParseError> {
    let text = message
        .get("content")
        .map(content_text)
        .filter(|text| !text.is_empty());
    let mut assistant = AssistantMessage {
        text,
        ..AssistantMessage::default()
    };
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call
            .get("function")
            .ok_or_else(|| ParseError::new("tool_calls[]: `function` is missing"))?;
        let id = str_field(call, "id", "tool_calls[]")?;
        if let Some(kept) = kept_call_fields(call) {
            assistant.push_call_fields(WireFormat::OpenAiChat, id, kept);
        }
        assistant.tool_calls.push(ToolCall::new(
            id,
            str_field(function, "name", "tool_calls[].function")?,
            Value::String(
                function
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            ),
        ));
    }
    // An empty `reasoning_content` is the filler a thinking-mode turn
    // without reasoning goes back with (see `messages`), not reasoning.
    for key in REASONING_FIELDS {
        let filler = |value: &&Value| value.is_null() || value.as_str() == Some("");
        if let Some(reasoning) = message.get(key).filter(|value| !filler(value)) {
            assistant.push_turn_fields(WireFormat::OpenAiChat, json!({ key: reasoning }));
        }
    }
    Ok(assistant)
}

/// Assembles a streamed Chat Completions message from its chunks: text and
/// `reasoning_content` deltas, and `delta.tool_calls` fragments joined per
/// `index`.
#[derive(Debug, Default)]
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    text: String,
    /// The reasoning, by the field it came in.
    reasoning: BTreeMap<&'static str, String>,
    /// A refusal's text (`delta.refusal`).
    refusal: String,
    calls: BTreeMap<u64, PartialCall>,
    stop: Option<StopReason>,
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Stream {
    /// Adds what a chunk carries, its pieces pushed onto `deltas`;
    /// whether it ends the turn (it has a `finish_reason`).
    fn add(&mut self, chunk: Chunk<'_>, deltas: &mut Vec<ModelDelta>) -> Result<bool, ParseError> {
        if let Some(reason) = chunk.finish_reason {
            self.stop = Some(stop_reason(reason));
        }
        let ended = chunk.finish_reason.is_some();
        let Some(delta) = chunk.delta else {
            // Usage-only chunks carry no choice.
            return Ok(ended);
        };
        // A server moving between the names may send both: the first
        // present is the reasoning, shown once.
        if let Some((key, piece)) = delta.reasoning.filter(|(_, piece)| !piece.is_empty()) {
            self.reasoning.entry(key).or_default().push_str(piece);
            deltas.push(ModelDelta::Reasoning(piece.to_owned()));
        }
        if let Some(text) = delta.content {
            self.text.push_str(text);
            if !text.is_empty() {
                deltas.push(ModelDelta::Text(text.to_owned()));
            }
        }
        if let Some(refusal) = delta.refusal {
            self.refusal.push_str(refusal);
            if !refusal.is_empty() {
                deltas.push(ModelDelta::Text(refusal.to_owned()));
            }
        }
        for fragment in delta.fragments {
            let Fragment {
                index,
                id,
                name,
                arguments,
                kept,
            } = fragment;
            let index = match index {
                Some(index) => index,
                None => self.unindexed(id)?,
            };
            let call = self.calls.entry(index).or_default();
            call.identify(id, name);
            call.arguments.push_str(arguments);
            if let Some(kept) = kept {
                call.kept = Some(kept);
            }
            deltas.push(ModelDelta::ToolCall {
                index: usize::try_from(index).unwrap_or(usize::MAX),
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
            });
        }
        Ok(ended)
    }

    /// Reads a chunk of the plain shape straight from its text (`None`
    /// for any other), its pieces pushed onto `deltas`.
    fn add_json(
        &mut self,
        data: &str,
        deltas: &mut Vec<ModelDelta>,
    ) -> Option<Result<Pushed, ParseError>> {
        let mut wire = super::chunk::Wire::default();
        if !super::chunk::read(data, &mut wire) {
            return None;
        }
        Some(
            self.add(wire.view(), deltas)
                .map(|ended| Pushed::default().ending(ended)),
        )
    }

    /// The index of a call fragment that has none, as Gemini's
    /// OpenAI-compatible endpoint sends them (each call whole, in one
    /// fragment): a fragment with a new id starts the next call; one
    /// without an id continues the last.
    fn unindexed(&self, id: Option<&str>) -> Result<u64, ParseError> {
        let last = self.calls.last_key_value();
        match (id, last) {
            (Some(id), Some((&index, call))) if call.id == id => Ok(index),
            (Some(_), Some((&index, _))) => Ok(index.saturating_add(1)),
            (Some(_), None) => Ok(0),
            (None, Some((&index, _))) => Ok(index),
            (None, None) => Err(ParseError::new(
                "delta.tool_calls[]: a fragment with neither `index` nor `id` continues no call",
            )),
        }
    }
}

impl StreamAssembler for Stream {
    const END_MARKER: &'static str = "the turn finished";

    /// Adds one chunk; a chunk with a `finish_reason` ends the turn.
    fn push(&mut self, chunk: &Value) -> Result<Pushed, ParseError> {
        if chunk.get("error").is_some() {
            return Ok(Pushed::error(chunk));
        }
        self.usage =
            crate::providers::usage::merge(self.usage, crate::providers::usage::chat(chunk));
        let mut deltas = Vec::new();
        let ended = self.add(Chunk::from_value(chunk), &mut deltas)?;
        Ok(Pushed::deltas(deltas).ending(ended))
    }

    /// Reads a chunk of the plain shape (text, reasoning and call deltas)
    /// straight from its text; any other is left to [`push`](Self::push).
    fn push_json(&mut self, data: &str) -> Option<Result<Pushed, ParseError>> {
        let mut deltas = Vec::new();
        let pushed = self.add_json(data, &mut deltas)?;
        Some(pushed.map(|pushed| Pushed { deltas, ..pushed }))
    }

    fn __push_json_into(
        &mut self,
        data: &str,
        deltas: &mut Vec<ModelDelta>,
    ) -> Option<Result<Pushed, ParseError>> {
        self.add_json(data, deltas)
    }

    /// The assembled message, calls in index order; an index that never
    /// got a name (no call started there) is skipped.
    fn finish(self) -> AssistantMessage {
        let mut message = AssistantMessage {
            text: (!self.text.is_empty()).then_some(self.text),
            usage: self.usage,
            stop: self.stop,
            ..AssistantMessage::default()
        };
        if !self.refusal.is_empty() {
            message.text.get_or_insert(self.refusal);
            message.stop = Some(StopReason::openai_refusal());
        }
        for call in self.calls.into_values() {
            call.finish_into(&mut message, WireFormat::OpenAiChat);
        }
        for (key, reasoning) in self.reasoning {
            message.push_turn_fields(WireFormat::OpenAiChat, json!({ key: reasoning }));
        }
        message
    }
}

/// A Chat Completions tool message for a result. Chat has no error flag:
/// the text of an error says what went wrong.
pub fn result(result: &ToolCallResult) -> Value {
    chat_message(&Message::ToolResult(ToolResultMessage::from(result)))
}

/// A conversation as Chat Completions `messages`.
pub fn messages(conversation: &[Message]) -> Vec<Value> {
    let mut messages: Vec<Value> = conversation.iter().map(chat_message).collect();
    // A server in thinking mode (DeepSeek) wants `reasoning_content` on
    // every assistant turn once it sent one, empty where a turn had none.
    let assistant = |message: &Value| message["role"] == "assistant";
    let thinking = messages
        .iter()
        .any(|message| assistant(message) && message.get(REASONING_FIELDS[0]).is_some());
    if thinking {
        for message in messages.iter_mut().filter(|message| assistant(message)) {
            if REASONING_FIELDS
                .iter()
                .all(|key| message.get(*key).is_none())
            {
                message[REASONING_FIELDS[0]] = json!("");
            }
        }
    }
    messages
}

fn chat_message(message: &Message) -> Value {
    match message {
        Message::System { text } => json!({"role": "system", "content": text}),
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::UserParts { parts } => {
            json!({"role": "user", "content": parts.iter().map(part).collect::<Vec<_>>()})
        }
        Message::Assistant(assistant) => {
            // A turn without text goes back as `""`, beside tool calls too:
            // OpenAI takes `null` there, but servers of the same API (vLLM,
            // llama.cpp's, LM Studio's) take only a string, and `""` is
            // taken by all.
            let content = json!(assistant.text.as_deref().unwrap_or_default());
            let mut value = json!({"role": "assistant", "content": content});
            assistant.add_turn_fields(&mut value, WireFormat::OpenAiChat);
            if !assistant.tool_calls.is_empty() {
                value["tool_calls"] = assistant
                    .tool_calls
                    .iter()
                    .map(|call| {
                        let mut value = json!({
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.tool_name, "arguments": arguments_text(&call.arguments)},
                        });
                        assistant.add_call_fields(&mut value, WireFormat::OpenAiChat, &call.call_id);
                        value
                    })
                    .collect();
            }
            value
        }
        Message::ToolResult(result) => {
            json!({"role": "tool", "tool_call_id": result.call_id, "content": result.content})
        }
    }
}

/// A user part as a Chat content part. Chat takes documents only inline
/// (`file_data`); a document at a URL goes as a text part naming it.
fn part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Image { source } => {
            json!({"type": "image_url", "image_url": {"url": source.as_url()}})
        }
        ContentPart::Document { source } => match source {
            MediaSource::Base64 { .. } => json!({"type": "file", "file": {
                "filename": "document", "file_data": source.as_url()}}),
            _ => json!({"type": "text", "text": format!("Document: {}", source.as_url())}),
        },
    }
}

/// A Chat content part as a user part.
fn read_part(part: &Value) -> Option<ContentPart> {
    match part.get("type").and_then(Value::as_str)? {
        "text" => Some(ContentPart::text(part.get("text")?.as_str()?)),
        "image_url" => {
            let url = part.pointer("/image_url/url")?.as_str()?;
            Some(ContentPart::Image {
                source: MediaSource::from_url(url),
            })
        }
        "file" => {
            let data = part.pointer("/file/file_data")?.as_str()?;
            Some(ContentPart::Document {
                source: MediaSource::from_url(data),
            })
        }
        _ => None,
    }
}

/// Chat Completions `messages` as a conversation. Tool names of results are
/// taken from the calls they answer.
pub fn from_messages(messages: &[Value]) -> Result<Vec<Message>, ParseError> {
    let mut conversation = Vec::new();
    for message in messages {
        let role = str_field(message, "role", "messages[]")?;
        let content = message.get("content").map(content_text).unwrap_or_default();
        conversation.push(match role {
            "system" | "developer" => Message::System { text: content },
            "user" => match message.get("content") {
                Some(Value::Array(parts)) => {
                    crate::providers::user_message(parts.iter().filter_map(read_part).collect())
                }
                _ => Message::User { text: content },
            },
            "assistant" => Message::Assistant(parse_chat_message(message)?),
            "tool" => {
                let call_id = str_field(message, "tool_call_id", "tool message")?.to_owned();
                Message::ToolResult(ToolResultMessage {
                    tool_name: tool_name_of(&conversation, &call_id),
                    call_id,
                    content,
                    images: Vec::new(),
                    documents: Vec::new(),
                    structured: None,
                    is_error: false,
                    usage: None,
                })
            }
            other => {
                return Err(ParseError::new(format!(
                    "messages[]: unknown role `{other}`"
                )))
            }
        });
    }
    Ok(conversation)
}

/// Chat Completions' `finish_reason`.
pub(crate) fn stop_reason(raw: &str) -> StopReason {
    let kind = match raw {
        "stop" | "tool_calls" | "function_call" => StopKind::Completed,
        "length" => StopKind::MaxTokens,
        // Mistral's name for a context window filled up.
        "model_length" => StopKind::ContextWindow,
        "content_filter" => StopKind::Filtered,
        _ => StopKind::Other,
    };
    StopReason::new(kind, raw)
}

//! OpenAI Responses: tool declarations, responses whole and streamed,
//! results and input items.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{declaration, declarations, set_once, tool_list, PartialCall};
use crate::conversation::{
    tool_name_of, AssistantMessage, ContentPart, MediaSource, Message, ModelDelta, StopKind,
    StopReason, ToolResultMessage, TurnPart, WireFormat,
};
use crate::providers::stream::{text_at, Pushed, StreamAssembler};
use crate::providers::{
    arguments_text, content_text, str_field, Export, ExportError, ExportOptions, ParseError,
};
use crate::registry::ToolRegistry;
use crate::tool::{ToolCall, ToolCallResult, ToolSpec};

/// Output items that go back on the next turn as they came: reasoning, and
/// the hosted tool search's call and the tools it loaded.
const KEPT_ITEMS: [&str; 3] = ["reasoning", "tool_search_call", "tool_search_output"];

/// The registry as Responses `tools`; `strict` is always sent, since it
/// defaults to true there.
pub fn tools(registry: &ToolRegistry, options: &ExportOptions) -> Result<Export, ExportError> {
    crate::providers::export(registry, WireFormat::OpenAiResponses, options)
}

/// Tools as Responses `tools`.
pub(crate) fn declare(
    specs: &[&ToolSpec],
    is_strict: &dyn Fn(&str) -> bool,
    options: &ExportOptions,
) -> Result<Export, ExportError> {
    declarations(specs, is_strict, options, |spec, parameters, strict| {
        json!({
            "type": "function",
            "name": spec.name,
            "description": spec.description,
            "parameters": parameters,
            "strict": strict,
        })
    })
}

/// Tool declarations of a Responses request, as specs.
pub fn parse_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    tool_list(request)?
        .iter()
        .filter(|tool| tool.get("type").and_then(Value::as_str) == Some("function"))
        .map(declaration)
        .collect()
}

/// The assistant message of a Responses response: `function_call` items and
/// `output_text` parts.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_response_message(response)?;
    message.usage = crate::providers::usage::responses(response);
    if message.stop.is_none() {
        message.stop = response_stop(response);
    }
    Ok(message)
}

/// The stop reason of a response object: its `status`, with
/// `incomplete_details.reason` when incomplete.
fn response_stop(response: &Value) -> Option<StopReason> {
    let status = response.get("status").and_then(Value::as_str)?;
    let incomplete = response
        .pointer("/incomplete_details/reason")
        .and_then(Value::as_str);
    Some(stop_reason(status, incomplete))
}

/// The text of a message item's content parts of type `kind`, under their
/// `field`: `output_text` parts' `text`, `refusal` parts' `refusal`.
fn part_text(item: &Value, kind: &str, field: &str) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some(kind))
        .filter_map(|part| part.get(field).and_then(Value::as_str))
        .collect()
}

fn parse_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the response has no `output` list"))?;
    let mut message = AssistantMessage::default();
    let mut text = String::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => push_function_call(&mut message, item)?,
            Some("message") => {
                text.push_str(&part_text(item, "output_text", "text"));
                let refusal = part_text(item, "refusal", "refusal");
                if !refusal.is_empty() {
                    // A refusal is the turn's text, and why it ended.
                    text.push_str(&refusal);
                    message.stop = Some(StopReason::openai_refusal());
                }
            }
            Some(kind) if KEPT_ITEMS.contains(&kind) => {
                message.push_reasoning_entry(WireFormat::OpenAiResponses, item.clone())
            }
            _ => {}
        }
    }
    message.text = (!text.is_empty()).then_some(text);
    Ok(message)
}

/// Adds a `function_call` item's call; after reasoning it keeps its item
/// id too: the API pairs a reasoning item with the item after it by id, and
/// refuses either one without the other.
fn push_function_call(message: &mut AssistantMessage, item: &Value) -> Result<(), ParseError> {
    let call = function_call(item)?;
    let item_id = item.get("id").and_then(Value::as_str).unwrap_or_default();
    if !item_id.is_empty() && message.has_reasoning_entries(WireFormat::OpenAiResponses) {
        let fields = json!({"id": item_id});
        message.push_call_fields(WireFormat::OpenAiResponses, &call.call_id, fields);
    }
    message.tool_calls.push(call);
    Ok(())
}

fn function_call(item: &Value) -> Result<ToolCall, ParseError> {
    Ok(ToolCall::new(
        str_field(item, "call_id", "function_call")?,
        str_field(item, "name", "function_call")?,
        Value::String(
            item.get("arguments")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        ),
    ))
}

/// Assembles a streamed Responses message from its events, per
/// `output_index`: function calls, text, and reasoning items as their
/// `output_item.done` event gives them whole.
#[derive(Debug, Default)]
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    reasoning: BTreeMap<u64, Value>,
    /// A refusal's text (`response.refusal.delta`).
    refusal: String,
    stop: Option<StopReason>,
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for Stream {
    const END_MARKER: &'static str = "the response completed";

    /// Adds one event; `response.completed` or `response.incomplete` ends
    /// the response.
    fn push(&mut self, event: &Value) -> Result<Pushed, ParseError> {
        let kind = event
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if matches!(kind, "error" | "response.failed") {
            return Ok(Pushed::error(event));
        }
        self.usage =
            crate::providers::usage::merge(self.usage, crate::providers::usage::responses(event));
        let ended = matches!(kind, "response.completed" | "response.incomplete");
        if ended {
            // The event's response says its status; the event's name says it
            // too, when the response is left out.
            let response = event.get("response").unwrap_or(&Value::Null);
            let status = kind.trim_start_matches("response.");
            let incomplete = response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str);
            self.stop = response_stop(response).or(Some(stop_reason(status, incomplete)));
        }
        let mut deltas = Vec::new();
        let index = event.get("output_index").and_then(Value::as_u64);
        let delta_index = usize::try_from(index.unwrap_or(0)).unwrap_or(usize::MAX);
        match (kind, index) {
            ("response.output_item.added" | "response.output_item.done", Some(index)) => {
                let item = event
                    .get("item")
                    .ok_or_else(|| ParseError::new(format!("{kind}: `item` is missing")))?;
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        let id = str_field(item, "call_id", kind)?;
                        let name = str_field(item, "name", kind)?;
                        let call = self.calls.entry(index).or_default();
                        call.identify(Some(id), Some(name));
                        set_once(&mut call.item_id, item.get("id").and_then(Value::as_str));
                        if kind == "response.output_item.done" {
                            call.complete(item.get("arguments").and_then(Value::as_str));
                        } else {
                            deltas.push(ModelDelta::ToolCall {
                                index: delta_index,
                                id: Some(id.to_owned()),
                                name: Some(name.to_owned()),
                                arguments: String::new(),
                            });
                        }
                    }
                    // The done item is whole (summary, encrypted content).
                    Some(kind) if KEPT_ITEMS.contains(&kind) => {
                        self.reasoning.insert(index, item.clone());
                    }
                    _ => {}
                }
            }
            ("response.function_call_arguments.delta", Some(index)) => {
                let delta = str_field(event, "delta", kind)?;
                self.calls
                    .entry(index)
                    .or_default()
                    .arguments
                    .push_str(delta);
                deltas.push(ModelDelta::ToolCall {
                    index: delta_index,
                    id: None,
                    name: None,
                    arguments: delta.to_owned(),
                });
            }
            ("response.function_call_arguments.done", Some(index)) => {
                let arguments = str_field(event, "arguments", kind)?;
                self.calls
                    .entry(index)
                    .or_default()
                    .complete(Some(arguments));
            }
            ("response.refusal.delta", _) => {
                let delta = str_field(event, "delta", kind)?;
                self.refusal.push_str(delta);
                deltas.push(ModelDelta::Text(delta.to_owned()));
            }
            ("response.output_text.delta", _) => {
                let delta = str_field(event, "delta", kind)?;
                self.text.push_str(delta);
                deltas.push(ModelDelta::Text(delta.to_owned()));
            }
            ("response.reasoning_summary_text.delta" | "response.reasoning_text.delta", _) => {
                // Shown as it comes; the item itself arrives whole when done.
                if let Some(delta) = text_at(event, "/delta") {
                    deltas.push(ModelDelta::Reasoning(delta));
                }
            }
            _ => {}
        }
        Ok(Pushed::deltas(deltas).ending(ended))
    }

    /// The assembled message, items in `output_index` order.
    fn finish(self) -> AssistantMessage {
        let mut message = AssistantMessage {
            text: (!self.text.is_empty()).then_some(self.text),
            usage: self.usage,
            stop: self.stop,
            ..AssistantMessage::default()
        };
        if !self.refusal.is_empty() {
            let text = message.text.get_or_insert_with(String::new);
            text.push_str(&self.refusal);
            message.stop = Some(StopReason::openai_refusal());
        }
        let mut reasoning = self.reasoning.into_iter().peekable();
        for (index, call) in self.calls {
            while let Some((_, item)) = reasoning.next_if(|(at, _)| *at < index) {
                message.push_reasoning_entry(WireFormat::OpenAiResponses, item);
            }
            call.finish_into(&mut message, WireFormat::OpenAiResponses);
        }
        for (_, item) in reasoning {
            message.push_reasoning_entry(WireFormat::OpenAiResponses, item);
        }
        message
    }
}

/// A user part as a Responses input part.
fn part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({"type": "input_text", "text": text}),
        // `detail` is required (the API's reference, the SDK's type):
        // `auto` is what the API takes when it is left out.
        ContentPart::Image { source } => {
            json!({"type": "input_image", "image_url": source.as_url(), "detail": "auto"})
        }
        ContentPart::Document { source } => match source {
            MediaSource::Url { url, .. } => json!({"type": "input_file", "file_url": url}),
            _ => {
                json!({"type": "input_file", "filename": "document", "file_data": source.as_url()})
            }
        },
    }
}

/// A Responses input part as a user part.
fn read_part(part: &Value) -> Option<ContentPart> {
    let text = |key: &str| part.get(key).and_then(Value::as_str);
    match text("type")? {
        "input_text" | "text" => Some(ContentPart::text(text("text")?)),
        "input_image" => Some(ContentPart::Image {
            source: MediaSource::from_url(text("image_url")?),
        }),
        "input_file" => {
            let source = match (text("file_url"), text("file_data")) {
                (Some(url), _) => MediaSource::url(url),
                (None, Some(data)) => MediaSource::from_url(data),
                (None, None) => return None,
            };
            Some(ContentPart::Document { source })
        }
        _ => None,
    }
}

/// A Responses `function_call_output` item for a result.
pub fn result(result: &ToolCallResult) -> Value {
    responses_items(
        &Message::ToolResult(ToolResultMessage::from(result)),
        Stored::Yes,
    )
    .remove(0)
}

/// A conversation as Responses `input` items.
pub fn messages(conversation: &[Message]) -> Vec<Value> {
    conversation
        .iter()
        .flat_map(|message| responses_items(message, Stored::Yes))
        .collect()
}

/// A conversation as the `input` items of a request that is not stored
/// (`store: false`, as behest's Responses client sends): as [`messages`],
/// without the reasoning items that came with neither their
/// `encrypted_content` nor their text (a model not asked for the first, such
/// as an Azure deployment whose name does not say it reasons). The API could
/// find those by their ids only, in a store that was not kept, and refuses
/// them ("Item with id 'rs_…' not found"); their calls go without the item
/// ids that paired them with them.
pub fn unstored_messages(conversation: &[Message]) -> Vec<Value> {
    conversation
        .iter()
        .flat_map(|message| responses_items(message, Stored::No))
        .collect()
}

/// Whether the request the items go in is stored, so that an item can be
/// named by its id alone.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stored {
    Yes,
    No,
}

fn responses_items(message: &Message, stored: Stored) -> Vec<Value> {
    match message {
        Message::System { text } => vec![json!({"role": "system", "content": text})],
        Message::User { text } => vec![json!({"role": "user", "content": text})],
        Message::UserParts { parts } => vec![json!({
            "role": "user",
            "content": parts.iter().map(part).collect::<Vec<_>>(),
        })],
        Message::Assistant(assistant) => assistant_items(assistant, stored),
        Message::ToolResult(result) => {
            let output = crate::providers::result_content(result, "input_text", part);
            vec![json!({
                "type": "function_call_output",
                "call_id": result.call_id,
                "output": output,
            })]
        }
    }
}

/// The items of a model turn: reasoning items as they came and where they
/// came (in a request not stored, only those that carry what they
/// reasoned), the text, and `function_call` items. A call keeps its item id
/// only while a reasoning item it pairs with goes back too.
fn assistant_items(assistant: &AssistantMessage, stored: Stored) -> Vec<Value> {
    let parts: Vec<TurnPart<'_>> = assistant
        .turn_parts(WireFormat::OpenAiResponses)
        .into_iter()
        .filter(|part| match part {
            TurnPart::Reasoning(item) => stored == Stored::Yes || carries_itself(item),
            _ => true,
        })
        .collect();
    let paired = parts
        .iter()
        .any(|part| matches!(part, TurnPart::Reasoning(item) if item["type"] == "reasoning"));
    parts
        .into_iter()
        .map(|part| match part {
            TurnPart::Reasoning(item) => item.clone(),
            TurnPart::Text(text) => json!({"role": "assistant", "content": text}),
            TurnPart::Call(call) => {
                let mut item = json!({
                    "type": "function_call",
                    "call_id": call.call_id,
                    "name": call.tool_name,
                    "arguments": arguments_text(&call.arguments),
                });
                if paired {
                    assistant.add_call_fields(
                        &mut item,
                        WireFormat::OpenAiResponses,
                        &call.call_id,
                    );
                }
                item
            }
        })
        .collect()
}

/// Whether an item kept from an answer can go back in a request that is not
/// stored: a reasoning item only with what it reasoned, encrypted
/// (`encrypted_content`, OpenAI's) or in plain text (`content`, as
/// compatible servers such as DeepSeek's send it and want it back).
fn carries_itself(item: &Value) -> bool {
    let encrypted = item["encrypted_content"]
        .as_str()
        .is_some_and(|content| !content.is_empty());
    let plain = item["content"]
        .as_array()
        .is_some_and(|content| !content.is_empty());
    item["type"] != "reasoning" || encrypted || plain
}

/// Responses `input` items as a conversation. Consecutive reasoning items,
/// function calls and an assistant text that follows only reasoning form
/// one assistant message.
pub fn from_messages(items: &[Value]) -> Result<Vec<Message>, ParseError> {
    let mut conversation: Vec<Message> = Vec::new();
    for item in items {
        let kind = item.get("type").and_then(Value::as_str);
        match (kind, item.get("role").and_then(Value::as_str)) {
            (Some("function_call"), _) => {
                push_function_call(current_turn(&mut conversation), item)?;
            }
            (Some(kind), _) if KEPT_ITEMS.contains(&kind) => {
                let turn = current_turn(&mut conversation);
                turn.push_reasoning_entry(WireFormat::OpenAiResponses, item.clone());
            }
            (Some("function_call_output"), _) => {
                let call_id = str_field(item, "call_id", "function_call_output")?.to_owned();
                let output = item.get("output");
                let (images, documents) = crate::providers::result_media(output, read_part);
                conversation.push(Message::ToolResult(ToolResultMessage {
                    tool_name: tool_name_of(&conversation, &call_id),
                    call_id,
                    content: output.map(content_text).unwrap_or_default(),
                    structured: None,
                    is_error: false,
                    images,
                    documents,
                    usage: None,
                }));
            }
            (_, Some("assistant")) => {
                let text = item.get("content").map(content_text).unwrap_or_default();
                let text = (!text.is_empty()).then_some(text);
                match conversation.last_mut() {
                    Some(Message::Assistant(turn))
                        if turn.text.is_none() && turn.tool_calls.is_empty() =>
                    {
                        turn.text = text;
                    }
                    _ => conversation.push(Message::Assistant(AssistantMessage {
                        text,
                        ..AssistantMessage::default()
                    })),
                }
            }
            (_, Some(role)) => {
                let text = item.get("content").map(content_text).unwrap_or_default();
                conversation.push(match (role, item.get("content")) {
                    ("system" | "developer", _) => Message::System { text },
                    (_, Some(Value::Array(parts))) => {
                        crate::providers::user_message(parts.iter().filter_map(read_part).collect())
                    }
                    _ => Message::User { text },
                });
            }
            _ => {}
        }
    }
    Ok(conversation)
}

/// The assistant message the conversation ends with, started if it ends
/// otherwise.
fn current_turn(conversation: &mut Vec<Message>) -> &mut AssistantMessage {
    if !matches!(conversation.last(), Some(Message::Assistant(_))) {
        conversation.push(Message::Assistant(AssistantMessage::default()));
    }
    match conversation.last_mut() {
        Some(Message::Assistant(turn)) => turn,
        _ => unreachable!("the conversation ends with an assistant message"),
    }
}

/// A Responses `status`, with `incomplete_details.reason` when it is
/// `incomplete`.
pub(crate) fn stop_reason(status: &str, incomplete: Option<&str>) -> StopReason {
    match (status, incomplete) {
        ("completed", _) => StopReason::new(StopKind::Completed, status),
        ("incomplete", Some(reason)) => {
            let kind = match reason {
                "max_output_tokens" => StopKind::MaxTokens,
                "content_filter" => StopKind::Filtered,
                _ => StopKind::Other,
            };
            StopReason::new(kind, format!("incomplete: {reason}"))
        }
        _ => StopReason::new(StopKind::Other, status),
    }
}

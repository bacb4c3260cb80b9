//! OpenAI Chat Completions and Responses.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::stream::{text_at, Pushed, StreamAssembler};
use super::{
    arguments_text, content_text, convert, finish, schema, str_field, Export, ExportError,
    ExportOptions, Lint, ParseError, Strictness,
};
use crate::conversation::{
    tool_name_of, AssistantMessage, Message, ModelDelta, ToolResultMessage, TurnPart, WireFormat,
};
use crate::registry::ToolRegistry;
use crate::tool::ToolSpec;
use crate::tool::{ToolCall, ToolCallResult};

/// The parameters of one tool and whether it goes out strict.
fn parameters(
    spec: &ToolSpec,
    is_strict: &dyn Fn(&str) -> bool,
    options: &ExportOptions,
) -> (Value, bool, Vec<Lint>) {
    let wants_strict = match options.strict {
        Strictness::PerTool => is_strict(&spec.name),
        Strictness::All => true,
        Strictness::None => false,
    };
    let plain = |lints: &mut Vec<Lint>| {
        let (schema, more) = convert(spec, WireFormat::OpenAiChat, &[schema::common]);
        lints.extend(more);
        schema
    };
    if !wants_strict {
        let mut lints = Vec::new();
        let schema = plain(&mut lints);
        return (schema, false, lints);
    }
    let (strict, lints) = convert(
        spec,
        WireFormat::OpenAiChat,
        &[schema::common, schema::openai_strict],
    );
    if !lints.iter().any(Lint::is_error) {
        return (strict, true, lints);
    }
    if options.allow_non_strict.contains(&spec.name) {
        let mut demoted: Vec<Lint> = lints
            .into_iter()
            .map(|mut lint| {
                lint.severity = super::Severity::Warning;
                lint.reason = format!("{} (sent non-strict)", lint.reason);
                lint
            })
            .collect();
        let schema = plain(&mut demoted);
        return (schema, false, demoted);
    }
    (strict, true, lints)
}

/// The registry as Chat Completions `tools`.
pub fn chat_tools(registry: &ToolRegistry, options: &ExportOptions) -> Result<Export, ExportError> {
    super::export(registry, WireFormat::OpenAiChat, options)
}

/// Tools as Chat Completions `tools`.
pub(crate) fn declare_chat(
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

/// The registry as Responses `tools`; `strict` is always sent, since it
/// defaults to true there.
pub fn responses_tools(
    registry: &ToolRegistry,
    options: &ExportOptions,
) -> Result<Export, ExportError> {
    super::export(registry, WireFormat::OpenAiResponses, options)
}

/// Tools as Responses `tools`.
pub(crate) fn declare_responses(
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

/// Every tool's parameters and strictness, in the shape `declare` gives.
fn declarations(
    specs: &[&ToolSpec],
    is_strict: &dyn Fn(&str) -> bool,
    options: &ExportOptions,
    declare: impl Fn(&ToolSpec, Value, bool) -> Value,
) -> Result<Export, ExportError> {
    finish(
        specs
            .iter()
            .map(|spec| {
                let (parameters, strict, lints) = parameters(spec, is_strict, options);
                (declare(spec, parameters, strict), lints)
            })
            .collect(),
    )
}

/// Tool declarations of a Chat Completions request, as specs.
pub fn parse_chat_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
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

/// Tool declarations of a Responses request, as specs.
pub fn parse_responses_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    tool_list(request)?
        .iter()
        .filter(|tool| tool.get("type").and_then(Value::as_str) == Some("function"))
        .map(declaration)
        .collect()
}

fn tool_list(request: &Value) -> Result<&Vec<Value>, ParseError> {
    request
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the request has no `tools` list"))
}

fn declaration(function: &Value) -> Result<ToolSpec, ParseError> {
    Ok(ToolSpec::new(
        str_field(function, "name", "tool declaration")?,
        function
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        function
            .get("parameters")
            .cloned()
            .unwrap_or_else(|| json!({"type": "object", "properties": {}})),
    ))
}

/// The field an OpenAI-compatible server (DeepSeek, vLLM) puts its
/// reasoning in, next to `content`; DeepSeek refuses a tool-call turn sent
/// back without it.
const REASONING_CONTENT: &str = "reasoning_content";

/// The assistant message of a Chat Completions response.
pub fn parse_chat_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_chat_response_message(response)?;
    message.usage = super::usage::chat(response);
    Ok(message)
}

fn parse_chat_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
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
    let mut tool_calls = Vec::new();
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = call
            .get("function")
            .ok_or_else(|| ParseError::new("tool_calls[]: `function` is missing"))?;
        tool_calls.push(ToolCall::new(
            str_field(call, "id", "tool_calls[]")?,
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
    let mut assistant = AssistantMessage {
        text,
        tool_calls,
        reasoning: Vec::new(),
        usage: None,
    };
    if let Some(reasoning) = message
        .get(REASONING_CONTENT)
        .filter(|value| !value.is_null())
    {
        let fields = json!({ REASONING_CONTENT: reasoning });
        assistant.push_turn_fields(WireFormat::OpenAiChat, fields);
    }
    Ok(assistant)
}

/// Assembles a streamed Chat Completions message from its chunks: text and
/// `reasoning_content` deltas, and `delta.tool_calls` fragments joined per
/// `index`.
#[derive(Debug, Default)]
pub struct ChatStream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, PartialCall>,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// The Responses item id, which pairs the call with reasoning.
    item_id: String,
}

impl PartialCall {
    /// Sets the id and name once: the first non-empty value wins. Some
    /// servers repeat them in every fragment, or send `""` later; only the
    /// arguments come in pieces.
    fn identify(&mut self, id: Option<&str>, name: Option<&str>) {
        set_once(&mut self.id, id);
        set_once(&mut self.name, name);
    }

    /// Adds the call to `message`, unless it never got a name (no call
    /// started at its index); a Responses call after reasoning keeps its
    /// item id.
    fn finish_into(self, message: &mut AssistantMessage, provider: WireFormat) {
        if self.name.is_empty() {
            return;
        }
        if !self.item_id.is_empty() && message.has_reasoning_entries(provider) {
            message.push_call_fields(provider, &self.id, json!({"id": self.item_id}));
        }
        let arguments = Value::String(self.arguments);
        message
            .tool_calls
            .push(ToolCall::new(self.id, self.name, arguments));
    }

    /// Takes the whole arguments a `done` event repeats; an empty or
    /// missing value keeps the fragments already joined.
    fn complete(&mut self, arguments: Option<&str>) {
        if let Some(arguments) = arguments.filter(|text| !text.is_empty()) {
            arguments.clone_into(&mut self.arguments);
        }
    }
}

fn set_once(slot: &mut String, value: Option<&str>) {
    if let (true, Some(value)) = (slot.is_empty(), value) {
        value.clone_into(slot);
    }
}

impl ChatStream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for ChatStream {
    const END_MARKER: &'static str = "the turn finished";

    /// Adds one chunk; a chunk with a `finish_reason` ends the turn.
    fn push(&mut self, chunk: &Value) -> Result<Pushed, ParseError> {
        if chunk.get("error").is_some() {
            return Ok(Pushed::error(chunk));
        }
        self.usage = super::usage::merge(self.usage, super::usage::chat(chunk));
        let ended = chunk
            .pointer("/choices/0/finish_reason")
            .is_some_and(|reason| !reason.is_null());
        let mut deltas = Vec::new();
        let Some(delta) = chunk.pointer("/choices/0/delta") else {
            // Usage-only chunks carry no choice.
            return Ok(Pushed::deltas(deltas).ending(ended));
        };
        if let Some(reasoning) = delta.get(REASONING_CONTENT).and_then(Value::as_str) {
            self.reasoning.push_str(reasoning);
            deltas.push(ModelDelta::Reasoning(reasoning.to_owned()));
        }
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            self.text.push_str(text);
            if !text.is_empty() {
                deltas.push(ModelDelta::Text(text.to_owned()));
            }
        }
        for fragment in delta
            .get("tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let index = fragment
                .get("index")
                .and_then(Value::as_u64)
                .ok_or_else(|| ParseError::new("delta.tool_calls[]: `index` is missing"))?;
            let text = |pointer: &str| {
                fragment
                    .pointer(pointer)
                    .and_then(Value::as_str)
                    .filter(|text| !text.is_empty())
            };
            let (id, name) = (text("/id"), text("/function/name"));
            let arguments = fragment
                .pointer("/function/arguments")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let call = self.calls.entry(index).or_default();
            call.identify(id, name);
            call.arguments.push_str(arguments);
            deltas.push(ModelDelta::ToolCall {
                index: usize::try_from(index).unwrap_or(usize::MAX),
                id: id.map(str::to_owned),
                name: name.map(str::to_owned),
                arguments: arguments.to_owned(),
            });
        }
        Ok(Pushed::deltas(deltas).ending(ended))
    }

    /// The assembled message, calls in index order; an index that never
    /// got a name (no call started there) is skipped.
    fn finish(self) -> AssistantMessage {
        let mut message = AssistantMessage {
            text: (!self.text.is_empty()).then_some(self.text),
            usage: self.usage,
            ..AssistantMessage::default()
        };
        for call in self.calls.into_values() {
            call.finish_into(&mut message, WireFormat::OpenAiChat);
        }
        if !self.reasoning.is_empty() {
            let fields = json!({ REASONING_CONTENT: self.reasoning });
            message.push_turn_fields(WireFormat::OpenAiChat, fields);
        }
        message
    }
}

/// The assistant message of a Responses response: `function_call` items and
/// `output_text` parts.
pub fn parse_responses_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_responses_response_message(response)?;
    message.usage = super::usage::responses(response);
    Ok(message)
}

fn parse_responses_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
    let output = response
        .get("output")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the response has no `output` list"))?;
    let mut message = AssistantMessage::default();
    let mut text = String::new();
    for item in output {
        match item.get("type").and_then(Value::as_str) {
            Some("function_call") => push_function_call(&mut message, item)?,
            Some("message") => text.push_str(&output_text(item)),
            Some("reasoning") => {
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

fn output_text(item: &Value) -> String {
    item.get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|part| part.get("type").and_then(Value::as_str) == Some("output_text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// Assembles a streamed Responses message from its events, per
/// `output_index`: function calls, text, and reasoning items as their
/// `output_item.done` event gives them whole.
#[derive(Debug, Default)]
pub struct ResponsesStream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    text: String,
    calls: BTreeMap<u64, PartialCall>,
    reasoning: BTreeMap<u64, Value>,
}

impl ResponsesStream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for ResponsesStream {
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
        self.usage = super::usage::merge(self.usage, super::usage::responses(event));
        let ended = matches!(kind, "response.completed" | "response.incomplete");
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
                    Some("reasoning") => {
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
            ..AssistantMessage::default()
        };
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

/// A Chat Completions tool message for a result. Chat has no error flag:
/// the text of an error says what went wrong.
pub fn chat_result(result: &ToolCallResult) -> Value {
    chat_message(&Message::ToolResult(ToolResultMessage::from(result)))
}

/// A Responses `function_call_output` item for a result.
pub fn responses_result(result: &ToolCallResult) -> Value {
    responses_items(&Message::ToolResult(ToolResultMessage::from(result))).remove(0)
}

/// A conversation as Chat Completions `messages`.
pub fn chat_messages(conversation: &[Message]) -> Vec<Value> {
    conversation.iter().map(chat_message).collect()
}

fn chat_message(message: &Message) -> Value {
    match message {
        Message::System { text } => json!({"role": "system", "content": text}),
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::Assistant(assistant) => {
            let mut value = json!({"role": "assistant", "content": assistant.text});
            assistant.add_turn_fields(&mut value, WireFormat::OpenAiChat);
            if !assistant.tool_calls.is_empty() {
                value["tool_calls"] = assistant
                    .tool_calls
                    .iter()
                    .map(|call| {
                        json!({
                            "id": call.call_id,
                            "type": "function",
                            "function": {"name": call.tool_name, "arguments": arguments_text(&call.arguments)},
                        })
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

/// Chat Completions `messages` as a conversation. Tool names of results are
/// taken from the calls they answer.
pub fn from_chat_messages(messages: &[Value]) -> Result<Vec<Message>, ParseError> {
    let mut conversation = Vec::new();
    for message in messages {
        let role = str_field(message, "role", "messages[]")?;
        let content = message.get("content").map(content_text).unwrap_or_default();
        conversation.push(match role {
            "system" | "developer" => Message::System { text: content },
            "user" => Message::User { text: content },
            "assistant" => Message::Assistant(parse_chat_message(message)?),
            "tool" => {
                let call_id = str_field(message, "tool_call_id", "tool message")?.to_owned();
                Message::ToolResult(ToolResultMessage {
                    tool_name: tool_name_of(&conversation, &call_id),
                    call_id,
                    content,
                    structured: None,
                    is_error: false,
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

/// A conversation as Responses `input` items.
pub fn responses_input(conversation: &[Message]) -> Vec<Value> {
    conversation.iter().flat_map(responses_items).collect()
}

fn responses_items(message: &Message) -> Vec<Value> {
    match message {
        Message::System { text } => vec![json!({"role": "system", "content": text})],
        Message::User { text } => vec![json!({"role": "user", "content": text})],
        Message::Assistant(assistant) => assistant_items(assistant),
        Message::ToolResult(result) => vec![json!({
            "type": "function_call_output",
            "call_id": result.call_id,
            "output": result.content,
        })],
    }
}

/// The items of a model turn: reasoning items as they came and where they
/// came, the text, and `function_call` items. A call keeps its item id only
/// while the reasoning it pairs with goes back too.
fn assistant_items(assistant: &AssistantMessage) -> Vec<Value> {
    let paired = assistant.has_reasoning_entries(WireFormat::OpenAiResponses);
    assistant
        .turn_parts(WireFormat::OpenAiResponses)
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

/// Responses `input` items as a conversation. Consecutive reasoning items,
/// function calls and an assistant text that follows only reasoning form
/// one assistant message.
pub fn from_responses_input(items: &[Value]) -> Result<Vec<Message>, ParseError> {
    let mut conversation: Vec<Message> = Vec::new();
    for item in items {
        let kind = item.get("type").and_then(Value::as_str);
        match (kind, item.get("role").and_then(Value::as_str)) {
            (Some("function_call"), _) => {
                push_function_call(current_turn(&mut conversation), item)?;
            }
            (Some("reasoning"), _) => {
                let turn = current_turn(&mut conversation);
                turn.push_reasoning_entry(WireFormat::OpenAiResponses, item.clone());
            }
            (Some("function_call_output"), _) => {
                let call_id = str_field(item, "call_id", "function_call_output")?.to_owned();
                conversation.push(Message::ToolResult(ToolResultMessage {
                    tool_name: tool_name_of(&conversation, &call_id),
                    call_id,
                    content: item.get("output").map(content_text).unwrap_or_default(),
                    structured: None,
                    is_error: false,
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
                conversation.push(match role {
                    "system" | "developer" => Message::System { text },
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

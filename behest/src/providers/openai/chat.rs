//! OpenAI Chat Completions (and every server that speaks it): tool
//! declarations, responses whole and streamed, results and messages.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{declaration, declarations, tool_list, PartialCall};
use crate::conversation::{
    tool_name_of, AssistantMessage, Message, ModelDelta, ToolResultMessage, WireFormat,
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

/// The field an OpenAI-compatible server (DeepSeek, vLLM) puts its
/// reasoning in, next to `content`; DeepSeek refuses a tool-call turn sent
/// back without it.
const REASONING_CONTENT: &str = "reasoning_content";

/// The assistant message of a Chat Completions response.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_response_message(response)?;
    message.usage = crate::providers::usage::chat(response);
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
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    text: String,
    reasoning: String,
    calls: BTreeMap<u64, PartialCall>,
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
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

/// A Chat Completions tool message for a result. Chat has no error flag:
/// the text of an error says what went wrong.
pub fn result(result: &ToolCallResult) -> Value {
    chat_message(&Message::ToolResult(ToolResultMessage::from(result)))
}

/// A conversation as Chat Completions `messages`.
pub fn messages(conversation: &[Message]) -> Vec<Value> {
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
pub fn from_messages(messages: &[Value]) -> Result<Vec<Message>, ParseError> {
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

//! Anthropic Messages.

pub(crate) mod schema;
mod stream;
use super::{
    arguments_object, content_text, convert, finish, str_field, Export, ExportError, ParseError,
};
use crate::conversation::{
    tool_name_of, AssistantMessage, ContentPart, MediaSource, Message, StopKind, StopReason,
    ToolResultMessage, TurnPart, WireFormat,
};
use crate::registry::ToolRegistry;
use crate::tool::ToolSpec;
use crate::tool::{ToolCall, ToolCallResult};
use serde_json::{json, Value};
/// The registry as Messages `tools`.
pub fn tools(registry: &ToolRegistry) -> Result<Export, ExportError> {
    super::export(
        registry,
        WireFormat::Anthropic,
        &super::ExportOptions::default(),
    )
}

pub use stream::Stream;

/// Tools as declarations of this format.
pub(crate) fn declare(
    specs: &[&ToolSpec],
    is_strict: &dyn Fn(&str) -> bool,
    options: &super::ExportOptions,
) -> Result<Export, ExportError> {
    finish(
        specs
            .iter()
            .map(|spec| {
                let (schema, strict, lints) = input_schema(spec, is_strict, options);
                let mut declaration = json!({
                    "name": spec.name,
                    "description": spec.description,
                    "input_schema": schema,
                });
                if strict {
                    declaration["strict"] = Value::Bool(true);
                }
                (declaration, lints)
            })
            .collect(),
    )
}

/// A tool's `input_schema`, and whether it is strict: asked for (per tool
/// or for all), and made strict unless it cannot be (recursion, open
/// objects), when it is sent as it is if the options allow, else refused.
fn input_schema(
    spec: &ToolSpec,
    is_strict: &dyn Fn(&str) -> bool,
    options: &super::ExportOptions,
) -> (Value, bool, Vec<super::Lint>) {
    let wants_strict = match options.strict {
        super::Strictness::PerTool => is_strict(&spec.name),
        super::Strictness::All => true,
        super::Strictness::None => false,
    };
    let plain = || {
        convert(
            spec,
            WireFormat::Anthropic,
            &[super::schema::common, schema::anthropic],
        )
    };
    if !wants_strict {
        let (schema, lints) = plain();
        return (schema, false, lints);
    }
    let (strict, lints) = convert(
        spec,
        WireFormat::Anthropic,
        &[
            super::schema::common,
            schema::anthropic,
            schema::anthropic_strict,
        ],
    );
    if !lints.iter().any(super::Lint::is_error) || !options.allow_non_strict.contains(&spec.name) {
        return (strict, true, lints);
    }
    let (schema, mut demoted) = plain();
    demoted.extend(
        lints
            .into_iter()
            .filter(super::Lint::is_error)
            .map(|mut lint| {
                lint.severity = super::Severity::Warning;
                lint.reason = format!("{} (sent non-strict)", lint.reason);
                lint
            }),
    );
    (schema, false, demoted)
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
    message.stop = response
        .get("stop_reason")
        .and_then(Value::as_str)
        .map(stop_reason);
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
            // Thinking, and the blocks of server tools (`server_tool_use`,
            // `web_search_tool_result`, …): kept as they came, to go back
            // so (a paused turn goes on from them).
            Some(_) => message.push_reasoning_entry(WireFormat::Anthropic, block.clone()),
            None => {}
        }
    }
    message.text = (!text.is_empty()).then_some(text);
    Ok(message)
}

/// A `tool_result` content block for a result, errors flagged.
pub fn result(result: &ToolCallResult) -> Value {
    tool_result_block(&ToolResultMessage::from(result))
}

fn tool_result_block(result: &ToolResultMessage) -> Value {
    let content = super::result_content(result, "text", part);
    json!({
        "type": "tool_result",
        "tool_use_id": result.call_id,
        "content": content,
        "is_error": result.is_error,
    })
}

/// A user part as a Messages content block.
fn part(part: &ContentPart) -> Value {
    let source = |source: &MediaSource| match source {
        MediaSource::Url { url, .. } => json!({"type": "url", "url": url}),
        MediaSource::Base64 { media_type, data } => {
            json!({"type": "base64", "media_type": media_type, "data": data})
        }
    };
    match part {
        ContentPart::Text { text } => json!({"type": "text", "text": text}),
        ContentPart::Image { source: from } => json!({"type": "image", "source": source(from)}),
        ContentPart::Document { source: from } => {
            json!({"type": "document", "source": source(from)})
        }
    }
}

/// A Messages content block of a user turn as a user part.
fn read_part(block: &Value) -> Option<ContentPart> {
    let text = |pointer: &str| block.pointer(pointer).and_then(Value::as_str);
    let source = || match text("/source/type")? {
        "url" => Some(MediaSource::url(text("/source/url")?)),
        "base64" => Some(MediaSource::base64(
            text("/source/media_type")?,
            text("/source/data")?,
        )),
        _ => None,
    };
    match text("/type")? {
        "text" => Some(ContentPart::text(text("/text")?)),
        "image" => Some(ContentPart::Image { source: source()? }),
        "document" => Some(ContentPart::Document { source: source()? }),
        _ => None,
    }
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
            Message::UserParts { parts } => messages.push(json!({
                "role": "user",
                "content": parts.iter().map(part).collect::<Vec<_>>(),
            })),
            Message::Assistant(assistant) => {
                // An empty turn (`end_turn` with no content) cannot go back:
                // the API refuses `content: []` ("all messages must have
                // non-empty content except for the optional final assistant
                // message"). Left out, the turns around it are combined.
                let content = assistant_content(assistant);
                if !content.is_empty() {
                    messages.push(json!({"role": "assistant", "content": content}));
                }
            }
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
    // A final assistant turn (one sent back to go on, as after
    // `pause_turn`) may not end in white space.
    if let Some(last) = messages
        .last_mut()
        .filter(|last| last["role"] == "assistant")
    {
        let text_block = last["content"].as_array_mut().and_then(|blocks| {
            blocks
                .iter_mut()
                .rev()
                .find(|block| block["type"] == "text")
        });
        if let Some(block) = text_block {
            let trimmed = block["text"]
                .as_str()
                .map(|text| text.trim_end().to_owned());
            if let Some(trimmed) = trimmed {
                block["text"] = Value::String(trimmed);
            }
        }
        // An empty text block is refused too.
        if let Some(blocks) = last["content"].as_array_mut() {
            blocks.retain(|block| block["type"] != "text" || block["text"] != "");
        }
    }
    if messages
        .last()
        .is_some_and(|last| last["content"].as_array().is_some_and(Vec::is_empty))
    {
        messages.pop();
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
                let mut parts = Vec::new();
                for block in blocks {
                    match block.get("type").and_then(Value::as_str) {
                        Some("tool_result") => {
                            let call_id =
                                str_field(block, "tool_use_id", "tool_result")?.to_owned();
                            let (images, documents) =
                                super::result_media(block.get("content"), read_part);
                            conversation.push(Message::ToolResult(ToolResultMessage {
                                tool_name: tool_name_of(&conversation, &call_id),
                                call_id,
                                content: block.get("content").map(content_text).unwrap_or_default(),
                                images,
                                documents,
                                structured: None,
                                is_error: block
                                    .get("is_error")
                                    .and_then(Value::as_bool)
                                    .unwrap_or(false),
                                usage: None,
                            }));
                        }
                        _ => parts.extend(read_part(block)),
                    }
                }
                if !parts.is_empty() {
                    conversation.push(super::user_message(parts));
                }
            }
            (_, other) => conversation.push(Message::User {
                text: content_text(other),
            }),
        }
    }
    Ok(conversation)
}

/// Anthropic's `stop_reason`.
pub(crate) fn stop_reason(raw: &str) -> StopReason {
    let kind = match raw {
        "end_turn" | "tool_use" | "stop_sequence" => StopKind::Completed,
        "max_tokens" => StopKind::MaxTokens,
        "model_context_window_exceeded" => StopKind::ContextWindow,
        "refusal" => StopKind::Refused,
        "pause_turn" => StopKind::Paused,
        _ => StopKind::Other,
    };
    StopReason::new(kind, raw)
}

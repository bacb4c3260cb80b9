//! AWS Bedrock's Converse API: one format for every model Bedrock serves
//! (Anthropic's, Amazon's Nova, Meta's, Mistral's, …).
//!
//! A tool is a `toolSpec` with its schema under `inputSchema.json`; a turn's
//! content is a list of blocks keyed by their kind (`text`, `image`,
//! `document`, `toolUse`, `toolResult`, `reasoningContent`, `cachePoint`).
//! Images and documents go as bytes (base64 in JSON) or from S3: Bedrock
//! fetches no other URL.

mod stream;

use serde_json::{json, Map, Value};

use super::{arguments_object, content_text, str_field, Export, ExportError, ParseError};
use crate::conversation::{
    tool_name_of, AssistantMessage, ContentPart, MediaSource, Message, StopKind, StopReason,
    ToolResultMessage, TurnPart, WireFormat,
};
use crate::registry::ToolRegistry;
use crate::tool::{ToolCall, ToolCallResult, ToolSpec};

pub use stream::Stream;

/// The registry as Converse `toolConfig.tools`.
pub fn tools(registry: &ToolRegistry) -> Result<Export, ExportError> {
    super::export(
        registry,
        WireFormat::Bedrock,
        &super::ExportOptions::default(),
    )
}

/// Tools as `toolSpec` declarations. The schemas go through Anthropic's
/// passes: Converse hands them to the model, and what Claude takes every
/// model Bedrock serves with tools takes.
pub(crate) fn declare(
    specs: &[&ToolSpec],
    is_strict: &dyn Fn(&str) -> bool,
    options: &super::ExportOptions,
) -> Result<Export, ExportError> {
    let export = super::anthropic::declare(specs, is_strict, options)?;
    let tools = export
        .tools
        .into_iter()
        .map(|mut declaration| {
            let mut spec = json!({
                "name": declaration["name"].take(),
                "description": declaration["description"].take(),
                "inputSchema": {"json": declaration["input_schema"].take()},
            });
            if declaration.get("strict") == Some(&Value::Bool(true)) {
                spec["strict"] = Value::Bool(true);
            }
            json!({ "toolSpec": spec })
        })
        .collect();
    Ok(Export {
        tools,
        lints: export.lints,
    })
}

/// Tool declarations of a Converse request (`toolConfig.tools`), as specs;
/// cache points are passed over.
pub fn parse_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    request
        .pointer("/toolConfig/tools")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the request has no `toolConfig.tools` list"))?
        .iter()
        .filter_map(|tool| tool.get("toolSpec"))
        .map(|spec| {
            Ok(ToolSpec::new(
                str_field(spec, "name", "toolSpec")?,
                spec.get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                spec.pointer("/inputSchema/json")
                    .cloned()
                    .unwrap_or_else(|| json!({"type": "object"})),
            ))
        })
        .collect()
}

/// The assistant message of a Converse response.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let content = response
        .pointer("/output/message/content")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the response has no `output.message.content` list"))?;
    let mut message = assistant_blocks(content)?;
    message.usage = usage(response);
    message.stop = response
        .get("stopReason")
        .and_then(Value::as_str)
        .map(stop_reason);
    Ok(message)
}

fn assistant_blocks(blocks: &[Value]) -> Result<AssistantMessage, ParseError> {
    let mut message = AssistantMessage::default();
    let mut text = String::new();
    for block in blocks {
        if let Some(piece) = block.get("text").and_then(Value::as_str) {
            text.push_str(piece);
        } else if let Some(call) = block.get("toolUse") {
            message.tool_calls.push(ToolCall::new(
                str_field(call, "toolUseId", "toolUse")?,
                str_field(call, "name", "toolUse")?,
                call.get("input").cloned().unwrap_or_else(|| json!({})),
            ));
        } else if block.get("reasoningContent").is_some() {
            // Signed reasoning goes back as it came: a turn with tools
            // whose reasoning is missing is refused.
            message.push_reasoning_entry(WireFormat::Bedrock, block.clone());
        }
    }
    message.text = (!text.is_empty()).then_some(text);
    Ok(message)
}

/// The token counts of a response, or of a stream's `metadata` event.
/// `inputTokens` leaves out the tokens read from and written to a cache,
/// which are counted apart, as Anthropic counts them.
pub fn usage(value: &Value) -> Option<crate::conversation::Usage> {
    let usage = value
        .get("usage")
        .or_else(|| value.pointer("/metadata/usage"))
        .filter(|usage| usage.is_object())?;
    let count = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
    Some(crate::conversation::Usage {
        input_tokens: count("inputTokens"),
        output_tokens: count("outputTokens"),
        cached_tokens: count("cacheReadInputTokens"),
        reasoning_tokens: 0,
        cache_write_tokens: count("cacheWriteInputTokens"),
    })
}

/// A `toolResult` block for a result, errors flagged.
///
/// Media Bedrock cannot take (at a web URL, of another format) is left
/// out, and the text says what was and why, for the model to read.
pub fn result(result: &ToolCallResult) -> Value {
    let message = ToolResultMessage::from(result);
    match tool_result_block(&message) {
        Ok(mut block) => {
            name_documents(std::slice::from_mut(&mut block));
            block
        }
        Err(why) => {
            let mut text = message.clone();
            text.content = format!("{}\n[left out: {why}]", message.content);
            tool_result_text(&text)
        }
    }
}

/// The text of a result that had none: Converse refuses a blank text.
const NO_OUTPUT: &str = "(no output)";

/// A result as its text alone, for a result whose media Bedrock cannot
/// take as they are.
fn tool_result_text(result: &ToolResultMessage) -> Value {
    let text = if result.content.trim().is_empty() {
        NO_OUTPUT
    } else {
        result.content.as_str()
    };
    json!({"toolResult": {
        "toolUseId": result.call_id,
        "content": [{ "text": text }],
        "status": if result.is_error { "error" } else { "success" },
    }})
}

/// A `toolResult` block: the text, then the images and documents; the
/// structured output as a `json` block when there is one.
fn tool_result_block(result: &ToolResultMessage) -> Result<Value, ParseError> {
    let mut content = Vec::new();
    // Converse refuses a blank text block.
    if !result.content.trim().is_empty() {
        content.push(json!({"text": result.content}));
    }
    if let Some(structured) = result.structured.as_ref().filter(|value| value.is_object()) {
        content.push(json!({"json": structured}));
    }
    for image in &result.images {
        content.push(media(image, Kind::Image)?);
    }
    for document in &result.documents {
        content.push(media(document, Kind::Document)?);
    }
    if content.is_empty() {
        content.push(json!({ "text": NO_OUTPUT }));
    }
    Ok(json!({"toolResult": {
        "toolUseId": result.call_id,
        "content": content,
        "status": if result.is_error { "error" } else { "success" },
    }}))
}

#[derive(Clone, Copy)]
enum Kind {
    Image,
    Document,
}

/// Bedrock's `format` of a media type: its image formats and its
/// document formats.
fn format_of(media_type: &str, kind: Kind) -> Option<&'static str> {
    let essence = media_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    let known: &[(&str, &str)] = match kind {
        Kind::Image => &[
            ("image/png", "png"),
            ("image/jpeg", "jpeg"),
            ("image/jpg", "jpeg"),
            ("image/gif", "gif"),
            ("image/webp", "webp"),
        ],
        Kind::Document => &[
            ("application/pdf", "pdf"),
            ("text/csv", "csv"),
            ("application/msword", "doc"),
            (
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                "docx",
            ),
            ("application/vnd.ms-excel", "xls"),
            (
                "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
                "xlsx",
            ),
            ("text/html", "html"),
            ("text/plain", "txt"),
            ("text/markdown", "md"),
        ],
    };
    known
        .iter()
        .find(|(name, _)| *name == essence)
        .map(|(_, format)| *format)
}

/// An image or document block: bytes, or an `s3://` location.
/// A document's name is given by [`name_documents`], for the message it
/// ends up in.
fn media(source: &MediaSource, kind: Kind) -> Result<Value, ParseError> {
    let what = match kind {
        Kind::Image => "an image",
        Kind::Document => "a document",
    };
    let (format_from, source) = match source {
        MediaSource::Base64 { media_type, data } => {
            (Some(media_type.as_str()), json!({"bytes": data}))
        }
        MediaSource::Url { url, media_type } if url.starts_with("s3://") => {
            (media_type.as_deref(), json!({"s3Location": {"uri": url}}))
        }
        MediaSource::Url { .. } => {
            return Err(ParseError::new(format!(
                "{what} at a web URL cannot be sent to Bedrock, which takes only bytes or an \
                 `s3://` location: fetch it and give its bytes (`MediaSource::base64`)"
            )))
        }
    };
    let format = format_from
        .and_then(|media_type| format_of(media_type, kind))
        .ok_or_else(|| {
            ParseError::new(format!(
                "{what} of media type `{}` cannot be sent to Bedrock: it takes images as png, \
                 jpeg, gif or webp, documents as pdf, csv, doc, docx, xls, xlsx, html, txt or md",
                format_from.unwrap_or("(not given)")
            ))
        })?;
    Ok(match kind {
        Kind::Image => json!({"image": {"format": format, "source": source}}),
        Kind::Document => json!({"document": {"format": format, "source": source}}),
    })
}

/// A user part as a Converse content block.
fn part(part: &ContentPart) -> Result<Value, ParseError> {
    match part {
        ContentPart::Text { text } => Ok(json!({ "text": text })),
        ContentPart::Image { source } => media(source, Kind::Image),
        ContentPart::Document { source } => media(source, Kind::Document),
    }
}

/// A Converse content block of a user turn as a user part.
fn read_part(block: &Value) -> Option<ContentPart> {
    if let Some(text) = block.get("text").and_then(Value::as_str) {
        return Some(ContentPart::text(text));
    }
    let (kind, inner) = match (block.get("image"), block.get("document")) {
        (Some(image), _) => (Kind::Image, image),
        (None, Some(document)) => (Kind::Document, document),
        _ => return None,
    };
    let format = inner.get("format").and_then(Value::as_str)?;
    let media_type = media_type_of(format, kind)?;
    let source = if let Some(bytes) = inner.pointer("/source/bytes").and_then(Value::as_str) {
        MediaSource::base64(media_type, bytes)
    } else {
        let uri = inner
            .pointer("/source/s3Location/uri")
            .and_then(Value::as_str)?;
        MediaSource::Url {
            url: uri.to_owned(),
            media_type: Some(media_type.to_owned()),
        }
    };
    Some(match kind {
        Kind::Image => ContentPart::Image { source },
        Kind::Document => ContentPart::Document { source },
    })
}

/// The media type of a Bedrock `format`.
fn media_type_of(format: &str, kind: Kind) -> Option<&'static str> {
    Some(match (kind, format) {
        (Kind::Image, "png") => "image/png",
        (Kind::Image, "jpeg") => "image/jpeg",
        (Kind::Image, "gif") => "image/gif",
        (Kind::Image, "webp") => "image/webp",
        (Kind::Document, "pdf") => "application/pdf",
        (Kind::Document, "csv") => "text/csv",
        (Kind::Document, "html") => "text/html",
        (Kind::Document, "txt") => "text/plain",
        (Kind::Document, "md") => "text/markdown",
        (Kind::Document, "doc") => "application/msword",
        (Kind::Document, "docx") => {
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
        }
        (Kind::Document, "xls") => "application/vnd.ms-excel",
        (Kind::Document, "xlsx") => {
            "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
        }
        _ => return None,
    })
}

/// A conversation as Converse `system` blocks and `messages`: tool results
/// go in the next user message, several in one; consecutive turns of one
/// role are joined, as Converse wants roles to alternate. A part Bedrock
/// cannot take (media at a web URL, a format it does not read) is an error
/// that says so, never dropped.
pub fn messages(conversation: &[Message]) -> Result<(Vec<Value>, Vec<Value>), ParseError> {
    let mut system = Vec::new();
    let mut messages: Vec<Value> = Vec::new();
    let mut push = |role: &str, mut blocks: Vec<Value>| {
        if blocks.is_empty() {
            return;
        }
        if let Some(last) = messages.last_mut().filter(|last| last["role"] == role) {
            if let Some(content) = last["content"].as_array_mut() {
                content.append(&mut blocks);
                return;
            }
        }
        messages.push(json!({"role": role, "content": blocks}));
    };
    for message in conversation {
        match message {
            // Converse refuses blank text blocks: they are left out.
            Message::System { text } if text.trim().is_empty() => {}
            Message::System { text } => system.push(json!({ "text": text })),
            Message::User { text } if text.trim().is_empty() => {}
            Message::User { text } => push("user", vec![json!({ "text": text })]),
            Message::UserParts { parts } => {
                let blocks = parts
                    .iter()
                    .filter(|each| {
                        !matches!(each, ContentPart::Text { text } if text.trim().is_empty())
                    })
                    .map(part)
                    .collect::<Result<Vec<_>, _>>()?;
                push("user", blocks);
            }
            // An empty turn cannot go back (Converse refuses empty
            // content): left out, the turns around it are joined.
            Message::Assistant(assistant) => push("assistant", assistant_content(assistant)),
            Message::ToolResult(result) => push("user", vec![tool_result_block(result)?]),
        }
    }
    for message in &mut messages {
        if let Some(blocks) = message.get_mut("content").and_then(Value::as_array_mut) {
            name_documents(blocks);
        }
    }
    Ok((system, messages))
}

/// Names the documents of one message's `blocks` `document-1`,
/// `document-2`, … in order, those of its tool results included: Converse
/// wants a document named, uniquely in its message (letters, digits,
/// spaces, hyphens, parentheses and brackets), and joined turns bring
/// theirs together.
fn name_documents(blocks: &mut [Value]) {
    fn rename(block: &mut Value, count: &mut usize) {
        if let Some(document) = block.get_mut("document").and_then(Value::as_object_mut) {
            *count += 1;
            document.insert("name".into(), json!(format!("document-{count}")));
        }
        if let Some(inner) = block
            .pointer_mut("/toolResult/content")
            .and_then(Value::as_array_mut)
        {
            for block in inner {
                rename(block, count);
            }
        }
    }
    let mut count = 0;
    for block in blocks {
        rename(block, &mut count);
    }
}

/// The blocks of a model turn: its reasoning as it came and where it
/// came, then text and `toolUse` blocks.
fn assistant_content(assistant: &AssistantMessage) -> Vec<Value> {
    assistant
        .turn_parts(WireFormat::Bedrock)
        .into_iter()
        .filter_map(|part| match part {
            TurnPart::Reasoning(block) => Some(block.clone()),
            // Converse refuses a blank text block.
            TurnPart::Text(text) if text.trim().is_empty() => None,
            TurnPart::Text(text) => Some(json!({ "text": text })),
            TurnPart::Call(call) => Some(json!({"toolUse": {
                "toolUseId": call.call_id,
                "name": call.tool_name,
                "input": arguments_object(&call.arguments),
            }})),
        })
        .collect()
}

/// Converse `system` blocks and `messages` as a conversation.
pub fn from_messages(system: &[Value], messages: &[Value]) -> Result<Vec<Message>, ParseError> {
    let mut conversation = Vec::new();
    let system_text: Vec<&str> = system
        .iter()
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect();
    if !system_text.is_empty() {
        conversation.push(Message::System {
            text: system_text.join("\n\n"),
        });
    }
    for message in messages {
        let role = str_field(message, "role", "messages[]")?;
        let blocks = message
            .get("content")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        if role == "assistant" {
            conversation.push(Message::Assistant(assistant_blocks(blocks)?));
            continue;
        }
        let mut parts = Vec::new();
        for block in blocks {
            let Some(result) = block.get("toolResult") else {
                parts.extend(read_part(block));
                continue;
            };
            let call_id = str_field(result, "toolUseId", "toolResult")?.to_owned();
            let content = result.get("content");
            let (images, documents) = super::result_media(content, read_part);
            let structured = content
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find_map(|block| block.get("json").cloned());
            conversation.push(Message::ToolResult(ToolResultMessage {
                tool_name: tool_name_of(&conversation, &call_id),
                call_id,
                content: content.map(content_text).unwrap_or_default(),
                images,
                documents,
                structured,
                is_error: result.get("status").and_then(Value::as_str) == Some("error"),
                usage: None,
            }));
        }
        if !parts.is_empty() {
            conversation.push(super::user_message(parts));
        }
    }
    Ok(conversation)
}

/// Marks what a request's next turn may read from Bedrock's prompt cache:
/// a `cachePoint` after the tools, after the system prompt and at the end
/// of the conversation. Bedrock takes up to four.
pub fn mark_cache_points(body: &mut Map<String, Value>) {
    let point = || json!({"cachePoint": {"type": "default"}});
    if let Some(tools) = body
        .get_mut("toolConfig")
        .and_then(|config| config.get_mut("tools"))
        .and_then(Value::as_array_mut)
    {
        tools.push(point());
    }
    if let Some(system) = body.get_mut("system").and_then(Value::as_array_mut) {
        system.push(point());
    }
    if let Some(content) = body
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|messages| messages.last_mut())
        .and_then(|last| last.get_mut("content"))
        .and_then(Value::as_array_mut)
    {
        content.push(point());
    }
}

/// Bedrock's `stopReason`.
pub(crate) fn stop_reason(raw: &str) -> StopReason {
    let kind = match raw {
        "end_turn" | "tool_use" | "stop_sequence" => StopKind::Completed,
        "max_tokens" => StopKind::MaxTokens,
        "model_context_window_exceeded" => StopKind::ContextWindow,
        "guardrail_intervened" | "content_filtered" => StopKind::Filtered,
        "malformed_tool_use" | "malformed_model_output" => StopKind::MalformedCall,
        _ => StopKind::Other,
    };
    StopReason::new(kind, raw)
}

#[cfg(test)]
mod tests;

//! Google Gemini (`generateContent`).

pub(crate) mod schema;
mod stream;
use super::{arguments_object, convert, finish, str_field, Export, ExportError, ParseError};
use crate::conversation::{
    last_call, tool_name_of, AssistantMessage, ContentPart, MediaSource, Message, StopKind,
    StopReason, ToolResultMessage, TurnPart, WireFormat,
};
use crate::registry::ToolRegistry;
use crate::tool::ToolSpec;
use crate::tool::{ToolCall, ToolCallResult};
use serde_json::{json, Value};
use std::collections::HashSet;
/// Call ids made up for calls that came without one; such calls and their
/// results go back without an id, as they came.
const GENERATED_ID: &str = "gemini-call-";

pub use stream::Stream;

/// The made-up ids of one turn: `gemini-call-<index>`, from the turn
/// alone (a run makes an id repeated across turns unique, as it does any
/// provider's).
#[derive(Debug, Default)]
struct GeneratedIds {
    next: usize,
}

impl GeneratedIds {
    fn next(&mut self) -> String {
        let id = format!("{GENERATED_ID}{}", self.next);
        self.next += 1;
        id
    }
}

/// The registry as `tools`: one entry of `functionDeclarations`. A tool
/// without parameters gets no `parameters`.
pub fn tools(registry: &ToolRegistry) -> Result<Export, ExportError> {
    super::export(
        registry,
        WireFormat::Gemini,
        &super::ExportOptions::default(),
    )
}

/// Tools as declarations of this format.
pub(crate) fn declare(specs: &[&ToolSpec]) -> Result<Export, ExportError> {
    let exported = finish(
        specs
            .iter()
            .map(|spec| {
                let (schema, lints) = convert(
                    spec,
                    WireFormat::Gemini,
                    &[super::schema::common, schema::gemini],
                );
                let mut declaration = json!({"name": spec.name, "description": spec.description});
                let has_parameters = schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|properties| !properties.is_empty());
                if has_parameters {
                    declaration["parameters"] = schema;
                }
                (declaration, lints)
            })
            .collect(),
    )?;
    Ok(Export {
        tools: vec![json!({"functionDeclarations": exported.tools})],
        lints: exported.lints,
    })
}

/// Function declarations of a request, as specs; `parameters` (OpenAPI
/// subset, read as JSON Schema: `"STRING"` types in lower case, `nullable`
/// as a `null` type) and `parametersJsonSchema` (as it is) are both read.
pub fn parse_tools(request: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    let tools = request
        .get("tools")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the request has no `tools` list"))?;
    let mut specs = Vec::new();
    for tool in tools {
        for declaration in tool
            .get("functionDeclarations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let parameters = ["parametersJsonSchema", "parameters_json_schema"]
                .iter()
                .find_map(|key| declaration.get(*key))
                .cloned()
                .or_else(|| declaration.get("parameters").map(openapi_to_json_schema))
                .unwrap_or_else(|| json!({"type": "object", "properties": {}}));
            specs.push(ToolSpec::new(
                str_field(declaration, "name", "functionDeclarations[]")?,
                declaration
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
                parameters,
            ));
        }
    }
    Ok(specs)
}

/// A Gemini `Schema` (OpenAPI 3.0 subset) as JSON Schema: types in lower
/// case and `nullable: true` as a `null` type, at every depth.
fn openapi_to_json_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(object) => {
            let mut out = serde_json::Map::new();
            let nullable = object.get("nullable") == Some(&Value::Bool(true));
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("nullable", _) => {}
                    // Gemini's export moves an enum's `null` into `nullable`.
                    ("enum", Value::Array(values))
                        if nullable && !values.contains(&Value::Null) =>
                    {
                        let mut values = values.clone();
                        values.push(Value::Null);
                        out.insert(key.clone(), Value::Array(values));
                    }
                    ("type", Value::String(kind)) => {
                        let kind = Value::String(kind.to_ascii_lowercase());
                        let kind = if nullable {
                            json!([kind, "null"])
                        } else {
                            kind
                        };
                        out.insert(key.clone(), kind);
                    }
                    // Maps of schemas, and schemas, to convert; the rest is
                    // data (`enum`, `required`, `example`, …).
                    ("properties" | "$defs" | "definitions", Value::Object(map)) => {
                        let converted = map
                            .iter()
                            .map(|(name, schema)| (name.clone(), openapi_to_json_schema(schema)))
                            .collect();
                        out.insert(key.clone(), Value::Object(converted));
                    }
                    ("items" | "additionalProperties" | "not", _)
                    | ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(_)) => {
                        out.insert(key.clone(), openapi_to_json_schema(value));
                    }
                    _ => {
                        out.insert(key.clone(), value.clone());
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(openapi_to_json_schema).collect()),
        other => other.clone(),
    }
}

/// A prompt Gemini refused to answer (`promptFeedback.blockReason`, no
/// candidates): why, as an error. Trying again with the same prompt gets
/// the same answer.
pub(crate) fn blocked_prompt(response: &Value) -> Option<ParseError> {
    let reason = response
        .pointer("/promptFeedback/blockReason")
        .and_then(Value::as_str)?;
    let has_candidates = response
        .get("candidates")
        .and_then(Value::as_array)
        .is_some_and(|candidates| !candidates.is_empty());
    if has_candidates {
        return None;
    }
    let message = response
        .pointer("/promptFeedback/blockReasonMessage")
        .and_then(Value::as_str)
        .map(|message| format!(": {message}"))
        .unwrap_or_default();
    Some(ParseError::new(format!(
        "Gemini blocked the prompt (blockReason {reason}){message}"
    )))
}

/// The model message of a response (its first candidate). Thought parts
/// and thought signatures are kept as reasoning; calls without an id get
/// one made up, unique in the process.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_response_message(response)?;
    message.usage = super::usage::gemini(response);
    message.stop = response
        .pointer("/candidates/0/finishReason")
        .and_then(Value::as_str)
        .map(stop_reason);
    Ok(message)
}

fn parse_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
    if let Some(blocked) = blocked_prompt(response) {
        return Err(blocked);
    }
    let parts = response
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the response has no `candidates[0].content.parts`"))?;
    model_parts(parts)
}

fn model_parts(parts: &[Value]) -> Result<AssistantMessage, ParseError> {
    let mut message = AssistantMessage::default();
    let mut text = String::new();
    let mut ids = GeneratedIds::default();
    for part in parts {
        if let Some(call) = part.get("functionCall") {
            let call = function_call(call, &mut ids)?;
            if let Some(fields) = signature(part) {
                message.push_call_fields(WireFormat::Gemini, &call.call_id, fields);
            }
            message.tool_calls.push(call);
        } else if is_reasoning_part(part) {
            message.push_reasoning_entry(WireFormat::Gemini, part.clone());
        } else if let Some(part_text) = part.get("text").and_then(Value::as_str) {
            text.push_str(part_text);
            if let Some(fields) = signature(part) {
                message.push_turn_fields(WireFormat::Gemini, fields);
            }
        }
    }
    message.text = (!text.is_empty()).then_some(text);
    Ok(message)
}

/// The field Gemini puts on the part its reasoning belongs to; it must go
/// back on that same part.
const SIGNATURE: &str = "thoughtSignature";

/// The part's signature, as the fields that carry it.
fn signature(part: &Value) -> Option<Value> {
    part.get(SIGNATURE)
        .map(|signature| json!({ SIGNATURE: signature }))
}

fn is_thought(part: &Value) -> bool {
    part.get("thought")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

/// A thought part, or a part that carries only a signature: kept whole.
fn is_reasoning_part(part: &Value) -> bool {
    is_thought(part) || (part.get("text").is_none() && part.get(SIGNATURE).is_some())
}

fn function_call(call: &Value, ids: &mut GeneratedIds) -> Result<ToolCall, ParseError> {
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .map_or_else(|| ids.next(), str::to_owned);
    Ok(ToolCall::new(
        id,
        str_field(call, "name", "functionCall")?,
        call.get("args").cloned().unwrap_or_else(|| json!({})),
    ))
}

/// A `functionResponse` part for a result: `{"output": ..}` or
/// `{"error": ..}`.
pub fn result(result: &ToolCallResult) -> Value {
    response_part(&ToolResultMessage::from(result))
}

fn response_part(result: &ToolResultMessage) -> Value {
    let response = if result.is_error {
        json!({"error": result.content})
    } else {
        json!({"output": result.structured.clone().unwrap_or_else(|| Value::String(result.content.clone()))})
    };
    let mut function_response = json!({"name": result.tool_name, "response": response});
    if !result.call_id.starts_with(GENERATED_ID) {
        function_response["id"] = Value::String(result.call_id.clone());
    }
    // Gemini 3 takes images and PDFs inside the function response.
    if !result.images.is_empty() || !result.documents.is_empty() {
        let parts = super::result_parts(result).map(|media| part(&media));
        function_response["parts"] = Value::Array(parts.collect());
    }
    json!({"functionResponse": function_response})
}

/// A user part as a Gemini part: inline bytes, or a file URI.
fn part(part: &ContentPart) -> Value {
    let media = |source: &MediaSource, fallback: &str| match source {
        MediaSource::Base64 { media_type, data } => {
            json!({"inlineData": {"mimeType": media_type, "data": data}})
        }
        MediaSource::Url { url, media_type } => json!({"fileData": {
            "mimeType": media_type.as_deref().unwrap_or(fallback), "fileUri": url}}),
    };
    match part {
        ContentPart::Text { text } => json!({"text": text}),
        ContentPart::Image { source } => media(source, "image/jpeg"),
        ContentPart::Document { source } => media(source, "application/pdf"),
    }
}

/// A Gemini part of a user turn as a user part (function responses are
/// read apart).
fn read_part(part: &Value) -> Option<ContentPart> {
    let text = |pointer: &str| part.pointer(pointer).and_then(Value::as_str);
    let kind = |media_type: &str, source: MediaSource| {
        if media_type.starts_with("image/") {
            ContentPart::Image { source }
        } else {
            ContentPart::Document { source }
        }
    };
    if let Some(said) = text("/text") {
        return (!said.is_empty()).then(|| ContentPart::text(said));
    }
    if let (Some(media_type), Some(data)) = (text("/inlineData/mimeType"), text("/inlineData/data"))
    {
        return Some(kind(media_type, MediaSource::base64(media_type, data)));
    }
    let (media_type, url) = (text("/fileData/mimeType")?, text("/fileData/fileUri")?);
    let source = MediaSource::Url {
        url: url.to_owned(),
        media_type: Some(media_type.to_owned()),
    };
    Some(kind(media_type, source))
}

/// A conversation as `systemInstruction` and `contents`; tool results go in
/// one user turn.
pub fn messages(conversation: &[Message]) -> (Option<Value>, Vec<Value>) {
    let mut system: Vec<Value> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    for message in conversation {
        let (role, part) = match message {
            Message::System { text } => {
                system.push(json!({"text": text}));
                continue;
            }
            Message::User { text } => ("user", vec![json!({"text": text})]),
            Message::UserParts { parts } => ("user", parts.iter().map(part).collect()),
            // An empty turn cannot go back (`parts: []` is refused).
            Message::Assistant(assistant) => match model_content(assistant) {
                parts if parts.is_empty() => continue,
                parts => ("model", parts),
            },
            Message::ToolResult(result) => ("user", vec![response_part(result)]),
        };
        let merge = matches!(message, Message::ToolResult(_))
            && contents.last().is_some_and(|last| {
                last["role"] == "user"
                    && last["parts"].as_array().is_some_and(|parts| {
                        parts.iter().all(|p| p.get("functionResponse").is_some())
                    })
            });
        if merge {
            if let Some(parts) = contents
                .last_mut()
                .and_then(|last| last["parts"].as_array_mut())
            {
                parts.extend(part);
            }
        } else {
            contents.push(json!({"role": role, "parts": part}));
        }
    }
    let system = (!system.is_empty()).then(|| json!({"parts": system}));
    (system, contents)
}

/// The parts of a model turn: thought parts as they came and where they
/// came, the text, and `functionCall` parts, each part with the signature
/// it came with.
fn model_content(assistant: &AssistantMessage) -> Vec<Value> {
    assistant
        .turn_parts(WireFormat::Gemini)
        .into_iter()
        .map(|part| match part {
            TurnPart::Reasoning(part) => part.clone(),
            TurnPart::Text(text) => {
                let mut part = json!({"text": text});
                assistant.add_turn_fields(&mut part, WireFormat::Gemini);
                part
            }
            TurnPart::Call(call) => {
                let mut function_call =
                    json!({"name": call.tool_name, "args": arguments_object(&call.arguments)});
                if !call.call_id.starts_with(GENERATED_ID) {
                    function_call["id"] = Value::String(call.call_id.clone());
                }
                let mut part = json!({"functionCall": function_call});
                assistant.add_call_fields(&mut part, WireFormat::Gemini, &call.call_id);
                part
            }
        })
        .collect()
}

/// `systemInstruction` and `contents` as a conversation.
pub fn from_messages(
    system: Option<&Value>,
    contents: &[Value],
) -> Result<Vec<Message>, ParseError> {
    let mut conversation = Vec::new();
    if let Some(system) = system {
        let text = part_texts(
            system
                .get("parts")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice),
        );
        conversation.push(Message::System { text });
    }
    for content in contents {
        let parts = content
            .get("parts")
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice);
        if content.get("role").and_then(Value::as_str) == Some("model") {
            conversation.push(Message::Assistant(model_parts(parts)?));
            continue;
        }
        for part in parts {
            if let Some(response) = part.get("functionResponse") {
                let name = str_field(response, "name", "functionResponse")?.to_owned();
                let call_id = response
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .map_or_else(|| call_id_for(&conversation, &name), str::to_owned);
                let body = response.get("response").cloned().unwrap_or(Value::Null);
                let is_error = body.get("error").is_some();
                let content = match body.get("error").or_else(|| body.get("output")) {
                    Some(Value::String(text)) => text.clone(),
                    Some(other) => other.to_string(),
                    None => body.to_string(),
                };
                let (images, documents) = super::result_media(response.get("parts"), read_part);
                conversation.push(Message::ToolResult(ToolResultMessage {
                    images,
                    documents,
                    tool_name: if name.is_empty() {
                        tool_name_of(&conversation, &call_id)
                    } else {
                        name
                    },
                    call_id,
                    content,
                    structured: None,
                    is_error,
                    usage: None,
                }));
            }
        }
        let user: Vec<ContentPart> = parts.iter().filter_map(read_part).collect();
        if !user.is_empty() {
            conversation.push(super::user_message(user));
        }
    }
    Ok(conversation)
}

fn part_texts(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect()
}

/// The call a response of `name` without an id answers: Gemini answers
/// calls in order, so the first call of `name` in the latest model turn
/// that no result answers yet; else the last call of `name`; else a new id.
fn call_id_for(conversation: &[Message], name: &str) -> String {
    unanswered_call(conversation, name)
        .or_else(|| last_call(conversation, |call| call.tool_name == name))
        .map_or_else(
            || GeneratedIds::default().next(),
            |call| call.call_id.clone(),
        )
}

fn unanswered_call<'c>(conversation: &'c [Message], name: &str) -> Option<&'c ToolCall> {
    let turn = conversation
        .iter()
        .rposition(|message| matches!(message, Message::Assistant(_)))?;
    let Message::Assistant(assistant) = &conversation[turn] else {
        return None;
    };
    let answered: HashSet<&str> = conversation[turn + 1..]
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.call_id.as_str()),
            _ => None,
        })
        .collect();
    assistant
        .tool_calls
        .iter()
        .find(|call| call.tool_name == name && !answered.contains(call.call_id.as_str()))
}

/// Gemini's `finishReason`.
pub(crate) fn stop_reason(raw: &str) -> StopReason {
    let kind = match raw {
        "STOP" => StopKind::Completed,
        "MAX_TOKENS" => StopKind::MaxTokens,
        "SAFETY"
        | "RECITATION"
        | "BLOCKLIST"
        | "PROHIBITED_CONTENT"
        | "SPII"
        | "IMAGE_SAFETY"
        | "IMAGE_PROHIBITED_CONTENT"
        | "IMAGE_RECITATION" => StopKind::Filtered,
        "MALFORMED_FUNCTION_CALL" | "UNEXPECTED_TOOL_CALL" => StopKind::MalformedCall,
        _ => StopKind::Other,
    };
    StopReason::new(kind, raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::ModelDelta;
    use crate::providers::StreamAssembler;

    /// A call continued over parts keeps its piece's index; the next call
    /// gets the next one, as the assembled message numbers them.
    #[test]
    fn continued_calls_keep_their_delta_index() {
        let chunk = |parts: Value| json!({"candidates": [{"content": {"parts": parts}}]});
        let mut stream = Stream::new();
        let mut indices = Vec::new();
        for parts in [
            json!([{"functionCall": {"name": "search", "willContinue": true}}]),
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.q", "stringValue": "ru"}], "willContinue": true}}]),
            json!([{"functionCall": {"name": "search", "args": {"q": "rust"}}}]),
            json!([{"functionCall": {"name": "search", "args": {"q": "go"}}}, {"functionCall": {"name": "add", "args": {}}}]),
        ] {
            for delta in stream.push(&chunk(parts)).unwrap().deltas {
                if let ModelDelta::ToolCall { index, .. } = delta {
                    indices.push(index);
                }
            }
        }
        assert_eq!(indices, [0, 0, 0, 1, 2]);
        let names: Vec<_> = stream
            .finish()
            .tool_calls
            .into_iter()
            .map(|call| call.tool_name)
            .collect();
        assert_eq!(names, ["search", "search", "add"]);
        // A nameless part with no call open makes no call, and no piece.
        let mut stream = Stream::new();
        let stray = chunk(json!([{"functionCall": {"args": {"q": "x"}}}]));
        assert!(stream.push(&stray).unwrap().deltas.is_empty());
        assert!(stream.finish().tool_calls.is_empty());
    }

    #[test]
    fn openapi_declarations_read_as_json_schema_a_registry_accepts() {
        let request = json!({"tools": [{"functionDeclarations": [{
            "name": "set_light",
            "description": "Sets a light.",
            "parameters": {
                "type": "OBJECT",
                "properties": {
                    "level": {"type": "INTEGER", "nullable": true},
                    "unit": {"type": "STRING", "enum": ["C", "F"], "nullable": true},
                    "tags": {"type": "ARRAY", "items": {"type": "STRING", "enum": ["A", "B"]}},
                },
                "required": ["tags"],
            },
        }]}]});
        let specs = parse_tools(&request).unwrap();
        assert_eq!(
            specs[0].parameters,
            json!({
                "type": "object",
                "properties": {
                    "level": {"type": ["integer", "null"]},
                    "unit": {"type": ["string", "null"], "enum": ["C", "F", null]},
                    "tags": {"type": "array", "items": {"type": "string", "enum": ["A", "B"]}},
                },
                "required": ["tags"],
            })
        );
        let tool = crate::ExternalTool::from_spec(specs[0].clone());
        crate::ToolRegistry::new().with(tool).unwrap();
    }
}

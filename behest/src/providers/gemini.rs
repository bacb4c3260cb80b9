//! Google Gemini (`generateContent`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Map, Value};

use super::stream::{text_at, Pushed, StreamAssembler};
use super::{
    arguments_object, convert, finish, schema, str_field, Export, ExportError, ParseError,
};
use crate::conversation::{
    last_call, tool_name_of, AssistantMessage, Message, ModelDelta, ToolResultMessage, TurnPart,
    WireFormat,
};
use crate::registry::ToolRegistry;
use crate::tool::ToolSpec;
use crate::tool::{ToolCall, ToolCallResult};

/// Call ids made up for calls that came without one; such calls and their
/// results go back without an id, as they came.
const GENERATED_ID: &str = "gemini-call-";

/// Turns of this process that needed made-up ids so far.
static TURNS_WITH_GENERATED_IDS: AtomicU64 = AtomicU64::new(0);

/// The made-up ids of one turn: `gemini-call-<turn>-<index>`, unique in the
/// process, since a run keys what waits for a call by its id.
#[derive(Debug, Default)]
struct GeneratedIds {
    turn: Option<u64>,
    next: usize,
}

impl GeneratedIds {
    fn next(&mut self) -> String {
        let turn = *self
            .turn
            .get_or_insert_with(|| TURNS_WITH_GENERATED_IDS.fetch_add(1, Ordering::Relaxed));
        let id = format!("{GENERATED_ID}{turn}-{}", self.next);
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
                let (schema, lints) =
                    convert(spec, WireFormat::Gemini, &[schema::common, schema::gemini]);
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

/// The model message of a response (its first candidate). Thought parts
/// and thought signatures are kept as reasoning; calls without an id get
/// one made up, unique in the process.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
    let mut message = parse_response_message(response)?;
    message.usage = super::usage::gemini(response);
    Ok(message)
}

fn parse_response_message(response: &Value) -> Result<AssistantMessage, ParseError> {
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

/// Assembles a streamed response: whole `functionCall` parts, or calls
/// streamed as `partialArgs` (`willContinue`) and closed by an empty
/// `functionCall`; consecutive thought parts are joined into one.
#[derive(Debug, Default)]
pub struct Stream {
    /// The token counts seen so far.
    usage: Option<crate::conversation::Usage>,
    message: AssistantMessage,
    text: String,
    open: Option<OpenCall>,
    ids: GeneratedIds,
    /// Whether the last reasoning entry is a thought part that the next
    /// thought piece continues.
    thinking: bool,
}

/// A call whose last fragment said `willContinue`.
#[derive(Debug)]
struct OpenCall {
    id: Option<String>,
    name: String,
    args: Map<String, Value>,
    signature: Option<Value>,
}

/// What a `functionCall` part says of the call it belongs to.
struct Fragment<'a> {
    /// The function named, if any (an empty name is none).
    name: Option<&'a str>,
    /// The call's id, if any (an empty id is none).
    id: Option<&'a str>,
    /// Whether more of the call follows (`willContinue`).
    continues: bool,
}

impl<'a> Fragment<'a> {
    fn of(call: &'a Value) -> Self {
        let text = |key: &str| {
            call.get(key)
                .and_then(Value::as_str)
                .filter(|text| !text.is_empty())
        };
        Self {
            name: text("name"),
            id: text("id"),
            continues: call
                .get("willContinue")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        }
    }

    /// Whether this part repeats the open call named `name` (with `id`)
    /// rather than starting the next one: a call closes before the next
    /// starts, so only a different name or id means a new call.
    fn repeats(&self, name: &str, id: Option<&str>) -> bool {
        self.name == Some(name) && (self.id.is_none() || id.is_none() || id == self.id)
    }
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl StreamAssembler for Stream {
    const END_MARKER: &'static str = "a `finishReason`";

    /// Adds one chunk; a chunk with a `finishReason` ends the turn. A
    /// call's piece has the index of its call in the assembled message.
    fn push(&mut self, chunk: &Value) -> Result<Pushed, ParseError> {
        if chunk.get("error").is_some() {
            return Ok(Pushed::error(chunk));
        }
        self.usage = super::usage::merge(self.usage, super::usage::gemini(chunk));
        let ended = chunk
            .pointer("/candidates/0/finishReason")
            .is_some_and(|reason| !reason.is_null());
        let mut deltas = Vec::new();
        let parts = chunk
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if let Some(text) = part.get("text").and_then(Value::as_str) {
                deltas.push(if is_thought(part) {
                    ModelDelta::Reasoning(text.to_owned())
                } else {
                    ModelDelta::Text(text.to_owned())
                });
            }
            if let Some(call) = part.get("functionCall") {
                self.thinking = false;
                if let Some(index) = self.function_call(call, signature(part))? {
                    deltas.push(ModelDelta::ToolCall {
                        index,
                        id: text_at(call, "/id"),
                        name: text_at(call, "/name"),
                        arguments: call.get("args").map(Value::to_string).unwrap_or_default(),
                    });
                }
            } else if is_reasoning_part(part) {
                self.thought(part);
            } else if let Some(text) = part.get("text").and_then(Value::as_str) {
                self.thinking = false;
                self.text.push_str(text);
                if let Some(fields) = signature(part) {
                    self.message.push_turn_fields(WireFormat::Gemini, fields);
                }
            }
        }
        Ok(Pushed::deltas(deltas).ending(ended))
    }

    /// The assembled message.
    fn finish(mut self) -> AssistantMessage {
        self.close();
        self.message.text = (!self.text.is_empty()).then_some(self.text);
        self.message.usage = self.usage;
        self.message
    }
}

impl Stream {
    /// Adds a thought piece to the thought part before it, or starts one. A
    /// signature ends a part: it comes with its last piece.
    fn thought(&mut self, part: &Value) {
        let growing =
            self.message.reasoning.last_mut().filter(|last| {
                self.thinking && is_thought(part) && last.data.get(SIGNATURE).is_none()
            });
        match growing {
            Some(last) => {
                let text = [&last.data, part]
                    .iter()
                    .filter_map(|piece| piece.get("text").and_then(Value::as_str))
                    .collect::<String>();
                if let (Some(joined), Some(piece)) = (last.data.as_object_mut(), part.as_object()) {
                    joined.extend(piece.clone());
                    joined.insert("text".into(), Value::String(text));
                }
            }
            None => self
                .message
                .push_reasoning_entry(WireFormat::Gemini, part.clone()),
        }
        self.thinking = is_thought(part);
    }

    /// Adds a `functionCall` part; returns the index its call has in the
    /// assembled message, or `None` for a nameless part with no call open,
    /// which makes no call.
    fn function_call(
        &mut self,
        call: &Value,
        signature: Option<Value>,
    ) -> Result<Option<usize>, ParseError> {
        let fragment = Fragment::of(call);
        let Fragment {
            name,
            id,
            continues,
        } = fragment;
        if let Some(name) = name {
            match &mut self.open {
                Some(open) if fragment.repeats(&open.name, open.id.as_deref()) => {
                    open.id = open.id.take().or_else(|| id.map(str::to_owned));
                }
                _ => {
                    self.close();
                    self.open = Some(OpenCall {
                        id: id.map(str::to_owned),
                        name: name.to_owned(),
                        args: Map::new(),
                        signature: None,
                    });
                }
            }
        }
        // The open call is not yet among the closed ones before it.
        let index = self.open.is_some().then_some(self.message.tool_calls.len());
        if let Some(open) = &mut self.open {
            if let Some(args) = call.get("args").and_then(Value::as_object) {
                open.args.extend(args.clone());
            }
            open.signature = open.signature.take().or(signature);
        }
        for partial in call
            .get("partialArgs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(OpenCall { args, .. }) = &mut self.open else {
                return Err(ParseError::new("partialArgs for no open functionCall"));
            };
            let path = str_field(partial, "jsonPath", "partialArgs[]")?;
            let key = path.strip_prefix("$.").ok_or_else(|| {
                ParseError::new(format!("partialArgs[]: unsupported jsonPath `{path}`"))
            })?;
            if let Some(piece) = partial.get("stringValue").and_then(Value::as_str) {
                let slot = args
                    .entry(key.to_owned())
                    .or_insert_with(|| Value::String(String::new()));
                if let Value::String(text) = slot {
                    text.push_str(piece);
                }
            } else if let Some(value) = ["numberValue", "boolValue", "nullValue"]
                .iter()
                .find_map(|k| partial.get(*k))
            {
                args.insert(key.to_owned(), value.clone());
            }
        }
        if !continues {
            self.close();
        }
        Ok(index)
    }

    fn close(&mut self) {
        if let Some(open) = self.open.take() {
            let id = open.id.unwrap_or_else(|| self.ids.next());
            if let Some(fields) = open.signature {
                self.message
                    .push_call_fields(WireFormat::Gemini, &id, fields);
            }
            self.message
                .tool_calls
                .push(ToolCall::new(id, open.name, Value::Object(open.args)));
        }
    }
}

/// A `functionResponse` part for a result: `{"output": ..}` or
/// `{"error": ..}`.
pub fn result_part(result: &ToolCallResult) -> Value {
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
    json!({"functionResponse": function_response})
}

/// A conversation as `systemInstruction` and `contents`; tool results go in
/// one user turn.
pub fn contents(conversation: &[Message]) -> (Option<Value>, Vec<Value>) {
    let mut system: Vec<Value> = Vec::new();
    let mut contents: Vec<Value> = Vec::new();
    for message in conversation {
        let (role, part) = match message {
            Message::System { text } => {
                system.push(json!({"text": text}));
                continue;
            }
            Message::User { text } => ("user", vec![json!({"text": text})]),
            Message::Assistant(assistant) => ("model", model_content(assistant)),
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
pub fn from_contents(
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
                conversation.push(Message::ToolResult(ToolResultMessage {
                    tool_name: if name.is_empty() {
                        tool_name_of(&conversation, &call_id)
                    } else {
                        name
                    },
                    call_id,
                    content,
                    structured: None,
                    is_error,
                }));
            }
        }
        let text = part_texts(parts);
        if !text.is_empty() {
            conversation.push(Message::User { text });
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

#[cfg(test)]
mod tests {
    use super::*;

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

//! Google Gemini (`generateContent`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{json, Map, Value};

use super::openai::{last_call, tool_name_of};
use super::{
    arguments_object, convert, finish, schema, str_field, Export, ExportError, ParseError, Provider,
};
use crate::registry::ToolRegistry;
use crate::run::{AssistantMessage, Message, ToolResultMessage};
use crate::runtime::{ToolCall, ToolCallResult};
use crate::tool::ToolSpec;

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
    let exported = finish(
        registry
            .specs()
            .map(|spec| {
                let (schema, lints) =
                    convert(spec, Provider::Gemini, &[schema::common, schema::gemini]);
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
/// subset) and `parametersJsonSchema` are both read.
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
            let parameters = [
                "parametersJsonSchema",
                "parameters_json_schema",
                "parameters",
            ]
            .iter()
            .find_map(|key| declaration.get(*key))
            .cloned()
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

/// The model message of a response (its first candidate). Thought parts are
/// skipped; calls without an id get one made up, unique in the process.
pub fn parse_response(response: &Value) -> Result<AssistantMessage, ParseError> {
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
            message.tool_calls.push(function_call(call, &mut ids)?);
        } else if let (Some(part_text), false) =
            (part.get("text").and_then(Value::as_str), is_thought(part))
        {
            text.push_str(part_text);
        }
    }
    message.text = (!text.is_empty()).then_some(text);
    Ok(message)
}

fn is_thought(part: &Value) -> bool {
    part.get("thought")
        .and_then(Value::as_bool)
        .unwrap_or(false)
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
/// `functionCall`.
#[derive(Debug, Default)]
pub struct Stream {
    text: String,
    calls: Vec<ToolCall>,
    open: Option<OpenCall>,
    ids: GeneratedIds,
}

/// A call whose last fragment said `willContinue`.
#[derive(Debug)]
struct OpenCall {
    id: Option<String>,
    name: String,
    args: Map<String, Value>,
}

impl OpenCall {
    /// Whether a fragment naming `name` (and `id`) repeats this call
    /// rather than starting the next one: a call closes before the next
    /// starts, so only a different name or id means a new call.
    fn is_repeated_by(&self, name: &str, id: Option<&str>) -> bool {
        self.name == name && (id.is_none() || self.id.is_none() || self.id.as_deref() == id)
    }
}

impl Stream {
    /// A stream with nothing received yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one chunk.
    pub fn push(&mut self, chunk: &Value) -> Result<(), ParseError> {
        let parts = chunk
            .pointer("/candidates/0/content/parts")
            .and_then(Value::as_array);
        for part in parts.into_iter().flatten() {
            if let Some(call) = part.get("functionCall") {
                self.function_call(call)?;
            } else if let (Some(text), false) =
                (part.get("text").and_then(Value::as_str), is_thought(part))
            {
                self.text.push_str(text);
            }
        }
        Ok(())
    }

    fn function_call(&mut self, call: &Value) -> Result<(), ParseError> {
        let continues = call
            .get("willContinue")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let id = call
            .get("id")
            .and_then(Value::as_str)
            .filter(|id| !id.is_empty());
        if let Some(name) = call
            .get("name")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
        {
            match &mut self.open {
                Some(open) if open.is_repeated_by(name, id) => {
                    open.id = open.id.take().or_else(|| id.map(str::to_owned));
                }
                _ => {
                    self.close();
                    self.open = Some(OpenCall {
                        id: id.map(str::to_owned),
                        name: name.to_owned(),
                        args: Map::new(),
                    });
                }
            }
        }
        if let (Some(open), Some(args)) =
            (&mut self.open, call.get("args").and_then(Value::as_object))
        {
            open.args.extend(args.clone());
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
        Ok(())
    }

    fn close(&mut self) {
        if let Some(OpenCall { id, name, args }) = self.open.take() {
            let id = id.unwrap_or_else(|| self.ids.next());
            self.calls
                .push(ToolCall::new(id, name, Value::Object(args)));
        }
    }

    /// The assembled message.
    pub fn finish(mut self) -> AssistantMessage {
        self.close();
        AssistantMessage {
            text: (!self.text.is_empty()).then_some(self.text),
            tool_calls: self.calls,
            reasoning: Vec::new(),
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
            Message::Assistant(assistant) => {
                let mut parts: Vec<Value> = assistant
                    .text
                    .iter()
                    .map(|text| json!({"text": text}))
                    .collect();
                parts.extend(assistant.tool_calls.iter().map(|call| {
                    let mut function_call =
                        json!({"name": call.tool_name, "args": arguments_object(&call.arguments)});
                    if !call.call_id.starts_with(GENERATED_ID) {
                        function_call["id"] = Value::String(call.call_id.clone());
                    }
                    json!({"functionCall": function_call})
                }));
                ("model", parts)
            }
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

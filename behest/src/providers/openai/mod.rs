//! OpenAI's two wire formats, [`chat`] (Chat Completions, and every server
//! that speaks it) and [`responses`], with the same function names for the
//! same jobs: [`chat::tools`] declares a registry's tools,
//! [`chat::parse_tools`] reads declarations back, [`chat::parse_response`]
//! reads a whole answer and [`chat::Stream`] a streamed one,
//! [`chat::result`] formats a tool result, and [`chat::messages`] and
//! [`chat::from_messages`] map a conversation both ways. Strict mode's
//! schema pass is in `strict`.

pub mod chat;
mod chunk;
pub mod responses;
pub(crate) mod strict;

use serde_json::{json, Value};

use super::{
    convert, finish, schema, Export, ExportError, ExportOptions, Lint, ParseError, Strictness,
};
use crate::conversation::{AssistantMessage, WireFormat};
use crate::providers::str_field;
use crate::tool::{ToolCall, ToolSpec};

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

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
    /// The Responses item id, which pairs the call with reasoning.
    item_id: String,
    /// Fields a server keeps on the call and wants back with it (Gemini's
    /// `extra_content` with a thought signature).
    kept: Option<Value>,
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
        if let Some(kept) = self.kept {
            message.push_call_fields(provider, &self.id, kept);
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

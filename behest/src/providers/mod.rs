//! Provider wire formats: tool declarations, tool calls, tool results and
//! conversations for OpenAI (Chat Completions and Responses), Anthropic,
//! Gemini, Bedrock's Converse and MCP. Formats only: no HTTP.
//!
//! One folder per format ([`openai::chat`], [`openai::responses`],
//! [`anthropic`], [`gemini`], [`bedrock`], [`mcp`]), each with the same names for the
//! same jobs:
//!
//! | job | function |
//! |---|---|
//! | declare a registry's tools | `tools` |
//! | read declarations back | `parse_tools` |
//! | read a whole answer | `parse_response` |
//! | read a streamed answer | `Stream` ([`StreamAssembler`]) |
//! | format a tool result | `result` |
//! | map a conversation to the format, and back | `messages`, `from_messages` |
//!
//! One canonical schema per tool; each provider's declaration comes from
//! normalising passes over it ([`schema`]), never from code written per
//! tool. A pass that cannot express part of a schema says so with a
//! [`Lint`]; an export with an error lint fails, unless the tool may fall
//! back to non-strict mode.
//!
//! A model turn keeps its provider's reasoning state
//! ([`AssistantMessage::reasoning`](crate::AssistantMessage::reasoning)):
//! thinking blocks, reasoning items, thought signatures and
//! `reasoning_content` go back byte for byte, in place, to the format they
//! came from, and to no other.

pub mod anthropic;
pub mod bedrock;
pub mod gemini;
mod lint;
pub mod mcp;
pub mod openai;
pub mod schema;
pub mod stream;
pub mod usage;

use std::collections::HashSet;

use serde_json::Value;

pub use lint::{Lint, Severity};
pub use stream::{Pushed, StreamAssembler};

pub use crate::conversation::WireFormat;
use crate::conversation::{ContentPart, Message};
use crate::registry::ToolRegistry;
use crate::tool::ToolSpec;

impl WireFormat {
    /// Checks a tool name against this provider's rule.
    pub fn check_name(self, name: &str) -> Result<(), Lint> {
        let fits = match self {
            WireFormat::OpenAiChat
            | WireFormat::OpenAiResponses
            | WireFormat::Anthropic
            | WireFormat::Bedrock => {
                name.len() <= 64
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            }
            WireFormat::Gemini => {
                name.len() <= 128
                    && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'))
            }
            WireFormat::Mcp => {
                name.len() <= 128
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            }
        };
        if fits && !name.is_empty() {
            Ok(())
        } else {
            Err(Lint::error(
                "",
                format!("the name `{name}` does not fit {self:?}'s rule for tool names"),
            ))
        }
    }
}

/// How strictly to export OpenAI tools.
///
/// ```
/// use behest::providers::{ExportOptions, Strictness};
///
/// let options = ExportOptions::new()
///     .strict(Strictness::All)
///     .allow_non_strict("send_message");
/// assert!(options.allow_non_strict.contains("send_message"));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ExportOptions {
    /// Which tools are sent in strict mode.
    pub strict: Strictness,
    /// Tools that may be sent non-strict when their schema cannot be made
    /// strict (their lints become warnings). Without this, such a tool fails
    /// the export.
    pub allow_non_strict: HashSet<String>,
}

impl ExportOptions {
    /// The defaults: each tool strict as it asks, none allowed to fall back.
    pub fn new() -> Self {
        Self::default()
    }

    /// With this rule for which tools go out strict.
    #[must_use]
    pub fn strict(mut self, strict: Strictness) -> Self {
        self.strict = strict;
        self
    }

    /// Letting tool `name` go out non-strict when its schema cannot be
    /// made strict.
    #[must_use]
    pub fn allow_non_strict(mut self, name: impl Into<String>) -> Self {
        self.allow_non_strict.insert(name.into());
        self
    }
}

/// Which tools are exported in OpenAI strict mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Strictness {
    /// The tools that ask for it (`#[tool(strict)]`, [`Tool::strict`](crate::Tool::strict)).
    #[default]
    PerTool,
    /// Every tool.
    All,
    /// No tool.
    None,
}

/// A registry's tools in a provider's declaration format.
#[derive(Debug, Clone)]
pub struct Export {
    /// The declarations, in registration order.
    pub tools: Vec<Value>,
    /// What the passes could not express but the export survives.
    pub lints: Vec<Lint>,
}

/// An export that would not be faithful.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} tool schema problem(s):\n{}", lints.len(), lints.iter().map(|lint| format!("- {lint}")).collect::<Vec<_>>().join("\n"))]
pub struct ExportError {
    /// Every error lint, each naming its tool and path.
    pub lints: Vec<Lint>,
}

/// Exports `registry` to `provider`.
pub fn export(
    registry: &ToolRegistry,
    provider: WireFormat,
    options: &ExportOptions,
) -> Result<Export, ExportError> {
    let specs: Vec<&ToolSpec> = registry.specs().collect();
    export_specs(&specs, &|name| registry.is_strict(name), provider, options)
}

/// Exports tools given as specs to `format`, without a registry: what a
/// model client does with the tools of a [`ModelRequest`](crate::ModelRequest).
/// `is_strict` says which tools ask for strict mode (what a spec alone does
/// not say); only OpenAI's formats read it.
pub fn export_specs(
    specs: &[&ToolSpec],
    is_strict: &dyn Fn(&str) -> bool,
    format: WireFormat,
    options: &ExportOptions,
) -> Result<Export, ExportError> {
    let problems = declarable(specs);
    if !problems.is_empty() {
        return Err(ExportError { lints: problems });
    }
    match format {
        WireFormat::OpenAiChat => openai::chat::declare(specs, is_strict, options),
        WireFormat::OpenAiResponses => openai::responses::declare(specs, is_strict, options),
        WireFormat::Anthropic => anthropic::declare(specs, is_strict, options),
        WireFormat::Gemini => gemini::declare(specs),
        WireFormat::Bedrock => bedrock::declare(specs, is_strict, options),
        WireFormat::Mcp => mcp::declare(specs),
    }
}

/// What a registry would have refused of specs given without one: two
/// tools of one name, or parameters whose root is not an object schema.
fn declarable(specs: &[&ToolSpec]) -> Vec<Lint> {
    let mut lints = Vec::new();
    for (index, spec) in specs.iter().enumerate() {
        let mut lint = |reason: String| {
            let mut lint = Lint::error("", reason);
            lint.tool = Some(spec.name.clone());
            lints.push(lint);
        };
        if specs[..index]
            .iter()
            .any(|earlier| earlier.name == spec.name)
        {
            lint(format!("a second tool is named `{}`", spec.name));
        }
        if spec.parameters.get("type").and_then(Value::as_str) != Some("object") {
            lint(
                "the input schema must describe an object (`\"type\": \"object\"` at the root)"
                    .to_owned(),
            );
        }
    }
    lints
}

/// Asserts that every tool of `registry` exports cleanly to each of
/// `providers` with default options: one line for a user's test suite.
///
/// # Panics
///
/// When an export fails, listing every lint with its tool and path.
#[track_caller]
pub fn assert_exports_cleanly(registry: &ToolRegistry, providers: &[WireFormat]) {
    let mut problems = Vec::new();
    for &provider in providers {
        if let Err(error) = export(registry, provider, &ExportOptions::default()) {
            problems.extend(
                error
                    .lints
                    .iter()
                    .map(|lint| format!("{provider:?}: {lint}")),
            );
        }
    }
    assert!(
        problems.is_empty(),
        "the tools do not export cleanly:\n{}",
        problems.join("\n")
    );
}

/// Runs the passes for one tool: the canonical schema, then `passes`;
/// returns the schema, or the error lints tagged with the tool's name.
pub(crate) fn convert(
    spec: &ToolSpec,
    provider: WireFormat,
    passes: &[fn(&mut Value, &mut Vec<Lint>)],
) -> (Value, Vec<Lint>) {
    let mut schema = spec.parameters.clone();
    // Every pass reads 2020-12; imported tools may declare an older draft.
    schema::to_2020_12(&mut schema);
    let mut lints = Vec::new();
    if let Err(lint) = provider.check_name(&spec.name) {
        lints.push(lint);
    }
    for pass in passes {
        pass(&mut schema, &mut lints);
    }
    for lint in &mut lints {
        lint.tool = Some(spec.name.clone());
    }
    (schema, lints)
}

/// Collects declarations, failing on any error lint.
pub(crate) fn finish(declarations: Vec<(Value, Vec<Lint>)>) -> Result<Export, ExportError> {
    let mut tools = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Vec::new();
    for (declaration, lints) in declarations {
        tools.push(declaration);
        for lint in lints {
            if lint.is_error() {
                errors.push(lint);
            } else {
                warnings.push(lint);
            }
        }
    }
    if errors.is_empty() {
        Ok(Export {
            tools,
            lints: warnings,
        })
    } else {
        Err(ExportError { lints: errors })
    }
}

/// Why a provider payload could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ParseError {
    /// What was missing or malformed, with where.
    pub message: String,
}

impl ParseError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// A string field, or a parse error naming it.
pub(crate) fn str_field<'v>(
    value: &'v Value,
    key: &str,
    context: &str,
) -> Result<&'v str, ParseError> {
    value
        .get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| ParseError::new(format!("{context}: `{key}` is missing or not a string")))
}

/// A user turn read from a format's parts: plain text when every part is
/// text (joined), the parts otherwise.
pub(crate) fn user_message(parts: Vec<ContentPart>) -> Message {
    if parts
        .iter()
        .all(|part| matches!(part, ContentPart::Text { .. }))
    {
        let text = parts
            .into_iter()
            .filter_map(|part| match part {
                ContentPart::Text { text } => Some(text),
                _ => None,
            })
            .collect();
        Message::User { text }
    } else {
        Message::UserParts { parts }
    }
}

/// A result's content as a format takes it: its text, or, with images or
/// documents, a list of a text part (`{"type": text_type, "text": ..}`)
/// and those as `part` writes them.
pub(crate) fn result_content(
    result: &crate::conversation::ToolResultMessage,
    text_type: &str,
    part: fn(&ContentPart) -> Value,
) -> Value {
    if result.images.is_empty() && result.documents.is_empty() {
        return Value::String(result.content.clone());
    }
    let text = serde_json::json!({"type": text_type, "text": result.content});
    Value::Array(
        std::iter::once(text)
            .chain(result_parts(result).map(|media| part(&media)))
            .collect(),
    )
}

/// A result's images, then its documents, as content parts.
pub(crate) fn result_parts(
    result: &crate::conversation::ToolResultMessage,
) -> impl Iterator<Item = ContentPart> + '_ {
    let images = result.images.iter().map(|image| ContentPart::Image {
        source: image.clone(),
    });
    let documents = result
        .documents
        .iter()
        .map(|document| ContentPart::Document {
            source: document.clone(),
        });
    images.chain(documents)
}

/// The images and the documents of a result's content list, read with a
/// format's part reader.
pub(crate) fn result_media(
    content: Option<&Value>,
    read_part: fn(&Value) -> Option<ContentPart>,
) -> (Vec<crate::tool::MediaSource>, Vec<crate::tool::MediaSource>) {
    let mut images = Vec::new();
    let mut documents = Vec::new();
    let parts = content.and_then(Value::as_array).into_iter().flatten();
    for part in parts.filter_map(read_part) {
        match part {
            ContentPart::Image { source } => images.push(source),
            // Providers take PDFs in a tool's result; a reader may call
            // other inline data a document (Gemini's audio).
            ContentPart::Document { source } if source.is_pdf() => documents.push(source),
            _ => {}
        }
    }
    (images, documents)
}

/// The text of a content field that is a string or a list of text parts.
pub(crate) fn content_text(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// Arguments as JSON text, as OpenAI sends them.
pub(crate) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        // A call without arguments goes back as an empty object: Ollama
        // refuses `""` when a turn is sent again.
        Value::String(text) if text.trim().is_empty() => "{}".to_owned(),
        Value::Null => "{}".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Arguments as an object, as Anthropic, Gemini and MCP send them. Text
/// that does not decode to an object is kept under nothing: `{}`.
pub(crate) fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => value,
            _ => Value::Object(serde_json::Map::new()),
        },
        Value::Null => Value::Object(serde_json::Map::new()),
        other => other.clone(),
    }
}

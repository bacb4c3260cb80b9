//! Anthropic Messages over HTTP: [`Messages`].

use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{json, Value};

use super::client::{Client, Format, Sealed};
use super::http;
use super::tools::ExportCache;
use super::{Config, ToolChoice};
use crate::conversation::AssistantMessage;
use crate::providers::{anthropic, ParseError, WireFormat};
use crate::run::{ModelError, ModelRequest};

const BASE_URL: &str = "https://api.anthropic.com/v1";
const KEY_VARIABLES: &[&str] = &["ANTHROPIC_API_KEY"];
const VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`; this is used when none is set.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// An Anthropic Messages model.
///
/// ```no_run
/// use behest::models::anthropic::Messages;
///
/// // The key comes from `ANTHROPIC_API_KEY` unless given.
/// let claude = Messages::new("claude-sonnet-4-5").max_tokens(2048);
/// ```
pub type Messages = Client<MessagesApi>;

/// The Messages wire format, as [`Messages`] speaks it.
#[derive(Debug, Clone, Copy)]
pub enum MessagesApi {}

impl Sealed for MessagesApi {}

impl Format for MessagesApi {
    const SYSTEM: &'static str = "anthropic";
    const BASE_URL: &'static str = BASE_URL;
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    type Stream = anthropic::Stream;

    fn path(_: &Config) -> String {
        "messages".to_owned()
    }

    fn headers(config: &Config) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(VERSION));
        if let Some(key) = config.key() {
            headers.insert("x-api-key", http::secret_header(key.expose())?);
        }
        Ok(headers)
    }

    /// The request body of a turn. Thinking blocks of earlier turns go back
    /// as they came (extended thinking with tools needs them).
    fn body(
        config: &Config,
        tools_cache: &ExportCache,
        request: &ModelRequest<'_>,
    ) -> Result<Value, ModelError> {
        let (conversation, tools) = (request.conversation, request.tools);
        let (system, messages) = anthropic::messages(conversation);
        let mut body = json!({
            "model": config.model,
            "max_tokens": config.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
            "messages": messages,
        });
        let object = body.as_object_mut().expect("an object");
        if let Some(system) = system {
            object.insert("system".into(), Value::String(system));
        }
        if !tools.is_empty() {
            let declarations = tools_cache.declarations(
                tools,
                request.strict,
                WireFormat::Anthropic,
                &config.export,
            )?;
            object.insert("tools".into(), Value::Array(declarations.to_vec()));
            let mut choice = match &config.tool_choice {
                ToolChoice::Auto => json!({"type": "auto"}),
                ToolChoice::None => json!({"type": "none"}),
                ToolChoice::Required => json!({"type": "any"}),
                ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
            };
            if config.parallel_tool_calls == Some(false) && choice["type"] != "none" {
                choice["disable_parallel_tool_use"] = Value::Bool(true);
            }
            object.insert("tool_choice".into(), choice);
        }
        if let Some(temperature) = config.temperature {
            object.insert("temperature".into(), json!(temperature));
        }
        if config.stream {
            object.insert("stream".into(), Value::Bool(true));
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        anthropic::parse_response(response)
    }
}

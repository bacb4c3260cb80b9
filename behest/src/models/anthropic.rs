//! Anthropic Messages over HTTP: [`Messages`].

use serde_json::{json, Value};

use super::client::{Client, Format, KeyHeader, NativeOutput, Sealed, Turn};
use super::tools::answer_schema;
use super::{Config, ToolChoice};
use crate::conversation::AssistantMessage;
use crate::model::ModelError;
use crate::providers::{anthropic, ParseError, WireFormat};

const BASE_URL: &str = "https://api.anthropic.com/v1";
const KEY_VARIABLES: &[&str] = &["ANTHROPIC_API_KEY"];
const VERSION: &str = "2023-06-01";
/// Anthropic requires `max_tokens`: without one set, the model's own
/// output limit, so that an answer is never cut short of what the model
/// can write. By name, as Anthropic's model table gives them; an unknown
/// model gets the smallest limit of the current models' families.
/// The default cap of an answer read whole (not streamed).
const WHOLE_ANSWER_MAX_TOKENS: u32 = 8_192;

fn default_max_tokens(model: &str) -> u32 {
    const LIMITS: [(&str, u32); 9] = [
        ("claude-opus-4-5", 64_000),
        ("claude-opus-4", 32_000),
        ("claude-sonnet-4", 64_000),
        ("claude-haiku-4", 64_000),
        ("claude-3-7-sonnet", 64_000),
        ("claude-3-5-sonnet", 8_192),
        ("claude-3-5-haiku", 8_192),
        ("claude-3-opus", 4_096),
        ("claude-3-haiku", 4_096),
    ];
    LIMITS
        .iter()
        .find(|(prefix, _)| model.starts_with(prefix))
        .map_or(4_096, |(_, limit)| *limit)
}

/// Marks the end of the tools, the system prompt and the conversation as
/// cache breakpoints (`cache_control: {"type": "ephemeral"}`): the next turn
/// reads all three from the cache. Anthropic allows four breakpoints.
fn mark_cache_breakpoints(body: &mut serde_json::Map<String, Value>) {
    let breakpoint = || json!({"type": "ephemeral"});
    if let Some(last) = body
        .get_mut("tools")
        .and_then(Value::as_array_mut)
        .and_then(|tools| tools.last_mut())
    {
        last["cache_control"] = breakpoint();
    }
    if let Some(Value::String(system)) = body.get("system") {
        let block = json!([{"type": "text", "text": system, "cache_control": breakpoint()}]);
        body.insert("system".into(), block);
    }
    let last = body
        .get_mut("messages")
        .and_then(Value::as_array_mut)
        .and_then(|messages| messages.last_mut());
    if let Some(message) = last {
        match &mut message["content"] {
            Value::String(text) => {
                let text = std::mem::take(text);
                message["content"] =
                    json!([{"type": "text", "text": text, "cache_control": breakpoint()}]);
            }
            Value::Array(blocks) => {
                // Thinking blocks take no breakpoint.
                let last = blocks.iter_mut().rev().find(|block| {
                    !matches!(
                        block["type"].as_str(),
                        Some("thinking" | "redacted_thinking")
                    )
                });
                if let Some(block) = last {
                    block["cache_control"] = breakpoint();
                }
            }
            _ => {}
        }
    }
}

impl Client<MessagesApi> {
    /// Lets Anthropic's tool search (`tool_search_tool_bm25`) find the
    /// tools named in `deferred` (a [`ToolSearch`](crate::run::ToolSearch)'s
    /// `deferred_names()`, say): they are declared with `defer_loading`,
    /// and the model sees only those the search loads. It takes the place
    /// of the run's own search (leave out `search.tool()` and
    /// `search.prepare()`); the search's blocks go back on the next turn as
    /// they came.
    #[must_use]
    pub fn tool_search<S: AsRef<str>>(self, deferred: impl IntoIterator<Item = S>) -> Self {
        self.deferring(deferred)
    }

    /// Whether requests mark the tools, the system prompt and the
    /// conversation so far as cacheable (`cache_control`), so that the
    /// next turn reads them from Anthropic's prompt cache: cheaper and
    /// faster for long prompts. Default off.
    #[must_use]
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.config.prompt_caching = on;
        self
    }
}

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
impl NativeOutput for MessagesApi {}

impl MessagesApi {
    /// A turn's body, typed runs answering in structured outputs and tools
    /// strict when `native` (the API the body goes to takes them).
    pub(crate) fn body_with(turn: &Turn<'_>, native: bool) -> Result<Value, ModelError> {
        let (config, request) = (turn.config, turn.request);
        let (system, messages) = anthropic::messages(request.conversation);
        let mut body = json!({
            "model": config.model,
            "max_tokens": turn.settings.max_tokens.unwrap_or_else(|| {
                // Whole, the answer must come within the timeout: a smaller
                // default than a stream, which may run as long as it needs.
                let limit = default_max_tokens(&config.model);
                if config.stream { limit } else { limit.min(WHOLE_ANSWER_MAX_TOKENS) }
            }),
            "messages": messages,
        });
        let object = body.as_object_mut().expect("an object");
        if let Some(system) = system {
            object.insert("system".into(), Value::String(system));
        }
        // Strict tools only for the models that take them (others refuse
        // the request); elsewhere the same tools, not strict.
        let declarations = if native {
            turn.declarations(WireFormat::Anthropic)?
        } else {
            turn.declarations_not_strict(WireFormat::Anthropic)?
        };
        if let Some(mut declarations) = declarations {
            // Anthropic's tool search (BM25) loads the deferred tools it
            // finds.
            if super::tools::defer(&mut declarations, config.deferred.as_deref()) {
                declarations.push(
                    json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}),
                );
            }
            object.insert("tools".into(), Value::Array(declarations));
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
        let settings = &turn.settings;
        if let Some(temperature) = settings.temperature {
            object.insert("temperature".into(), json!(temperature));
        }
        if let Some(top_p) = settings.top_p {
            object.insert("top_p".into(), json!(top_p));
        }
        if !settings.stop.is_empty() {
            object.insert("stop_sequences".into(), json!(settings.stop));
        }
        if let Some(budget) = settings.thinking_budget {
            object.insert(
                "thinking".into(),
                json!({"type": "enabled", "budget_tokens": budget}),
            );
        }
        if config.stream {
            object.insert("stream".into(), Value::Bool(true));
        }
        if let (Some(answer), true) = (request.output, native) {
            // Structured outputs take only a strict schema.
            let mut export = config.export.clone();
            export.strict = crate::providers::Strictness::All;
            let (schema, strict) = answer_schema(answer, WireFormat::Anthropic, &export)?;
            if !strict {
                return Err(ModelError::new(format!(
                    "the answer's type `{}` cannot be made strict for Anthropic's structured outputs \
                     (a recursive type, or a map open to any key): build the client with \
                     `.structured_output(false)` to have the answer through the `final_answer` tool",
                    answer.name
                )));
            }
            object.insert(
                "output_config".into(),
                json!({"format": {"type": "json_schema", "schema": schema}}),
            );
        }
        if config.prompt_caching {
            mark_cache_breakpoints(object);
        }
        Ok(body)
    }
}

impl Format for MessagesApi {
    const SYSTEM: &'static str = "anthropic";
    const BASE_URL: &'static str = BASE_URL;
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    const BASE_URL_VARIABLES: &'static [&'static str] = &["ANTHROPIC_BASE_URL"];
    const KEY_HEADER: KeyHeader = KeyHeader::Named("x-api-key");
    const HEADERS: &'static [(&'static str, &'static str)] = &[("anthropic-version", VERSION)];
    type Stream = anthropic::Stream;
    const CACHE_APART: bool = true;

    fn path(_: &Config) -> String {
        "messages".to_owned()
    }

    /// The request body of a turn. Thinking blocks of earlier turns go back
    /// as they came (extended thinking with tools needs them).
    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        Self::body_with(turn, Self::answers_natively(turn.config))
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        anthropic::parse_response(response)
    }

    /// Structured outputs (`output_config.format`) for typed runs: unless
    /// set, from Anthropic's own API for the models that take them;
    /// elsewhere (a proxy, another cloud) the `final_answer` tool.
    fn answers_natively(config: &Config) -> bool {
        config.structured_output.unwrap_or_else(|| {
            config.is_own_api() && super::claude::structured_model(&config.model)
        })
    }
}

//! OpenAI over HTTP: [`Chat`] (Chat Completions, and every server that
//! speaks it: Ollama, vLLM, llama.cpp's server, Groq, OpenRouter, Azure-style
//! deployments through [`base_url`](Chat::base_url) and headers) and
//! [`Responses`].

use serde_json::{json, Map, Value};

use super::client::{Client, Format, KeyHeader, NativeOutput, Sealed, Turn};
use super::tools::answer_schema;
use super::{Config, ToolChoice};
use crate::conversation::AssistantMessage;
use crate::model::{ModelError, ModelSettings};
use crate::providers::{openai, ParseError, WireFormat};

const BASE_URL: &str = "https://api.openai.com/v1";
const KEY_VARIABLES: &[&str] = &["OPENAI_API_KEY"];

/// An OpenAI Chat Completions model, or any OpenAI-compatible server's.
///
/// A typed run ([`Agent::with_output`](crate::Agent::with_output)) asks
/// OpenAI for its answer with a strict `response_format`; another server
/// gets the `final_answer` tool unless [`structured_output(true)`](Client::structured_output)
/// says it combines a response schema with tools.
///
/// ```no_run
/// use behest::models::openai::Chat;
///
/// // The key comes from `OPENAI_API_KEY` unless given.
/// let gpt = Chat::new("gpt-4.1-mini").temperature(0.2);
/// // A local Ollama: no key, its own base URL.
/// let local = Chat::new("llama3.2").base_url("http://127.0.0.1:11434/v1");
/// ```
pub type Chat = Client<ChatApi>;

/// An OpenAI Responses model. A typed run asks for its answer with a
/// strict `text.format`.
///
/// ```no_run
/// use behest::models::openai::Responses;
///
/// // The key comes from `OPENAI_API_KEY` unless given.
/// let gpt = Responses::new("gpt-5-mini");
/// ```
pub type Responses = Client<ResponsesApi>;

/// The Chat Completions wire format, as [`Chat`] speaks it.
#[derive(Debug, Clone, Copy)]
pub enum ChatApi {}

/// The Responses wire format, as [`Responses`] speaks it.
#[derive(Debug, Clone, Copy)]
pub enum ResponsesApi {}

impl Sealed for ChatApi {}
impl NativeOutput for ChatApi {}

impl Format for ChatApi {
    const SYSTEM: &'static str = "openai";
    const BASE_URL: &'static str = BASE_URL;
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    const BASE_URL_VARIABLES: &'static [&'static str] = &["OPENAI_BASE_URL"];
    const KEY_HEADER: KeyHeader = KeyHeader::Bearer;
    type Stream = openai::chat::Stream;

    fn path(_: &Config) -> String {
        "chat/completions".to_owned()
    }

    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        let (config, request) = (turn.config, turn.request);
        let mut body = json!({
            "model": config.model,
            "messages": openai::chat::messages(request.conversation),
        });
        let object = body.as_object_mut().expect("an object");
        if let Some(declarations) = turn.declarations(WireFormat::OpenAiChat)? {
            object.insert("tools".into(), Value::Array(declarations));
            object.insert("tool_choice".into(), chat_tool_choice(&config.tool_choice));
            if let Some(parallel) = config.parallel_tool_calls {
                object.insert("parallel_tool_calls".into(), Value::Bool(parallel));
            }
        }
        if let Some(answer) = request.output {
            let (schema, strict) = answer_schema(answer, WireFormat::OpenAiChat, &config.export)?;
            object.insert(
                "response_format".into(),
                json!({"type": "json_schema", "json_schema": {
                    "name": answer.name,
                    "description": answer.description,
                    "schema": schema,
                    "strict": strict,
                }}),
            );
        }
        // OpenAI's own API reads `max_completion_tokens` (its reasoning
        // models refuse `max_tokens`); compatible servers (Ollama, vLLM,
        // llama.cpp) read `max_tokens` and ignore the other.
        let openai = config.is_own_api() || config.is_env_named() || reasons(&config.model);
        let max_tokens_field = if openai {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        sampling(object, &turn.settings, max_tokens_field);
        let settings = &turn.settings;
        if !settings.stop.is_empty() {
            object.insert("stop".into(), json!(settings.stop));
        }
        if let Some(seed) = settings.seed {
            object.insert("seed".into(), json!(seed));
        }
        if let Some(effort) = settings.reasoning_effort {
            object.insert("reasoning_effort".into(), json!(effort.as_str()));
        }
        if config.stream {
            object.insert("stream".into(), Value::Bool(true));
            object.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        openai::chat::parse_response(response)
    }

    /// A `response_format` for typed runs: unless set, only from OpenAI
    /// itself, since compatible servers differ in whether they combine a
    /// strict schema with tools.
    fn answers_natively(config: &Config) -> bool {
        config
            .structured_output
            .unwrap_or_else(|| config.is_own_api())
    }
}

impl Sealed for ResponsesApi {}
impl NativeOutput for ResponsesApi {}

impl Format for ResponsesApi {
    const SYSTEM: &'static str = "openai";
    const BASE_URL: &'static str = BASE_URL;
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    const BASE_URL_VARIABLES: &'static [&'static str] = &["OPENAI_BASE_URL"];
    const KEY_HEADER: KeyHeader = KeyHeader::Bearer;
    type Stream = openai::responses::Stream;

    fn path(_: &Config) -> String {
        "responses".to_owned()
    }

    /// A reasoning model's reasoning items come back with their
    /// `encrypted_content` (asked for in `include`) so they can be sent
    /// back; the request is not stored (`store: false`).
    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        let (config, request) = (turn.config, turn.request);
        let mut body = json!({
            "model": config.model,
            "input": openai::responses::unstored_messages(request.conversation),
            "store": false,
        });
        let object = body.as_object_mut().expect("an object");
        // Models that do not reason refuse the include (400 "Encrypted
        // content is not supported with this model").
        if config
            .encrypted_reasoning
            .unwrap_or_else(|| reasons(&config.model))
        {
            object.insert("include".into(), json!(["reasoning.encrypted_content"]));
        }
        if let Some(mut declarations) = turn.declarations(WireFormat::OpenAiResponses)? {
            // The hosted tool search loads the deferred tools it finds.
            if super::tools::defer(&mut declarations, config.deferred.as_deref()) {
                declarations.push(json!({"type": "tool_search"}));
            }
            object.insert("tools".into(), Value::Array(declarations));
            object.insert(
                "tool_choice".into(),
                responses_tool_choice(&config.tool_choice),
            );
            if let Some(parallel) = config.parallel_tool_calls {
                object.insert("parallel_tool_calls".into(), Value::Bool(parallel));
            }
        }
        if let Some(answer) = request.output {
            let (schema, strict) =
                answer_schema(answer, WireFormat::OpenAiResponses, &config.export)?;
            object.insert(
                "text".into(),
                json!({"format": {
                    "type": "json_schema",
                    "name": answer.name,
                    "description": answer.description,
                    "schema": schema,
                    "strict": strict,
                }}),
            );
        }
        sampling(object, &turn.settings, "max_output_tokens");
        if let Some(effort) = turn.settings.reasoning_effort {
            object.insert("reasoning".into(), json!({"effort": effort.as_str()}));
        }
        if config.stream {
            object.insert("stream".into(), Value::Bool(true));
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        openai::responses::parse_response(response)
    }

    /// A `text.format` for typed runs: unless set, yes.
    fn answers_natively(config: &Config) -> bool {
        config.structured_output.unwrap_or(true)
    }
}

/// Whether an OpenAI model reasons, by its name: the o-series and GPT-5
/// (not its chat variants), whose reasoning items can come back encrypted.
/// Override with [`Client::encrypted_reasoning`].
fn reasons(model: &str) -> bool {
    let model = model.to_ascii_lowercase();
    let model = model.rsplit('/').next().unwrap_or(&model);
    // A fine-tune is named after its base: `ft:o4-mini-2025-04-16:org::id`.
    let model = model.strip_prefix("ft:").unwrap_or(model);
    let o_series = model.starts_with('o') && model[1..].starts_with(|c: char| c.is_ascii_digit());
    let gpt5 = model.starts_with("gpt-5") && !model.contains("-chat");
    o_series || gpt5 || model.starts_with("codex-")
}

/// How long OpenAI keeps a prompt's cached prefix
/// ([`prompt_cache_retention`](Client::prompt_cache_retention)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CacheRetention {
    /// In memory, for minutes of inactivity (up to an hour): OpenAI's
    /// default.
    InMemory,
    /// Up to 24 hours, on the models that offer it.
    Day,
}

/// The two OpenAI wire formats, for the options they share.
pub trait OpenAiApi: Format {}
impl OpenAiApi for ChatApi {}
impl OpenAiApi for ResponsesApi {}

impl<F: OpenAiApi> Client<F> {
    /// Names the prompts that share a prefix (`prompt_cache_key`), so that
    /// OpenAI routes them to the same cache: a conversation's id, a
    /// tenant's. Cached input tokens come back in the turn's usage
    /// (`Usage::cached_tokens`) and are priced apart.
    #[must_use]
    pub fn prompt_cache_key(self, key: impl Into<String>) -> Self {
        self.body_field("prompt_cache_key", json!(key.into()))
    }

    /// How long the cached prefix is kept (`prompt_cache_retention`).
    #[must_use]
    pub fn prompt_cache_retention(self, retention: CacheRetention) -> Self {
        let value = match retention {
            CacheRetention::InMemory => "in_memory",
            CacheRetention::Day => "24h",
        };
        self.body_field("prompt_cache_retention", json!(value))
    }
}

impl Client<ResponsesApi> {
    /// Lets OpenAI's hosted tool search find the tools named in
    /// `deferred` (a [`ToolSearch`](crate::run::ToolSearch)'s
    /// `deferred_names()`, say): they are declared with `defer_loading`,
    /// beside a `tool_search` tool, and the model sees only those the
    /// search loads. It takes the place of the run's own search (leave out
    /// `search.tool()` and `search.prepare()`); the search's call and the
    /// tools it loaded go back on the next turn as they came.
    #[must_use]
    pub fn tool_search<S: AsRef<str>>(self, deferred: impl IntoIterator<Item = S>) -> Self {
        self.deferring(deferred)
    }

    /// Whether requests ask for reasoning items with their
    /// `encrypted_content` (`include: ["reasoning.encrypted_content"]`), so
    /// that reasoning can go back on the next turn without `store`. Unset,
    /// only for models that reason by their name (`o3`, `o4-mini`, `gpt-5`,
    /// not `gpt-4.1` or `gpt-5-chat-latest`, which refuse it).
    #[must_use]
    pub fn encrypted_reasoning(mut self, include: bool) -> Self {
        self.config.encrypted_reasoning = Some(include);
        self
    }
}

fn sampling(object: &mut Map<String, Value>, settings: &ModelSettings, max_tokens_field: &str) {
    if let Some(temperature) = settings.temperature {
        object.insert("temperature".into(), json!(temperature));
    }
    if let Some(top_p) = settings.top_p {
        object.insert("top_p".into(), json!(top_p));
    }
    if let Some(tokens) = settings.max_tokens {
        object.insert(max_tokens_field.into(), json!(tokens));
    }
}

fn chat_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::None => json!("none"),
        ToolChoice::Required => json!("required"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

fn responses_tool_choice(choice: &ToolChoice) -> Value {
    match choice {
        ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        other => chat_tool_choice(other),
    }
}

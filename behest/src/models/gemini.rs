//! Gemini over HTTP (the Gemini API's `generateContent`): [`Gemini`].

use serde_json::{json, Value};

use super::client::{Client, Format, KeyHeader, NativeOutput, Sealed, Turn};
use super::tools::answer_schema;
use super::{Config, ToolChoice};
use crate::conversation::AssistantMessage;
use crate::model::ModelError;
use crate::providers::{gemini, ParseError, WireFormat};

const BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
const KEY_VARIABLES: &[&str] = &["GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// A Gemini model.
///
/// A typed run ([`Agent::with_output`](crate::Agent::with_output)) asks
/// Gemini 3 and later for its answer with a `responseSchema`; earlier models
/// refuse one beside function declarations, and get the `final_answer` tool
/// (override with [`structured_output`](Client::structured_output)).
///
/// ```no_run
/// use behest::models::gemini::Gemini;
///
/// // The key comes from `GEMINI_API_KEY` or `GOOGLE_API_KEY` unless given.
/// let gemini = Gemini::new("gemini-2.5-flash");
/// ```
pub type Gemini = Client<GeminiApi>;

/// The Gemini API's wire format, as [`Gemini`] speaks it.
#[derive(Debug, Clone, Copy)]
pub enum GeminiApi {}

impl Sealed for GeminiApi {}
impl NativeOutput for GeminiApi {}

impl Format for GeminiApi {
    const SYSTEM: &'static str = "gcp.gemini";
    const BASE_URL: &'static str = BASE_URL;
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    const BASE_URL_VARIABLES: &'static [&'static str] = &["GOOGLE_GEMINI_BASE_URL"];
    const KEY_HEADER: KeyHeader = KeyHeader::Named("x-goog-api-key");
    type Stream = gemini::Stream;

    fn path(config: &Config) -> String {
        let model = model_name(config);
        if config.stream {
            format!("models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("models/{model}:generateContent")
        }
    }

    /// The request body of a turn. Thought signatures of earlier turns go
    /// back on the parts they came on.
    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        let (config, request) = (turn.config, turn.request);
        let (system, contents) = gemini::messages(request.conversation);
        let mut body = json!({ "contents": contents });
        let object = body.as_object_mut().expect("an object");
        if let Some(system) = system {
            object.insert("systemInstruction".into(), system);
        }
        let declarations = turn.declarations(WireFormat::Gemini)?;
        if let Some(declarations) = declarations {
            object.insert("tools".into(), Value::Array(declarations));
            let calling = match &config.tool_choice {
                ToolChoice::Auto => json!({"mode": "AUTO"}),
                ToolChoice::None => json!({"mode": "NONE"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
            };
            object.insert(
                "toolConfig".into(),
                json!({"functionCallingConfig": calling}),
            );
        }
        let mut generation = serde_json::Map::new();
        let settings = &turn.settings;
        if let Some(temperature) = settings.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(top_p) = settings.top_p {
            generation.insert("topP".into(), json!(top_p));
        }
        if let Some(tokens) = settings.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(tokens));
        }
        if !settings.stop.is_empty() {
            generation.insert("stopSequences".into(), json!(settings.stop));
        }
        if let Some(seed) = settings.seed {
            // Gemini's seed is an int32: a wider one is folded into it.
            let seed = i32::try_from(seed).unwrap_or((seed % (1 << 31)) as i32);
            generation.insert("seed".into(), json!(seed));
        }
        if let Some(budget) = settings.thinking_budget {
            generation.insert("thinkingConfig".into(), json!({"thinkingBudget": budget}));
        }
        if let Some(answer) = request.output {
            let (schema, _) = answer_schema(answer, WireFormat::Gemini, &config.export)?;
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseSchema".into(), schema);
        }
        if !generation.is_empty() {
            object.insert("generationConfig".into(), Value::Object(generation));
        }
        if let Some(cache) = &config.cached {
            use_cache(object, cache, request.conversation);
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        gemini::parse_response(response)
    }

    /// Whether typed runs get a `responseSchema`: unless set, for Gemini 3
    /// and later, the first to combine it with function calling. A name
    /// without a version (`gemini-flash-latest`) may mean an older model:
    /// it gets the `final_answer` tool, which every version takes.
    fn answers_natively(config: &Config) -> bool {
        config.structured_output.unwrap_or_else(|| {
            let version = model_name(config)
                .strip_prefix("gemini-")
                .map(|rest| rest.split(['-', '.']).next().unwrap_or_default())
                .and_then(|major| major.parse::<u32>().ok());
            version.is_some_and(|major| major >= 3)
        })
    }
}

/// Uses `cache` in a request written whole, when it holds what the request
/// would send: the conversation's first messages, the same tools and tool
/// config, and no instruction of its own after them (Gemini refuses
/// `systemInstruction`, `tools` and `toolConfig` beside a cache). The
/// request then sends the rest of the conversation and the cache's name;
/// otherwise it goes whole, without the cache.
fn use_cache(
    body: &mut serde_json::Map<String, Value>,
    cache: &crate::models::CachedPrefix,
    conversation: &[crate::Message],
) {
    let fits = conversation.starts_with(&cache.messages)
        && !conversation[cache.messages.len()..]
            .iter()
            .any(|message| matches!(message, crate::Message::System { .. }))
        && body.get("tools") == cache.tools.as_ref()
        && body.get("toolConfig") == cache.tool_config.as_ref();
    if !fits {
        tracing::warn!(cache = %cache.name, "the request does not begin with what the cache holds, or offers other tools; sent whole");
        return;
    }
    let (_, rest) = gemini::messages(&conversation[cache.messages.len()..]);
    body.insert("contents".into(), Value::Array(rest));
    for held in ["systemInstruction", "tools", "toolConfig"] {
        body.remove(held);
    }
    body.insert("cachedContent".into(), json!(cache.name));
}

/// An explicit context cache of Gemini (`cachedContents`): a
/// conversation's first messages (its system instruction with them) and
/// perhaps its tools, kept by Gemini for a while and billed at the cached
/// rate each time a request uses them.
///
/// ```no_run
/// # async fn demo(manual: String) -> Result<(), behest::ModelError> {
/// use std::time::Duration;
/// use behest::models::gemini::Gemini;
/// use behest::Message;
///
/// let gemini = Gemini::new("gemini-2.5-flash");
/// let prefix = [Message::system("Answer from this manual."), Message::user(manual)];
/// let cache = gemini.create_cache(&prefix, &[], Duration::from_secs(600)).await?;
/// // Every request that begins with the prefix sends only what follows it.
/// let cached = gemini.clone().cached_content(&cache);
/// # let _ = cached;
/// gemini.delete_cache(&cache).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct GeminiCache {
    /// Its name (`cachedContents/…`; on Vertex AI,
    /// `projects/…/locations/…/cachedContents/…`).
    pub name: String,
    /// When Gemini drops it, as Gemini says (RFC 3339).
    pub expire_time: Option<String>,
    /// The tokens it holds, as Gemini counted them.
    pub tokens: Option<u64>,
    prefix: crate::models::CachedPrefix,
}

/// A format that speaks Gemini and keeps Gemini's explicit caches: Gemini's
/// own API ([`GeminiApi`]) and Vertex AI's
/// ([`VertexGeminiApi`](crate::models::vertex::VertexGeminiApi)), whose
/// caches live in a project's location.
pub trait GeminiCaches: Format {
    /// The path of the cache collection, after the base URL.
    #[doc(hidden)]
    fn cache_collection(config: &Config) -> Result<String, ModelError>;

    /// The model a cache is made for, as the collection names it.
    #[doc(hidden)]
    fn cache_model(config: &Config) -> String;
}

impl GeminiCaches for GeminiApi {
    fn cache_collection(_: &Config) -> Result<String, ModelError> {
        Ok("cachedContents".to_owned())
    }

    fn cache_model(config: &Config) -> String {
        format!("models/{}", model_name(config))
    }
}

impl<F: GeminiCaches> Client<F> {
    /// Creates a cache of `conversation` (its system instruction with it)
    /// and, when given, the declarations of `tools`, kept for `ttl`.
    /// Gemini caches a prompt of at least its model's least (1 024 or
    /// 4 096 tokens, by model); a smaller one is refused with its error.
    pub async fn create_cache(
        &self,
        conversation: &[crate::Message],
        tools: &[crate::ToolSpec],
        ttl: std::time::Duration,
    ) -> Result<GeminiCache, ModelError> {
        let request = crate::model::ModelRequest::new(conversation, tools);
        // Written as a request without a cache would be: the cache holds
        // what such a request sends.
        let mut plain = self.clone();
        plain.config.cached = None;
        let mut written = plain.request_body(&request)?;
        let body = written.as_object_mut().expect("an object");
        let mut cache = serde_json::Map::new();
        cache.insert("model".into(), json!(F::cache_model(&self.config)));
        for field in ["contents", "systemInstruction", "tools", "toolConfig"] {
            if let Some(value) = body.remove(field) {
                cache.insert(field.into(), value);
            }
        }
        cache.insert("ttl".into(), json!(format!("{}s", ttl.as_secs().max(1))));
        let url = self.config.url(&F::cache_collection(&self.config)?);
        let headers = self.request_headers().await?;
        let held_tools = cache.get("tools").cloned();
        let held_config = cache.get("toolConfig").cloned();
        // Not asked again: a create that timed out may have made a cache,
        // and a second would be billed beside it.
        let mut once = self.config.clone();
        once.retry = super::RetryPolicy::none();
        let made = super::http::call(
            &once,
            reqwest::Method::POST,
            &url,
            headers,
            Some(&Value::Object(cache)),
        )
        .await?;
        let name = made["name"]
            .as_str()
            .ok_or_else(|| ModelError::new(format!("Gemini named no cache: {made}")))?;
        Ok(GeminiCache {
            name: name.to_owned(),
            expire_time: made["expireTime"].as_str().map(str::to_owned),
            tokens: made
                .pointer("/usageMetadata/totalTokenCount")
                .and_then(Value::as_u64),
            prefix: crate::models::CachedPrefix {
                name: name.to_owned(),
                messages: conversation.to_vec(),
                tools: held_tools,
                tool_config: held_config,
            },
        })
    }

    /// Uses `cache` in every request that begins with what it holds (its
    /// messages, and the same tools): that is not sent again, only what
    /// follows. A request that differs (other tools, an instruction after
    /// the prefix) goes whole, without the cache.
    #[must_use]
    pub fn cached_content(mut self, cache: &GeminiCache) -> Self {
        self.config.cached = Some(cache.prefix.clone());
        self
    }

    /// Keeps `cache` for `ttl` from now.
    pub async fn update_cache_ttl(
        &self,
        cache: &GeminiCache,
        ttl: std::time::Duration,
    ) -> Result<GeminiCache, ModelError> {
        let url = self.config.url(&format!("{}?updateMask=ttl", cache.name));
        let headers = self.request_headers().await?;
        let body = json!({ "ttl": format!("{}s", ttl.as_secs().max(1)) });
        let changed = super::http::call(
            &self.config,
            reqwest::Method::PATCH,
            &url,
            headers,
            Some(&body),
        )
        .await?;
        Ok(GeminiCache {
            expire_time: changed["expireTime"].as_str().map(str::to_owned),
            ..cache.clone()
        })
    }

    /// Deletes `cache`.
    pub async fn delete_cache(&self, cache: &GeminiCache) -> Result<(), ModelError> {
        let url = self.config.url(&cache.name);
        let headers = self.request_headers().await?;
        super::http::call(&self.config, reqwest::Method::DELETE, &url, headers, None)
            .await
            .map(drop)
    }
}

/// The model's name without the `models/` the API's own names carry.
fn model_name(config: &Config) -> &str {
    config.model.trim_start_matches("models/")
}

#[cfg(test)]
mod tests {
    use super::{model_name, Format, Gemini, GeminiApi};

    #[test]
    fn only_versioned_gemini_3_names_get_a_response_schema() {
        for (model, native) in [
            ("gemini-3-pro-preview", true),
            ("models/gemini-3.5-flash", true),
            ("gemini-2.5-flash", false),
            ("models/gemini-1.5-pro", false),
            ("gemini-flash-latest", false),
            ("gemma-3-27b-it", false),
        ] {
            assert_eq!(
                GeminiApi::answers_natively(&Gemini::new(model).config),
                native,
                "{model}"
            );
        }
        let forced = Gemini::new("gemini-flash-latest").structured_output(true);
        assert!(GeminiApi::answers_natively(&forced.config));
    }

    /// The API's own `models/` prefix is not doubled in the URL.
    #[test]
    fn the_models_prefix_is_not_doubled() {
        assert_eq!(
            model_name(&Gemini::new("models/gemini-2.5-flash").config),
            "gemini-2.5-flash"
        );
    }
}

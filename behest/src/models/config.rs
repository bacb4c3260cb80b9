//! What every model client is configured with.

use super::tokens::Tokens;
use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::model::ModelSettings;
use crate::providers::ExportOptions;

/// An API key. Shown as `***` in `Debug` and never put in errors or traces.
#[derive(Clone)]
pub struct ApiKey(String);

impl ApiKey {
    /// A key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The first of these environment variables that is set and not empty.
    pub fn from_env(names: &[&str]) -> Option<Self> {
        first_set(names).map(Self)
    }

    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

/// The value of the first of these environment variables that is set and
/// not blank.
pub(crate) fn first_set(names: &[&str]) -> Option<String> {
    names
        .iter()
        .filter_map(|name| std::env::var(name).ok())
        .find(|value| !value.trim().is_empty())
}

/// `text` for a URL's path or query: what is not a letter, a digit or
/// `-._~` as `%XX` (a model id, an ARN, a deployment's name as one path
/// segment).
#[cfg(any(feature = "azure", feature = "bedrock"))]
pub(crate) fn percent_encoded(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// Which tools the model may or must call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolChoice {
    /// The model decides (the providers' default).
    #[default]
    Auto,
    /// No tool calls.
    None,
    /// At least one tool call.
    Required,
    /// A call of this tool.
    Tool(String),
}

/// How failed requests are tried again: exponential backoff with jitter,
/// a `Retry-After` (or `retry-after-ms`) from the server honoured. Only
/// failures before the first byte of an answer are retried.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Retries after the first attempt. Default 2.
    pub max_retries: u32,
    /// The wait before the first retry; it doubles each time. Default 500 ms.
    pub initial_backoff: Duration,
    /// The longest wait between attempts, a server's `Retry-After`
    /// included. Default 30 s.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 2,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub fn none() -> Self {
        Self {
            max_retries: 0,
            ..Self::default()
        }
    }

    /// The wait before retry number `attempt` (from 0): doubling backoff,
    /// between half and all of it (jitter), at most `max_backoff`.
    pub(crate) fn backoff(&self, attempt: u32) -> Duration {
        let full = self
            .initial_backoff
            .saturating_mul(2u32.saturating_pow(attempt))
            .min(self.max_backoff);
        full.mul_f64(0.5 + 0.5 * jitter())
    }
}

/// A number in `[0, 1)` that differs from call to call; the spread of
/// retries needs no better randomness than the clock's.
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |elapsed| elapsed.as_nanos()),
    );
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Extra headers, by name and value. `Debug` shows the names only: a value
/// may be a key (`api-key`, `x-api-key`).
#[derive(Clone, Default)]
#[doc(hidden)]
pub struct Headers(pub(crate) Vec<(String, String)>);

impl fmt::Debug for Headers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| format!("{name}: ***")))
            .finish()
    }
}

/// The settings every client has.
#[derive(Debug, Clone)]
#[doc(hidden)]
pub struct Config {
    pub model: String,
    /// The key given with `api_key`: sent wherever the client points.
    pub api_key: Option<ApiKey>,
    /// The key of the provider's environment variable: sent only to the
    /// provider's own API, never to another base URL (a compatible server
    /// or proxy must be given its key), so that an `OPENAI_API_KEY` set
    /// for OpenAI never reaches a third party.
    pub env_key: Option<ApiKey>,
    /// The provider's own base URL (for Bedrock, its region's).
    pub default_base_url: String,
    /// The base URL the environment named (`OPENAI_BASE_URL`, …), as the
    /// official SDKs read it: the environment's key may go there too.
    pub env_base_url: Option<String>,
    pub base_url: String,
    pub headers: Headers,
    /// Sampling and reasoning settings of every turn.
    pub settings: ModelSettings,
    pub tool_choice: ToolChoice,
    pub parallel_tool_calls: Option<bool>,
    /// The timeout given (`None`: 120 s for a stream, 600 s for a whole
    /// answer, as the providers' SDKs wait).
    pub timeout: Option<Duration>,
    pub retry: RetryPolicy,
    /// The user's own HTTP client, instead of the shared one.
    pub http: Option<reqwest::Client>,
    pub body: Map<String, Value>,
    pub stream: bool,
    pub export: ExportOptions,
    /// Whether typed runs ask for the answer in the provider's structured
    /// output (clients that have it); `None`: as the client judges best.
    pub structured_output: Option<bool>,
    /// Whether Responses requests ask for encrypted reasoning; `None`: by
    /// the model's name.
    pub encrypted_reasoning: Option<bool>,
    /// Whether Anthropic requests mark what may be cached (`cache_control`).
    pub prompt_caching: bool,
    /// Azure OpenAI's `api-version`, where a client names one.
    pub api_version: Option<String>,
    /// Where bearer tokens come from (Microsoft Entra ID, Google's OAuth),
    /// sent in place of a key.
    pub tokens: Option<Tokens>,
    /// Tokens of credentials the environment names (Google's Application
    /// Default Credentials): sent, as the environment's key is, only to
    /// the provider's own API or the base URL the environment names, and
    /// only when no key or token source was given.
    pub env_tokens: Option<Tokens>,
    /// A Gemini cache the requests use, with what it holds.
    pub cached: Option<crate::models::CachedPrefix>,
    /// The tools a provider's own tool search loads when it finds them
    /// (`defer_loading`).
    pub deferred: Option<std::sync::Arc<std::collections::HashSet<String>>>,
    /// How requests are signed for AWS (Bedrock), when no key is sent.
    #[cfg(feature = "bedrock")]
    pub(crate) sigv4: Option<super::aws::SigV4>,
    /// The Google Cloud project of a Vertex AI client.
    #[cfg(feature = "vertex")]
    pub project: Option<String>,
    /// The location of a Vertex AI client.
    #[cfg(feature = "vertex")]
    pub location: String,
}

impl Config {
    pub(crate) fn new(
        model: String,
        base_url: &'static str,
        key_variables: &[&str],
        base_url_variables: &[&str],
    ) -> Self {
        let env_base_url = first_set(base_url_variables);
        Self {
            model,
            api_key: None,
            env_key: ApiKey::from_env(key_variables),
            default_base_url: base_url.to_owned(),
            base_url: env_base_url.clone().unwrap_or_else(|| base_url.to_owned()),
            env_base_url,
            headers: Headers::default(),
            settings: ModelSettings::default(),
            tool_choice: ToolChoice::Auto,
            parallel_tool_calls: None,
            timeout: None,
            retry: RetryPolicy::default(),
            http: None,
            body: Map::new(),
            stream: true,
            export: ExportOptions::default(),
            structured_output: None,
            encrypted_reasoning: None,
            prompt_caching: false,
            api_version: None,
            tokens: None,
            env_tokens: None,
            cached: None,
            deferred: None,
            #[cfg(feature = "bedrock")]
            sigv4: None,
            #[cfg(feature = "vertex")]
            project: None,
            #[cfg(feature = "vertex")]
            location: String::new(),
        }
    }

    /// How long the API may take: the timeout given, else 120 s for a
    /// stream (each pause) and 600 s for a whole answer, which may think
    /// long before its first byte.
    pub fn time_limit(&self) -> Duration {
        self.timeout.unwrap_or(if self.stream {
            Duration::from_secs(120)
        } else {
            Duration::from_secs(600)
        })
    }

    /// The key to send: the one given, or the environment's when the
    /// client talks to the provider's own API or to the base URL the
    /// environment named.
    pub fn key(&self) -> Option<&ApiKey> {
        self.api_key.as_ref().or(self
            .env_key
            .as_ref()
            .filter(|_| self.is_own_api() || self.is_env_named()))
    }

    /// Makes `endpoint` the provider's own base URL (a cloud's region's or
    /// location's); the client goes there unless its base URL was chosen
    /// (given in code, or named by the environment; an empty one is no
    /// choice).
    #[cfg(any(feature = "bedrock", feature = "vertex"))]
    pub(crate) fn move_to(&mut self, endpoint: String) {
        let chosen = self.env_base_url.is_some()
            || !(self.base_url.is_empty() || self.base_url == self.default_base_url);
        if !chosen {
            self.base_url.clone_from(&endpoint);
        }
        self.default_base_url = endpoint;
    }

    /// The token source to ask for a bearer token: the one given, or the
    /// environment's where its key would go, when no key was given.
    pub fn token_source(&self) -> Option<&Tokens> {
        self.tokens.as_ref().or_else(|| {
            self.env_tokens
                .as_ref()
                .filter(|_| self.key().is_none() && (self.is_own_api() || self.is_env_named()))
        })
    }

    /// Whether the base URL is on the origin the environment named
    /// (`OPENAI_BASE_URL`, …).
    pub fn is_env_named(&self) -> bool {
        self.env_base_url
            .as_deref()
            .is_some_and(|url| same_origin(url, &self.base_url))
    }

    /// Whether the base URL is on the provider's own API (its scheme, host
    /// and port), whatever its path: another version of the API is still
    /// the provider's.
    pub fn is_own_api(&self) -> bool {
        same_origin(&self.default_base_url, &self.base_url)
    }

    /// `base_url` joined with `path`, one `/` between them. A query on
    /// either is kept (the base URL's first), so a base URL may carry what
    /// a server wants on every request, such as Azure's `api-version`.
    pub fn url(&self, path: &str) -> String {
        let (base, base_query) = split_query(&self.base_url);
        let (path, path_query) = split_query(path);
        let mut url = format!(
            "{}/{}",
            base.trim_end_matches('/'),
            path.trim_start_matches('/')
        );
        let queries = [base_query, path_query].into_iter().flatten();
        for (i, query) in queries.filter(|query| !query.is_empty()).enumerate() {
            url.push(if i == 0 { '?' } else { '&' });
            url.push_str(query);
        }
        url
    }

    /// The extra body fields, over what the client wrote. An object field
    /// the client also wrote is merged, key by key, the extra field's keys
    /// winning: a Gemini `generationConfig` with a thinking budget keeps
    /// the client's `maxOutputTokens` and a typed run's `responseSchema`.
    pub fn finish_body(&self, mut body: Value) -> Value {
        if let Value::Object(object) = &mut body {
            for (key, value) in &self.body {
                // Objects that name their kind (`"type"`: a tool choice,
                // a thinking switch, a response format) are one value, not
                // settings to merge.
                let typed = |object: &Map<String, Value>| object.contains_key("type");
                match (object.get_mut(key), value) {
                    (Some(Value::Object(written)), Value::Object(extra))
                        if !typed(written) && !typed(extra) =>
                    {
                        written.extend(extra.clone());
                    }
                    _ => {
                        object.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        body
    }
}

/// Whether two URLs have one origin: scheme, host and port.
fn same_origin(a: &str, b: &str) -> bool {
    let origin = |url: &str| {
        let url = reqwest::Url::parse(url).ok()?;
        Some((
            url.scheme().to_owned(),
            url.host_str()?.to_ascii_lowercase(),
            url.port_or_known_default(),
        ))
    };
    let a = origin(a);
    a.is_some() && a == origin(b)
}

/// `url` before its `?`, and the query after it.
fn split_query(url: &str) -> (&str, Option<&str>) {
    match url.split_once('?') {
        Some((url, query)) => (url, Some(query)),
        None => (url, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The environment's key goes to the provider's own API only; a key
    /// given goes wherever the client points.
    #[test]
    fn the_environment_s_key_is_sent_only_to_the_provider() {
        let mut config = Config::new("m".into(), "https://api.example.com/v1", &[], &[]);
        config.env_key = Some(ApiKey::new("from-env"));
        let sent = |config: &Config| config.key().map(|key| key.expose().to_owned());
        assert_eq!(sent(&config).as_deref(), Some("from-env"));
        config.base_url = "https://api.example.com/v1/".into();
        assert_eq!(sent(&config).as_deref(), Some("from-env"));
        config.base_url = "https://API.example.com:443/v2".into();
        assert_eq!(sent(&config).as_deref(), Some("from-env"));
        for elsewhere in [
            "https://compatible.example.net/v1",
            "http://api.example.com/v1",
            "https://api.example.com:8443/v1",
            "https://api.example.com.evil.net/v1",
            "not a url",
        ] {
            config.base_url = elsewhere.into();
            assert_eq!(sent(&config), None, "{elsewhere}");
        }
        config.api_key = Some(ApiKey::new("given"));
        assert_eq!(sent(&config).as_deref(), Some("given"));
    }

    #[test]
    fn urls_keep_the_queries_of_base_and_path() {
        let mut config = Config::new("m".into(), "https://api.example.com/v1/", &[], &[]);
        assert_eq!(config.url("/chat"), "https://api.example.com/v1/chat");
        assert_eq!(
            config.url("x:stream?alt=sse"),
            "https://api.example.com/v1/x:stream?alt=sse"
        );
        config.base_url = "https://a.example.com/openai/deployments/d?api-version=1".into();
        assert_eq!(
            config.url("chat/completions"),
            "https://a.example.com/openai/deployments/d/chat/completions?api-version=1"
        );
        assert_eq!(
            config.url("x:stream?alt=sse"),
            "https://a.example.com/openai/deployments/d/x:stream?api-version=1&alt=sse"
        );
    }

    #[test]
    fn header_values_are_not_shown() {
        let mut config = Config::new("m".into(), "https://api.example.com", &[], &[]);
        config
            .headers
            .0
            .push(("api-key".into(), "secret-value".into()));
        let shown = format!("{config:?}");
        assert!(
            shown.contains("api-key") && !shown.contains("secret-value"),
            "{shown}"
        );
    }
}

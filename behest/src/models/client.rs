//! The one model client: [`Client<F>`] over a provider's wire format `F`.
//! Each provider is one [`Format`] impl (path, headers, request body,
//! whole-answer parser and stream assembler); the builder methods, the
//! exchange, tracing and the [`Model`](crate::Model) impl are written once.

use std::fmt;
use std::marker::PhantomData;

use reqwest::header::{HeaderMap, HeaderValue, AUTHORIZATION};
use serde_json::Value;

use super::config::Config;
use super::exchange::exchange;
use super::http;
use super::tools::ExportCache;
use crate::conversation::{AssistantMessage, WireFormat};
use crate::model::{ModelError, ModelRequest, ModelSettings};
use crate::providers::{ParseError, StreamAssembler};

/// A provider's wire format as a model client speaks it:
/// [`openai::ChatApi`](super::openai::ChatApi),
/// [`openai::ResponsesApi`](super::openai::ResponsesApi),
/// [`anthropic::MessagesApi`](super::anthropic::MessagesApi) and
/// [`gemini::GeminiApi`](super::gemini::GeminiApi). Its items are behest's
/// own: the trait is sealed.
pub trait Format: sealed::Sealed + Send + Sync + 'static {
    /// The provider's name in the OpenTelemetry GenAI conventions.
    #[doc(hidden)]
    const SYSTEM: &'static str;
    /// The provider's own base URL.
    #[doc(hidden)]
    const BASE_URL: &'static str;
    /// The environment variables the key is read from, first set first.
    #[doc(hidden)]
    const KEY_VARIABLES: &'static [&'static str];
    /// The environment variables a base URL is read from, as the official
    /// SDKs read them.
    #[doc(hidden)]
    const BASE_URL_VARIABLES: &'static [&'static str];
    /// The stream assembler of the format.
    #[doc(hidden)]
    type Stream: StreamAssembler;

    /// The path of a turn's request, after the base URL.
    #[doc(hidden)]
    fn path(config: &Config) -> String;

    /// The header that carries the key.
    #[doc(hidden)]
    const KEY_HEADER: KeyHeader;

    /// Whether the provider counts the tokens read from and written to a
    /// cache apart from its input tokens (Anthropic, Bedrock).
    #[doc(hidden)]
    const CACHE_APART: bool = false;

    /// How a streamed answer's events are framed.
    #[doc(hidden)]
    const FRAMING: http::Framing = http::Framing::Sse;

    /// Headers every request carries (an API version).
    #[doc(hidden)]
    const HEADERS: &'static [(&'static str, &'static str)] = &[];

    /// The request body of a turn, before the configured extra fields.
    #[doc(hidden)]
    fn body(turn: &Turn<'_>) -> Result<Value, ModelError>;

    /// The assistant message of a whole (not streamed) answer.
    #[doc(hidden)]
    fn parse(response: &Value) -> Result<AssistantMessage, ParseError>;

    /// Settles what the environment says beyond a key and a base URL (a
    /// cloud's region and credentials).
    #[doc(hidden)]
    fn configure(config: &mut Config) {
        let _unused = config;
    }

    /// The error of a request with no base URL: what to set.
    #[doc(hidden)]
    fn missing_base_url() -> String {
        format!(
            "the client has no base URL: set {} or give one with `.base_url(..)`",
            Self::BASE_URL_VARIABLES.join(" or ")
        )
    }

    /// Whether typed runs ask for the answer in the provider's structured
    /// output, as configured or as the format judges best.
    #[doc(hidden)]
    fn answers_natively(config: &Config) -> bool {
        let _unused = config;
        false
    }
}

/// Where a provider takes the key.
#[doc(hidden)]
#[derive(Debug, Clone, Copy)]
pub enum KeyHeader {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key as the value of this header.
    Named(&'static str),
}

/// What a format writes a turn's request body from.
#[doc(hidden)]
pub struct Turn<'t> {
    /// The client's settings.
    pub config: &'t Config,
    /// What the run asks.
    pub request: &'t ModelRequest<'t>,
    /// The sampling and reasoning settings of this turn: the client's, with
    /// the request's over them.
    pub settings: ModelSettings,
    tools: &'t ExportCache,
}

impl Turn<'_> {
    /// The declarations of the request's tools in `format`, exported once
    /// per set of tools; `None` when the request offers none.
    pub(crate) fn declarations(
        &self,
        format: WireFormat,
    ) -> Result<Option<Vec<Value>>, ModelError> {
        if self.request.tools.is_empty() {
            return Ok(None);
        }
        let declarations = self.tools.declarations(
            self.request.tools,
            self.request.strict,
            format,
            &self.config.export,
        )?;
        Ok(Some(declarations.to_vec()))
    }

    /// [`declarations`](Self::declarations), none strict: for a model that
    /// refuses strict tools.
    #[cfg(any(feature = "anthropic", feature = "bedrock"))]
    pub(crate) fn declarations_not_strict(
        &self,
        format: WireFormat,
    ) -> Result<Option<Vec<Value>>, ModelError> {
        if self.request.tools.is_empty() {
            return Ok(None);
        }
        let mut export = self.config.export.clone();
        export.strict = crate::providers::Strictness::None;
        let declarations = self.tools.declarations(
            self.request.tools,
            &std::collections::BTreeSet::new(),
            format,
            &export,
        )?;
        Ok(Some(declarations.to_vec()))
    }
}

/// A format whose provider can answer in a JSON Schema's shape, so that
/// its client has [`structured_output`](Client::structured_output).
pub trait NativeOutput: Format {}

mod sealed {
    pub trait Sealed {}
}

pub(crate) use sealed::Sealed;

/// A model over HTTP in wire format `F`: build one through its provider's
/// alias ([`Chat`](super::openai::Chat), [`Responses`](super::openai::Responses),
/// [`Messages`](super::anthropic::Messages), [`Gemini`](super::gemini::Gemini)).
///
/// Turns stream by default; failures before an answer starts are retried
/// ([`RetryPolicy`](super::RetryPolicy)). The key comes from the provider's
/// environment variable unless given with [`api_key`](Self::api_key), and
/// that key goes only to the provider's own API.
pub struct Client<F: Format> {
    pub(super) config: Config,
    tools: ExportCache,
    format: PhantomData<fn() -> F>,
}

/// A copy with the same settings, credentials and token source; its
/// declarations are exported anew.
impl<F: Format> Clone for Client<F> {
    fn clone(&self) -> Self {
        Self {
            config: self.config.clone(),
            tools: ExportCache::default(),
            format: PhantomData,
        }
    }
}

impl<F: Format> fmt::Debug for Client<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("format", &std::any::type_name::<F>())
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl<F: Format> Client<F> {
    /// A client of `model`, with the key from the provider's environment
    /// variable (if set) and the provider's base URL, or the one its SDK's
    /// environment variable names (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`,
    /// `GOOGLE_GEMINI_BASE_URL`), where the environment's key goes too.
    pub fn new(model: impl Into<String>) -> Self {
        let mut config = Config::new(
            model.into(),
            F::BASE_URL,
            F::KEY_VARIABLES,
            F::BASE_URL_VARIABLES,
        );
        F::configure(&mut config);
        Self {
            config,
            tools: ExportCache::default(),
            format: PhantomData,
        }
    }

    /// The request body of a turn.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        let turn = Turn {
            config: &self.config,
            request,
            settings: self.config.settings.merged(request.settings),
            tools: &self.tools,
        };
        Ok(self.config.finish_body(F::body(&turn)?))
    }

    /// The headers of a request with its credential: a token source's
    /// bearer token, else the key.
    pub(super) async fn request_headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = self.headers()?;
        if let Some(tokens) = self.config.token_source() {
            let bearer = tokens.bearer().await?;
            headers.insert(
                AUTHORIZATION,
                http::secret_header(&format!("Bearer {bearer}"))?,
            );
        }
        Ok(headers)
    }

    /// The headers of a request: the format's own, and the key where it
    /// goes.
    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        for (name, value) in F::HEADERS {
            headers.insert(*name, HeaderValue::from_static(value));
        }
        // A token source's bearer token goes in place of any key.
        if let Some(key) = self.config.key().filter(|_| self.config.tokens.is_none()) {
            match F::KEY_HEADER {
                KeyHeader::Bearer => headers.insert(
                    AUTHORIZATION,
                    http::secret_header(&format!("Bearer {}", key.expose()))?,
                ),
                KeyHeader::Named(name) => headers.insert(name, http::secret_header(key.expose())?),
            };
        }
        Ok(headers)
    }

    async fn turn(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let body = self.request_body(&request)?;
        if self.config.base_url.trim().is_empty() {
            return Err(ModelError::new(F::missing_base_url()));
        }
        let url = self.config.url(&F::path(&self.config));
        let headers = self.request_headers().await?;
        let sent_token = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::to_owned);
        let answer = exchange::<F::Stream>(
            &self.config,
            F::FRAMING,
            &url,
            headers,
            &body,
            F::parse,
            request.deltas,
        )
        .await;
        // A token refused before its time (revoked) is not sent again.
        if let (Err(error), Some(tokens), Some(token)) =
            (&answer, self.config.token_source(), sent_token)
        {
            if error.status == Some(401) {
                tokens.forget(&token).await;
            }
        }
        answer
    }

    /// The client with the tools named in `deferred` left to the
    /// provider's own tool search (`defer_loading`).
    #[cfg(any(feature = "openai", feature = "anthropic"))]
    pub(super) fn deferring<S: AsRef<str>>(
        mut self,
        deferred: impl IntoIterator<Item = S>,
    ) -> Self {
        let names = deferred
            .into_iter()
            .map(|name| name.as_ref().to_owned())
            .collect();
        self.config.deferred = Some(std::sync::Arc::new(names));
        self
    }

    /// Sends a bearer token from `source` (Microsoft Entra ID, Google's
    /// OAuth) in place of a key, asked again before it expires.
    #[must_use]
    pub fn token_source(mut self, source: impl crate::models::TokenSource) -> Self {
        self.config.tokens = Some(crate::models::tokens::Tokens::new(source));
        self
    }

    /// Uses this API key instead of the environment's.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.config.api_key = Some(crate::models::ApiKey::new(key));
        self
    }

    /// Sends requests to this base URL (a proxy, a compatible server).
    /// A query on it goes on every request (Azure OpenAI:
    /// `https://NAME.openai.azure.com/openai/deployments/DEPLOYMENT?api-version=2024-10-21`,
    /// with `.header("api-key", ..)`).
    /// The key from the provider's environment variable is sent only to
    /// the provider's own host: give another server its key with
    /// [`api_key`](Self::api_key).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.config.base_url = url.into();
        self
    }

    /// Adds a header to every request. Its value is not shown by
    /// `Debug` and is marked sensitive, as it may be a key.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.config.headers.0.push((name.into(), value.into()));
        self
    }

    /// The sampling temperature.
    #[must_use]
    pub fn temperature(self, temperature: f64) -> Self {
        self.with_settings(|settings| settings.temperature(temperature))
    }

    /// Nucleus sampling: the probability mass the next token is drawn from.
    #[must_use]
    pub fn top_p(self, top_p: f64) -> Self {
        self.with_settings(|settings| settings.top_p(top_p))
    }

    /// Texts that end the turn when the model writes them (`stop`,
    /// `stop_sequences`, `stopSequences`). Responses has none.
    #[must_use]
    pub fn stop<S: Into<String>>(self, stop: impl IntoIterator<Item = S>) -> Self {
        self.with_settings(|settings| settings.stop(stop))
    }

    /// A seed, where the provider takes one (Chat, Gemini).
    #[must_use]
    pub fn seed(self, seed: u64) -> Self {
        self.with_settings(|settings| settings.seed(seed))
    }

    /// How hard a reasoning model thinks (OpenAI's `reasoning_effort`,
    /// Responses' `reasoning.effort`).
    #[must_use]
    pub fn reasoning_effort(self, effort: crate::ReasoningEffort) -> Self {
        self.with_settings(|settings| settings.reasoning_effort(effort))
    }

    /// How many tokens the model may think with: Anthropic's extended
    /// thinking (`thinking.budget_tokens`), Gemini's `thinkingBudget`.
    #[must_use]
    pub fn thinking_budget(self, tokens: u32) -> Self {
        self.with_settings(|settings| settings.thinking_budget(tokens))
    }

    /// Every sampling and reasoning setting at once; a run's
    /// ([`Agent::model_settings`](crate::Agent::model_settings)) go over
    /// these.
    #[must_use]
    pub fn settings(mut self, settings: ModelSettings) -> Self {
        self.config.settings = settings;
        self
    }

    /// The client with its settings changed by `change`.
    fn with_settings(mut self, change: impl FnOnce(ModelSettings) -> ModelSettings) -> Self {
        self.config.settings = change(std::mem::take(&mut self.config.settings));
        self
    }

    /// The most tokens the model may write in one turn.
    #[must_use]
    pub fn max_tokens(self, tokens: u32) -> Self {
        self.with_settings(|settings| settings.max_tokens(tokens))
    }

    /// Which tools the model may or must call.
    #[must_use]
    pub fn tool_choice(mut self, choice: crate::models::ToolChoice) -> Self {
        self.config.tool_choice = choice;
        self
    }

    /// Whether the model may call several tools in one turn.
    #[must_use]
    pub fn parallel_tool_calls(mut self, parallel: bool) -> Self {
        self.config.parallel_tool_calls = Some(parallel);
        self
    }

    /// How long the API may take to answer: to send the response's
    /// headers, then (again) its whole body, or (for a stream) each
    /// piece after the one before, however long the whole stream lasts.
    /// Default 120 s for a stream, 600 s for a whole answer (the model
    /// thinks before its first byte). A whole answer that times out is not
    /// asked for again: the model may have written it, and been paid.
    #[must_use]
    pub fn timeout(mut self, timeout: std::time::Duration) -> Self {
        self.config.timeout = Some(timeout);
        self
    }

    /// Sends requests through this HTTP client (proxies, TLS roots,
    /// connection pool settings) instead of the shared one. The shared one
    /// follows no redirect, so that no key header reaches another host;
    /// build yours with `redirect(reqwest::redirect::Policy::none())` to keep
    /// that. The timeout set here still applies; one set on the client
    /// also bounds a whole stream. reqwest is built here with rustls and no
    /// crypto provider of its own: install one (behest uses
    /// `rustls::crypto::ring::default_provider().install_default()`)
    /// before building the client.
    #[must_use]
    pub fn http_client(mut self, client: reqwest::Client) -> Self {
        self.config.http = Some(client);
        self
    }

    /// How failed requests are tried again.
    #[must_use]
    pub fn retry(mut self, policy: crate::models::RetryPolicy) -> Self {
        self.config.retry = policy;
        self
    }

    /// Adds a field to every request body (a provider option behest has
    /// no method for); it replaces a field of the same name.
    #[must_use]
    pub fn body_field(mut self, name: impl Into<String>, value: serde_json::Value) -> Self {
        self.config.body.insert(name.into(), value);
        self
    }

    /// Whether turns stream (default) or come whole.
    #[must_use]
    pub fn stream(mut self, stream: bool) -> Self {
        self.config.stream = stream;
        self
    }

    /// How tools are exported (strictness, for OpenAI).
    #[must_use]
    pub fn export_options(mut self, options: crate::providers::ExportOptions) -> Self {
        self.config.export = options;
        self
    }
}

impl<F: NativeOutput> Client<F> {
    /// Whether a typed run ([`Agent::with_output`](crate::Agent::with_output))
    /// asks for its answer in the provider's structured output, or
    /// through the `final_answer` tool (for servers that cannot combine
    /// a response schema with tools). Unset, the client decides: see
    /// the client's documentation.
    #[must_use]
    pub fn structured_output(mut self, structured_output: bool) -> Self {
        self.config.structured_output = Some(structured_output);
        self
    }
}

impl<F: Format> crate::Model for Client<F> {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        super::traced(
            F::SYSTEM,
            F::CACHE_APART,
            &self.config.model,
            &self.config.base_url,
            self.turn(request),
        )
        .await
    }

    fn supports_structured_output(&self) -> bool {
        // A forced tool call leaves no turn for the answer's text.
        F::answers_natively(&self.config)
            && matches!(
                self.config.tool_choice,
                super::ToolChoice::Auto | super::ToolChoice::None
            )
    }
}

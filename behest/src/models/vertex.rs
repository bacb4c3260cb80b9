//! Google Vertex AI over HTTP: Gemini ([`VertexGemini`]) and Anthropic's
//! models ([`VertexAnthropic`]) in a Google Cloud project.
//!
//! A client names its project (`GOOGLE_CLOUD_PROJECT`, or `.project(..)`)
//! and location (`GOOGLE_CLOUD_LOCATION`, or `.location(..)`; `global`
//! unless set): requests go to the location's endpoint,
//! `https://{location}-aiplatform.googleapis.com/v1/projects/{project}/locations/{location}/…`,
//! or `https://aiplatform.googleapis.com/v1/…` for `global`. They carry
//! OAuth access tokens from [`GoogleCredentials`], found as Google's own
//! libraries find them, or from any [`token_source`](Client::token_source).
//!
//! Gemini speaks Gemini's own format (`:streamGenerateContent?alt=sse`);
//! Anthropic's models speak Messages through `:streamRawPredict` and
//! `:rawPredict`, the model in the path and `anthropic_version` in the
//! body.

use serde_json::Value;

use super::anthropic::MessagesApi;
use super::client::{Client, Format, KeyHeader, NativeOutput, Sealed, Turn};
use super::config::first_set;
use super::gemini::{GeminiApi, GeminiCaches};
use super::google::GoogleCredentials;
use super::Config;
use crate::conversation::AssistantMessage;
use crate::model::ModelError;
use crate::providers::{anthropic, gemini, ParseError};

/// Gemini on Vertex AI.
///
/// ```no_run
/// use behest::models::vertex::VertexGemini;
///
/// // Project and location from `GOOGLE_CLOUD_PROJECT` and
/// // `GOOGLE_CLOUD_LOCATION`, credentials as gcloud or a service account
/// // key give them, unless given.
/// let gemini = VertexGemini::new("gemini-2.5-flash")
///     .project("my-project")
///     .location("europe-west4");
/// ```
pub type VertexGemini = Client<VertexGeminiApi>;

/// Anthropic's models on Vertex AI.
///
/// ```no_run
/// use behest::models::vertex::VertexAnthropic;
///
/// let claude = VertexAnthropic::new("claude-sonnet-4-5@20250929")
///     .project("my-project")
///     .location("us-east5")
///     .max_tokens(2048);
/// ```
pub type VertexAnthropic = Client<VertexAnthropicApi>;

/// Gemini's format as Vertex AI serves it.
#[derive(Debug, Clone, Copy)]
pub enum VertexGeminiApi {}

/// Messages as Vertex AI serves Anthropic's models.
#[derive(Debug, Clone, Copy)]
pub enum VertexAnthropicApi {}

impl Sealed for VertexGeminiApi {}
impl Sealed for VertexAnthropicApi {}
impl NativeOutput for VertexGeminiApi {}
impl NativeOutput for VertexAnthropicApi {}

/// The version of Anthropic's API on Vertex, in the body.
const ANTHROPIC_VERSION: &str = "vertex-2023-10-16";

/// Where a client's project and location come from, first set first.
const PROJECT_VARIABLES: &[&str] = &["GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT"];
const LOCATION_VARIABLES: &[&str] = &["GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"];

/// The API's base URL at `location`: the global endpoint, a multi-region
/// one (`us`, `eu`), or the region's.
fn endpoint(location: &str) -> String {
    match location {
        "global" => "https://aiplatform.googleapis.com/v1".to_owned(),
        "us" | "eu" => format!("https://aiplatform.{location}.rep.googleapis.com/v1"),
        region => format!("https://{region}-aiplatform.googleapis.com/v1"),
    }
}

/// The project, location and credentials the environment names.
fn configure(config: &mut Config) {
    config.project = first_set(PROJECT_VARIABLES);
    let location = first_set(LOCATION_VARIABLES).unwrap_or_else(|| "global".to_owned());
    config.move_to(endpoint(&location));
    config.location = location;
    // Found credentials go to Google's own endpoints only (as a key from
    // the environment does); `.google_credentials(..)` sends them anywhere.
    config.env_tokens = Some(super::tokens::Tokens::new(GoogleCredentials::find()));
}

/// The client's project and location, as Vertex AI's resource names begin.
fn place(config: &Config) -> String {
    format!(
        "projects/{}/locations/{}",
        config.project.as_deref().unwrap_or_default(),
        config.location
    )
}

/// The model's resource name, under `publisher` (`google`, `anthropic`).
fn model_name(config: &Config, publisher: &str) -> String {
    format!(
        "{}/publishers/{publisher}/models/{}",
        place(config),
        config.model
    )
}

/// The path of a model's `method` in the client's project and location.
fn model_path(config: &Config, publisher: &str, method: &str) -> String {
    format!("{}:{method}", model_name(config, publisher))
}

/// A request needs a project: without one, what to set.
fn require_project(config: &Config) -> Result<(), ModelError> {
    match config.project.as_deref() {
        Some(project) if !project.trim().is_empty() => Ok(()),
        _ => Err(ModelError::new(
            "the Vertex AI client has no project: set GOOGLE_CLOUD_PROJECT or give one with \
             `.project(..)`",
        )),
    }
}

impl<F: VertexFormat> Client<F> {
    /// The Google Cloud project the model is used in.
    #[must_use]
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.config.project = Some(project.into());
        self
    }

    /// The location (a region such as `us-east5`, `us` or `eu`, or
    /// `global`) the model is used in; its endpoint unless a base URL was
    /// given.
    #[must_use]
    pub fn location(mut self, location: impl Into<String>) -> Self {
        let location = location.into();
        self.config.move_to(endpoint(&location));
        self.config.location = location;
        self
    }

    /// Google credentials other than those found (a service account's key
    /// file, a metadata server).
    #[must_use]
    pub fn google_credentials(self, credentials: GoogleCredentials) -> Self {
        self.token_source(credentials)
    }
}

/// The Vertex AI formats, which share a project and a location.
pub trait VertexFormat: Format {}
impl VertexFormat for VertexGeminiApi {}
impl VertexFormat for VertexAnthropicApi {}

impl Client<VertexAnthropicApi> {
    /// Whether requests mark the tools, the system prompt and the
    /// conversation as cacheable (`cache_control`), as on Anthropic's own
    /// API. Default off.
    #[must_use]
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.config.prompt_caching = on;
        self
    }
}

impl Format for VertexGeminiApi {
    const SYSTEM: &'static str = "gcp.vertex_ai";
    const BASE_URL: &'static str = "";
    const KEY_VARIABLES: &'static [&'static str] = &[];
    const BASE_URL_VARIABLES: &'static [&'static str] = &[];
    const KEY_HEADER: KeyHeader = KeyHeader::Named("x-goog-api-key");
    type Stream = gemini::Stream;

    fn configure(config: &mut Config) {
        configure(config);
    }

    fn path(config: &Config) -> String {
        if config.stream {
            model_path(config, "google", "streamGenerateContent?alt=sse")
        } else {
            model_path(config, "google", "generateContent")
        }
    }

    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        require_project(turn.config)?;
        <GeminiApi as Format>::body(turn)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        gemini::parse_response(response)
    }

    fn answers_natively(config: &Config) -> bool {
        <GeminiApi as Format>::answers_natively(config)
    }
}

/// Vertex AI's caches live in the client's project and location.
impl GeminiCaches for VertexGeminiApi {
    fn cache_collection(config: &Config) -> Result<String, ModelError> {
        require_project(config)?;
        Ok(format!("{}/cachedContents", place(config)))
    }

    fn cache_model(config: &Config) -> String {
        model_name(config, "google")
    }
}

impl Format for VertexAnthropicApi {
    const SYSTEM: &'static str = "gcp.vertex_ai";
    const BASE_URL: &'static str = "";
    const KEY_VARIABLES: &'static [&'static str] = &[];
    const BASE_URL_VARIABLES: &'static [&'static str] = &["ANTHROPIC_VERTEX_BASE_URL"];
    const KEY_HEADER: KeyHeader = KeyHeader::Bearer;
    const CACHE_APART: bool = true;
    type Stream = anthropic::Stream;

    fn configure(config: &mut Config) {
        configure(config);
        // Anthropic's SDK names the project apart.
        if let Some(project) = first_set(&["ANTHROPIC_VERTEX_PROJECT_ID"]) {
            config.project = Some(project);
        }
    }

    fn path(config: &Config) -> String {
        let method = if config.stream {
            "streamRawPredict"
        } else {
            "rawPredict"
        };
        model_path(config, "anthropic", method)
    }

    /// Messages' body, the model in the path instead, and the version of
    /// the API in the body instead of a header.
    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        require_project(turn.config)?;
        let mut body = MessagesApi::body_with(turn, Self::answers_natively(turn.config))?;
        if let Some(object) = body.as_object_mut() {
            object.remove("model");
            object.insert("anthropic_version".into(), ANTHROPIC_VERSION.into());
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        anthropic::parse_response(response)
    }

    /// The `final_answer` tool unless `.structured_output(true)`: the
    /// structured outputs of Anthropic's own API are not those of every
    /// Vertex AI region.
    fn answers_natively(config: &Config) -> bool {
        config.structured_output.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn endpoints_by_location() {
        assert_eq!(
            super::endpoint("global"),
            "https://aiplatform.googleapis.com/v1"
        );
        assert_eq!(
            super::endpoint("eu"),
            "https://aiplatform.eu.rep.googleapis.com/v1"
        );
        assert_eq!(
            super::endpoint("us-east5"),
            "https://us-east5-aiplatform.googleapis.com/v1"
        );
    }
}

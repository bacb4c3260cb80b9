//! Azure OpenAI: a deployment of an OpenAI model in an Azure resource,
//! spoken to in OpenAI's own wire formats (Chat Completions, Responses).
//!
//! A client is named by its deployment and goes to the resource's
//! endpoint: `AZURE_OPENAI_ENDPOINT` (`https://NAME.openai.azure.com`), or
//! `.base_url(..)`. Requests go to the v1 API (`/openai/v1/…`, the
//! deployment as the body's `model`), or, with
//! [`api_version`](crate::models::Client::api_version), to the
//! deployment's own path with that `api-version`. The key goes in the
//! `api-key` header (`AZURE_OPENAI_API_KEY`, or `.api_key(..)`); a
//! [`token_source`](crate::models::Client::token_source) sends Microsoft
//! Entra ID tokens instead.

use serde_json::Value;

use super::client::{Client, Format, KeyHeader, NativeOutput, Sealed, Turn};
use super::config::percent_encoded;
use super::openai::{ChatApi, ResponsesApi};
use super::Config;
use crate::conversation::AssistantMessage;
use crate::model::ModelError;
use crate::providers::{openai, ParseError};

/// A Chat Completions deployment on Azure OpenAI.
///
/// ```no_run
/// use behest::models::azure::AzureChat;
///
/// // The endpoint from `AZURE_OPENAI_ENDPOINT`, the key from
/// // `AZURE_OPENAI_API_KEY`, unless given.
/// let gpt = AzureChat::new("my-gpt-4.1-deployment");
/// ```
pub type AzureChat = Client<AzureChatApi>;

/// A Responses deployment on Azure OpenAI.
pub type AzureResponses = Client<AzureResponsesApi>;

/// Chat Completions as Azure OpenAI serves it.
#[derive(Debug, Clone, Copy)]
pub enum AzureChatApi {}

/// Responses as Azure OpenAI serves it.
#[derive(Debug, Clone, Copy)]
pub enum AzureResponsesApi {}

impl Sealed for AzureChatApi {}
impl Sealed for AzureResponsesApi {}
impl NativeOutput for AzureChatApi {}
impl NativeOutput for AzureResponsesApi {}

const KEY_VARIABLES: &[&str] = &["AZURE_OPENAI_API_KEY"];
const ENDPOINT_VARIABLES: &[&str] = &["AZURE_OPENAI_ENDPOINT"];

/// The path of `operation` for the client's deployment: the v1 API's, or,
/// with an `api-version`, the dated API's: Chat Completions under the
/// deployment's own path, Responses under `openai/` (the deployment as the
/// body's `model`, as on v1).
fn path(config: &Config, operation: &str) -> String {
    let Some(version) = &config.api_version else {
        return format!("openai/v1/{operation}");
    };
    let version = percent_encoded(version);
    if operation == "responses" {
        format!("openai/responses?api-version={version}")
    } else {
        format!(
            "openai/deployments/{}/{operation}?api-version={version}",
            percent_encoded(&config.model)
        )
    }
}

impl Format for AzureChatApi {
    const SYSTEM: &'static str = "azure.ai.openai";
    const BASE_URL: &'static str = "";
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    const BASE_URL_VARIABLES: &'static [&'static str] = ENDPOINT_VARIABLES;
    const KEY_HEADER: KeyHeader = KeyHeader::Named("api-key");
    type Stream = openai::chat::Stream;

    fn path(config: &Config) -> String {
        path(config, "chat/completions")
    }

    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        let mut body = ChatApi::body(turn)?;
        // Azure takes OpenAI's current name for the limit (its reasoning
        // deployments refuse `max_tokens`), whatever the deployment's name.
        if let Some(object) = body.as_object_mut() {
            if let Some(limit) = object.remove("max_tokens") {
                object.insert("max_completion_tokens".into(), limit);
            }
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        ChatApi::parse(response)
    }

    /// Azure's deployments answer in a JSON Schema's shape
    /// (`response_format`), unless the client is told otherwise.
    fn answers_natively(config: &Config) -> bool {
        config.structured_output.unwrap_or(true)
    }
}

impl Format for AzureResponsesApi {
    const SYSTEM: &'static str = "azure.ai.openai";
    const BASE_URL: &'static str = "";
    const KEY_VARIABLES: &'static [&'static str] = KEY_VARIABLES;
    const BASE_URL_VARIABLES: &'static [&'static str] = ENDPOINT_VARIABLES;
    const KEY_HEADER: KeyHeader = KeyHeader::Named("api-key");
    type Stream = <ResponsesApi as Format>::Stream;

    fn path(config: &Config) -> String {
        path(config, "responses")
    }

    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        ResponsesApi::body(turn)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        ResponsesApi::parse(response)
    }

    fn answers_natively(config: &Config) -> bool {
        config.structured_output.unwrap_or(true)
    }
}

/// The two Azure formats, for the options they share.
pub trait AzureApi: Format {}
impl AzureApi for AzureChatApi {}
impl AzureApi for AzureResponsesApi {}

// Azure's deployments cache prompts as OpenAI does, with the same options.
impl super::openai::OpenAiApi for AzureChatApi {}
impl super::openai::OpenAiApi for AzureResponsesApi {}

impl<F: AzureApi> Client<F> {
    /// Sends requests to the deployment's own path with this
    /// `api-version` (`2024-10-21`, say), as Azure's API before v1 takes
    /// them; without it, requests go to the v1 API.
    #[must_use]
    pub fn api_version(mut self, version: impl Into<String>) -> Self {
        self.config.api_version = Some(version.into());
        self
    }
}

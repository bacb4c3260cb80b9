//! AWS Bedrock's Converse API over HTTP: [`Converse`], one client for every
//! model Bedrock serves, by model id or inference profile
//! (`us.anthropic.claude-sonnet-4-5-20250929-v1:0`, an ARN).
//!
//! Turns stream through ConverseStream (AWS event-stream frames, their
//! checksums checked) or come whole from Converse. Requests go to
//! `https://bedrock-runtime.{region}.amazonaws.com`, or to the endpoint
//! `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (or `AWS_ENDPOINT_URL`) names, and are
//! signed with Signature Version 4 with credentials found as the AWS SDKs
//! find them ([`AwsCredentials`]), or carry a Bedrock API key
//! (`AWS_BEARER_TOKEN_BEDROCK`, or `.api_key(..)`) as a bearer token.

use serde_json::{json, Value};

use super::aws::{self, AwsCredentials, SigV4};
use super::client::{Client, Format, KeyHeader, NativeOutput, Sealed, Turn};
use super::config::percent_encoded;
use super::http::Framing;
use super::tools::answer_schema;
use super::{Config, ToolChoice};
use crate::conversation::AssistantMessage;
use crate::model::ModelError;
use crate::providers::{bedrock, ParseError, Strictness, WireFormat};

/// A model on AWS Bedrock, through the Converse API.
///
/// ```no_run
/// use behest::models::bedrock::Converse;
///
/// // Region and credentials from the environment and ~/.aws, as the AWS
/// // SDKs find them, unless given.
/// let claude = Converse::new("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
///     .region("us-east-1")
///     .max_tokens(2048);
/// ```
pub type Converse = Client<ConverseApi>;

/// The Converse wire format, as [`Converse`] speaks it.
#[derive(Debug, Clone, Copy)]
pub enum ConverseApi {}

impl Sealed for ConverseApi {}
impl NativeOutput for ConverseApi {}

/// The service name requests are signed for.
const SERVICE: &str = "bedrock";

/// The Bedrock runtime endpoint of `region`.
fn endpoint(region: &str) -> String {
    let domain = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    format!("https://bedrock-runtime.{region}.{domain}")
}

/// Whether a Bedrock model takes structured outputs by default: Anthropic's
/// 4.5 models and later, named with or without an inference profile's
/// geography (`us.`, `eu.`, `global.`).
fn structured_model(model: &str) -> bool {
    let Some((_, name)) = model.split_once("anthropic.") else {
        return false;
    };
    super::claude::structured_model(name)
}

impl Client<ConverseApi> {
    /// Sends requests to this AWS region's Bedrock runtime, signed for it.
    #[must_use]
    pub fn region(mut self, region: impl Into<String>) -> Self {
        self.set_region(region.into(), true);
        self
    }

    /// Sets the region (and its endpoint, unless one was chosen), `set`
    /// saying whether a profile's region may still replace it.
    fn set_region(&mut self, region: String, set: bool) {
        self.config.move_to(endpoint(&region));
        if let Some(signer) = &mut self.config.sigv4 {
            signer.region = region;
            signer.region_set |= set;
        }
    }

    /// Signs requests with these credentials instead of those the
    /// environment and the shared files give.
    #[must_use]
    pub fn credentials(mut self, credentials: AwsCredentials) -> Self {
        if let Some(signer) = &mut self.config.sigv4 {
            signer.credentials = Ok(credentials);
        }
        self
    }

    /// Uses this profile of the shared config and credentials files, as
    /// `AWS_PROFILE` would: its credentials (over the environment's, as a
    /// profile named to botocore is), and its region unless one was given
    /// with `.region(..)` or by `AWS_REGION`.
    #[must_use]
    pub fn profile(mut self, name: &str) -> Self {
        let found = aws::find_profile(name);
        let region_set = self
            .config
            .sigv4
            .as_ref()
            .is_some_and(|signer| signer.region_set);
        if let Some(signer) = &mut self.config.sigv4 {
            signer.credentials = found.credentials;
        }
        if let (Some(region), false) = (found.region, region_set) {
            self.set_region(region, false);
        }
        self
    }

    /// Whether requests mark the tools, the system prompt and the
    /// conversation so far as cacheable (`cachePoint` blocks), so that the
    /// next turn reads them from Bedrock's prompt cache, for the models
    /// that have one (Anthropic's, Amazon Nova). Default off.
    #[must_use]
    pub fn prompt_caching(mut self, on: bool) -> Self {
        self.config.prompt_caching = on;
        self
    }
}

impl Format for ConverseApi {
    const SYSTEM: &'static str = "aws.bedrock";
    const BASE_URL: &'static str = "";
    const KEY_VARIABLES: &'static [&'static str] = &["AWS_BEARER_TOKEN_BEDROCK"];
    const BASE_URL_VARIABLES: &'static [&'static str] =
        &["AWS_ENDPOINT_URL_BEDROCK_RUNTIME", "AWS_ENDPOINT_URL"];
    const KEY_HEADER: KeyHeader = KeyHeader::Bearer;
    const FRAMING: Framing = Framing::EventStream;
    type Stream = bedrock::Stream;
    const CACHE_APART: bool = true;

    /// The region and credentials as the AWS SDKs find them.
    fn configure(config: &mut Config) {
        let found = aws::find();
        let region = found.region.unwrap_or_default();
        if !region.is_empty() {
            config.move_to(endpoint(&region));
        }
        config.sigv4 = Some(SigV4 {
            service: SERVICE,
            region_set: aws::env_region().is_some(),
            region,
            credentials: found.credentials,
        });
    }

    fn missing_base_url() -> String {
        "the Bedrock client has no region: set AWS_REGION, give one with `.region(..)`, or name \
         an endpoint with AWS_ENDPOINT_URL_BEDROCK_RUNTIME or `.base_url(..)`"
            .to_owned()
    }

    fn path(config: &Config) -> String {
        let operation = if config.stream {
            "converse-stream"
        } else {
            "converse"
        };
        // The model id or ARN as one path segment, as the AWS SDKs send it.
        format!("model/{}/{operation}", percent_encoded(&config.model))
    }

    fn body(turn: &Turn<'_>) -> Result<Value, ModelError> {
        let (config, request) = (turn.config, turn.request);
        let (system, messages) = bedrock::messages(request.conversation).map_err(|error| {
            ModelError::new(format!("the conversation cannot be sent: {error}"))
        })?;
        let mut body = json!({ "messages": messages });
        let object = body.as_object_mut().expect("an object");
        if !system.is_empty() {
            object.insert("system".into(), Value::Array(system));
        }
        let native = Self::answers_natively(config);
        let declarations = if native {
            turn.declarations(WireFormat::Bedrock)?
        } else {
            turn.declarations_not_strict(WireFormat::Bedrock)?
        };
        // Converse has no choice of "none": the tools are left out, unless
        // the conversation holds calls (then they must be declared, and go
        // with no choice).
        let holds_calls = || {
            object["messages"].as_array().is_some_and(|messages| {
                messages.iter().any(|message| {
                    message["content"].as_array().is_some_and(|blocks| {
                        blocks.iter().any(|block| {
                            block.get("toolUse").is_some() || block.get("toolResult").is_some()
                        })
                    })
                })
            })
        };
        let declarations =
            declarations.filter(|_| config.tool_choice != ToolChoice::None || holds_calls());
        if let Some(tools) = declarations {
            let mut tool_config = json!({ "tools": tools });
            let choice = match &config.tool_choice {
                ToolChoice::Auto => Some(json!({"auto": {}})),
                ToolChoice::Required => Some(json!({"any": {}})),
                ToolChoice::Tool(name) => Some(json!({"tool": {"name": name}})),
                ToolChoice::None => None,
            };
            if let Some(choice) = choice {
                tool_config["toolChoice"] = choice;
            }
            object.insert("toolConfig".into(), tool_config);
        }
        let settings = &turn.settings;
        let mut inference = serde_json::Map::new();
        if let Some(tokens) = settings.max_tokens {
            inference.insert("maxTokens".into(), json!(tokens));
        }
        if let Some(temperature) = settings.temperature {
            inference.insert("temperature".into(), json!(temperature));
        }
        if let Some(top_p) = settings.top_p {
            inference.insert("topP".into(), json!(top_p));
        }
        if !settings.stop.is_empty() {
            inference.insert("stopSequences".into(), json!(settings.stop));
        }
        if !inference.is_empty() {
            object.insert("inferenceConfig".into(), Value::Object(inference));
        }
        // Extended thinking is the model's own field (Anthropic's).
        if let Some(budget) = settings.thinking_budget {
            object.insert(
                "additionalModelRequestFields".into(),
                json!({"thinking": {"type": "enabled", "budget_tokens": budget}}),
            );
        }
        if let (Some(answer), true) = (request.output, native) {
            let mut export = config.export.clone();
            export.strict = Strictness::All;
            let (schema, strict) = answer_schema(answer, WireFormat::Bedrock, &export)?;
            if !strict {
                return Err(ModelError::new(format!(
                    "the answer's type `{}` cannot be made strict for Bedrock's structured \
                     outputs (a recursive type, or a map open to any key): build the client with \
                     `.structured_output(false)` to have the answer through the `final_answer` tool",
                    answer.name
                )));
            }
            // Converse takes the schema as JSON text.
            object.insert(
                "outputConfig".into(),
                json!({"textFormat": {
                    "type": "json_schema",
                    "structure": {"jsonSchema": {
                        "schema": schema.to_string(),
                        "name": answer.name,
                    }},
                }}),
            );
        }
        if config.prompt_caching {
            bedrock::mark_cache_points(object);
        }
        Ok(body)
    }

    fn parse(response: &Value) -> Result<AssistantMessage, ParseError> {
        bedrock::parse_response(response)
    }

    /// Structured outputs (`outputConfig.textFormat`) for typed runs: unless
    /// set, for Anthropic's 4.5 models and later; the `final_answer` tool
    /// for the others.
    fn answers_natively(config: &Config) -> bool {
        config
            .structured_output
            .unwrap_or_else(|| structured_model(&config.model))
    }
}

#[cfg(test)]
mod tests {
    use super::percent_encoded;

    #[test]
    fn model_ids_and_arns_are_one_path_segment() {
        assert_eq!(
            percent_encoded("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0"
        );
        assert_eq!(
            percent_encoded("arn:aws:bedrock:us-east-1:1:inference-profile/x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx"
        );
        assert_eq!(
            super::endpoint("cn-north-1"),
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
        );
    }

    #[test]
    fn structured_models_by_id() {
        assert!(super::structured_model(
            "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
        ));
        assert!(super::structured_model(
            "anthropic.claude-opus-4-5-20251101-v1:0"
        ));
        assert!(!super::structured_model(
            "anthropic.claude-3-5-sonnet-20240620-v1:0"
        ));
        assert!(!super::structured_model("amazon.nova-pro-v1:0"));
    }
}

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
        if let Some(declarations) = turn.declarations(WireFormat::Gemini)? {
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

//! Gemini over HTTP (the Gemini API's `generateContent`): [`Gemini`].

use reqwest::header::HeaderMap;
use serde_json::{json, Value};

use super::exchange::{exchange, stream_error, Event, Format};
use super::http;
use super::tools::{answer_schema, ExportCache};
use super::{config_methods, Config, ToolChoice};
use crate::conversation::{AssistantMessage, ModelDelta};
use crate::providers::{gemini, WireFormat};
use crate::run::{ModelError, ModelRequest};

const BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
const KEY_VARIABLES: &[&str] = &["GEMINI_API_KEY", "GOOGLE_API_KEY"];

/// A Gemini model.
///
/// A typed run ([`Agent::with_output`](crate::Agent::with_output)) asks
/// Gemini 3 and later for its answer with a `responseSchema`; earlier models
/// refuse one beside function declarations, and get the `final_answer` tool
/// (override with [`structured_output`](Self::structured_output)).
///
/// ```no_run
/// use behest::models::gemini::Gemini;
///
/// // The key comes from `GEMINI_API_KEY` or `GOOGLE_API_KEY` unless given.
/// let gemini = Gemini::new("gemini-2.5-flash");
/// ```
#[derive(Debug)]
pub struct Gemini {
    config: Config,
    tools: ExportCache,
}

impl Gemini {
    /// A client of `model`, with the key from `GEMINI_API_KEY` or
    /// `GOOGLE_API_KEY` (if set) and the Gemini API's base URL.
    pub fn new(model: impl Into<String>) -> Self {
        Self {
            config: Config::new(model.into(), BASE_URL, KEY_VARIABLES),
            tools: ExportCache::default(),
        }
    }

    config_methods!(structured_output);

    /// Whether typed runs get a `responseSchema`: unless set, for Gemini 3
    /// and later, the first to combine it with function calling. A name
    /// without a version (`gemini-flash-latest`) may mean an older model:
    /// it gets the `final_answer` tool, which every version takes.
    fn answers_natively(&self) -> bool {
        self.config.structured_output.unwrap_or_else(|| {
            let version = self
                .model()
                .strip_prefix("gemini-")
                .map(|rest| rest.split(['-', '.']).next().unwrap_or_default())
                .and_then(|major| major.parse::<u32>().ok());
            version.is_some_and(|major| major >= 3)
        })
    }

    /// The model's name without the `models/` the API's own names carry.
    fn model(&self) -> &str {
        self.config.model.trim_start_matches("models/")
    }

    /// The request body of a turn. Thought signatures of earlier turns go
    /// back on the parts they came on.
    pub fn request_body(&self, request: &ModelRequest<'_>) -> Result<Value, ModelError> {
        let (conversation, tools) = (request.conversation, request.tools);
        let config = &self.config;
        let (system, contents) = gemini::contents(conversation);
        let mut body = json!({ "contents": contents });
        let object = body.as_object_mut().expect("an object");
        if let Some(system) = system {
            object.insert("systemInstruction".into(), system);
        }
        if !tools.is_empty() {
            let declarations = self.tools.declarations(
                tools,
                request.strict,
                WireFormat::Gemini,
                &config.export,
            )?;
            object.insert("tools".into(), Value::Array(declarations.to_vec()));
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
        if let Some(temperature) = config.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(tokens) = config.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(tokens));
        }
        if let Some(answer) = request.output {
            let (schema, _) = answer_schema(answer, WireFormat::Gemini, &config.export)?;
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseSchema".into(), schema);
        }
        if !generation.is_empty() {
            object.insert("generationConfig".into(), Value::Object(generation));
        }
        Ok(config.finish_body(body))
    }

    fn headers(&self) -> Result<HeaderMap, ModelError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = self.config.key() {
            headers.insert("x-goog-api-key", http::secret_header(key.expose())?);
        }
        Ok(headers)
    }

    async fn turn(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let body = self.request_body(&request)?;
        let model = self.model();
        let url = if self.config.stream {
            self.config
                .url(&format!("models/{model}:streamGenerateContent?alt=sse"))
        } else {
            self.config.url(&format!("models/{model}:generateContent"))
        };
        let format = Format {
            whole: gemini::parse_response,
            stream: gemini::Stream::new(),
            end_marker: "a `finishReason`",
        };
        let mut calls = DeltaCalls::default();
        exchange(
            &self.config,
            &url,
            self.headers()?,
            &body,
            format,
            request.deltas,
            |chunk| {
                if chunk.get("error").is_some() {
                    return Err(stream_error(chunk));
                }
                let ends = chunk
                    .pointer("/candidates/0/finishReason")
                    .is_some_and(|reason| !reason.is_null());
                Ok(Event {
                    deltas: deltas_of(chunk, &mut calls),
                    ends,
                })
            },
        )
        .await
    }
}

super::model_over_turn!(Gemini, "gcp.gemini", structured_output);

/// How the deltas of a turn number its function calls: as the stream's
/// assembler counts them (the same [`gemini::Fragment`] reading), so a
/// delta's index is its call's place in the assembled message.
#[derive(Default)]
struct DeltaCalls {
    started: usize,
    /// The open call's name and id, while it continues.
    open: Option<(String, Option<String>)>,
}

impl DeltaCalls {
    /// The index of the call `call` is a part of, or `None` for a part
    /// the assembler drops (a nameless one with no call open).
    fn index_of(&mut self, call: &Value) -> Option<usize> {
        let fragment = gemini::Fragment::of(call);
        match (&mut self.open, fragment.name) {
            (None, None) => return None,
            // A nameless part continues the open call.
            (Some(_), None) => {}
            (Some((open, open_id)), Some(_)) if fragment.repeats(open, open_id.as_deref()) => {
                if open_id.is_none() {
                    *open_id = fragment.id.map(str::to_owned);
                }
            }
            (_, Some(name)) => {
                self.started += 1;
                self.open = Some((name.to_owned(), fragment.id.map(str::to_owned)));
            }
        }
        if !fragment.continues {
            self.open = None;
        }
        Some(self.started - 1)
    }
}

/// The pieces of a streamed chunk; `calls` numbers the function calls of
/// the turn.
fn deltas_of(chunk: &Value, calls: &mut DeltaCalls) -> Vec<ModelDelta> {
    let mut deltas = Vec::new();
    let parts = chunk
        .pointer("/candidates/0/content/parts")
        .and_then(Value::as_array);
    for part in parts.into_iter().flatten() {
        if let Some(text) = part.get("text").and_then(Value::as_str) {
            let thought = part.get("thought").and_then(Value::as_bool) == Some(true);
            deltas.push(if thought {
                ModelDelta::Reasoning(text.to_owned())
            } else {
                ModelDelta::Text(text.to_owned())
            });
        }
        if let Some((call, index)) = part
            .get("functionCall")
            .and_then(|call| Some((call, calls.index_of(call)?)))
        {
            deltas.push(ModelDelta::ToolCall {
                index,
                id: call.get("id").and_then(Value::as_str).map(str::to_owned),
                name: call.get("name").and_then(Value::as_str).map(str::to_owned),
                arguments: call.get("args").map(Value::to_string).unwrap_or_default(),
            });
        }
    }
    deltas
}

#[cfg(test)]
mod tests {
    use super::Gemini;

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
            assert_eq!(Gemini::new(model).answers_natively(), native, "{model}");
        }
        assert!(Gemini::new("gemini-flash-latest")
            .structured_output(true)
            .answers_natively());
        // The API's own `models/` prefix is not doubled in the URL.
    }

    /// A call continued over parts keeps its delta index; the next call
    /// gets the next one, as the assembled message numbers them.
    #[test]
    fn continued_calls_keep_their_delta_index() {
        use serde_json::json;
        let chunk =
            |parts: serde_json::Value| json!({"candidates": [{"content": {"parts": parts}}]});
        let mut calls = super::DeltaCalls::default();
        let mut indices = Vec::new();
        for parts in [
            json!([{"functionCall": {"name": "search", "willContinue": true}}]),
            json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.q", "stringValue": "ru"}], "willContinue": true}}]),
            json!([{"functionCall": {"name": "search", "args": {"q": "rust"}}}]),
            json!([{"functionCall": {"name": "search", "args": {"q": "go"}}}, {"functionCall": {"name": "add", "args": {}}}]),
        ] {
            for delta in super::deltas_of(&chunk(parts), &mut calls) {
                if let crate::ModelDelta::ToolCall { index, .. } = delta {
                    indices.push(index);
                }
            }
        }
        assert_eq!(indices, [0, 0, 0, 1, 2]);
        // A nameless part with no call open makes no call, and no delta.
        let mut calls = super::DeltaCalls::default();
        let stray = chunk(json!([{"functionCall": {"args": {"q": "x"}}}]));
        assert!(super::deltas_of(&stray, &mut calls).is_empty());
        assert_eq!(
            Gemini::new("models/gemini-2.5-flash").model(),
            "gemini-2.5-flash"
        );
    }
}

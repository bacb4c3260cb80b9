//! What a behest client answers when a server asks it: sampling (a
//! completion from any behest [`Model`]) and elicitation (a form put to a
//! callback, with the defaults the form gives for what it leaves out).

// Sampling is deprecated by the newest protocol (SEP-2577), not by the
// versions a behest client speaks.
#![allow(deprecated)]

use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult,
};
use rmcp::ErrorData;
use serde_json::{json, Map, Value};

use crate::conversation::Message;
use crate::model::{Model, ModelRequest, ModelSettings};

/// A form a server asks the user to fill in (MCP elicitation).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FormRequest {
    /// What the server says to the user.
    pub message: String,
    /// The form: an object schema of flat fields, as the protocol gives it.
    pub schema: Value,
}

/// The user's answer to a [`FormRequest`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum FormAnswer {
    /// Filled in: the fields given. A field left out that the form gives a
    /// `default` for is sent with that default.
    Accept(Map<String, Value>),
    /// The user said no.
    Decline,
    /// The user dismissed the form.
    Cancel,
}

type Elicit = Arc<dyn Fn(FormRequest) -> BoxFuture<'static, FormAnswer> + Send + Sync>;

/// Who answers a server's questions for a client: a model for sampling, a
/// callback for forms. Without one, the client does not declare the
/// capability and the server does not ask.
#[derive(Clone, Default)]
pub(crate) struct Answerers {
    pub sampling: Option<Arc<dyn Model>>,
    pub elicitation: Option<Elicit>,
}

impl std::fmt::Debug for Answerers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answerers")
            .field("sampling", &self.sampling.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .finish()
    }
}

impl Answerers {
    /// Forms answered by `answer`.
    pub fn elicitation<F, Fut>(&mut self, answer: F)
    where
        F: Fn(FormRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = FormAnswer> + Send + 'static,
    {
        self.elicitation = Some(Arc::new(move |request| Box::pin(answer(request))));
    }

    /// The answers to a round's (or a task's) questions, by their keys:
    /// sampling and forms answered as their requests are, roots none. A
    /// question this client cannot answer is an error that says so.
    pub async fn answer_inputs(
        &self,
        asked: rmcp::model::InputRequests,
    ) -> Result<rmcp::model::InputResponses, String> {
        use rmcp::model::InputRequest;

        let mut answers = rmcp::model::InputResponses::new();
        for (key, request) in asked {
            let answer = match request {
                InputRequest::CreateMessage(request) => self
                    .sample(request.params)
                    .await
                    .map(|result| serde_json::to_value(result).unwrap_or_default()),
                InputRequest::Elicitation(request) => self
                    .elicit(request.params)
                    .await
                    .map(|result| serde_json::to_value(result).unwrap_or_default()),
                InputRequest::ListRoots(_) => Ok(json!({ "roots": [] })),
                _ => Err(ErrorData::invalid_request(
                    "a kind of input request this client does not know",
                    None,
                )),
            }
            .map_err(|error| {
                format!(
                    "the MCP server asked what this client cannot answer: {}",
                    error.message
                )
            })?;
            answers.insert(key, answer);
        }
        Ok(answers)
    }

    /// Answers a sampling request with the model.
    pub async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let Some(model) = &self.sampling else {
            return Err(ErrorData::invalid_request(
                "this client answers no sampling requests",
                None,
            ));
        };
        let asked = serde_json::to_value(&params).unwrap_or_default();
        let mut conversation = Vec::new();
        if let Some(system) = asked["systemPrompt"].as_str() {
            conversation.push(Message::system(system));
        }
        for message in asked["messages"].as_array().into_iter().flatten() {
            let text = text_of(&message["content"]);
            conversation.push(match message["role"].as_str() {
                Some("assistant") => {
                    Message::Assistant(crate::conversation::AssistantMessage::text(text))
                }
                _ => Message::user(text),
            });
        }
        let settings = ModelSettings {
            max_tokens: Some(params.max_tokens),
            temperature: params.temperature.map(f64::from),
            stop: params.stop_sequences.clone().unwrap_or_default(),
            ..ModelSettings::default()
        };
        let request = ModelRequest::new(&conversation, &[]).with_settings(&settings);
        let answer = model.complete_dyn(request).await.map_err(|error| {
            ErrorData::internal_error(format!("the model failed: {error}"), None)
        })?;
        let model_name = answer.model.clone().unwrap_or_else(|| "behest".to_owned());
        let result = json!({
            "role": "assistant",
            "content": { "type": "text", "text": answer.text.unwrap_or_default() },
            "model": model_name,
            "stopReason": "endTurn",
        });
        serde_json::from_value(result).map_err(|error| {
            ErrorData::internal_error(
                format!("a sampling result could not be made: {error}"),
                None,
            )
        })
    }

    /// Answers a form with the callback, the form's defaults filling what
    /// an accepted answer leaves out.
    pub async fn elicit(&self, request: ElicitRequestParams) -> Result<ElicitResult, ErrorData> {
        let Some(answer) = &self.elicitation else {
            return Err(ErrorData::invalid_request(
                "this client answers no elicitation requests",
                None,
            ));
        };
        let asked = serde_json::to_value(&request).unwrap_or_default();
        if asked.get("requestedSchema").is_none() {
            return Err(ErrorData::invalid_params(
                "this client answers forms, not URL elicitations",
                None,
            ));
        }
        let form = FormRequest {
            message: asked["message"].as_str().unwrap_or_default().to_owned(),
            schema: asked["requestedSchema"].clone(),
        };
        let defaults = defaults_of(&form.schema);
        let result = match answer(form).await {
            FormAnswer::Accept(mut content) => {
                for (name, default) in defaults {
                    content.entry(name).or_insert(default);
                }
                json!({ "action": "accept", "content": content })
            }
            FormAnswer::Decline => json!({ "action": "decline" }),
            FormAnswer::Cancel => json!({ "action": "cancel" }),
        };
        serde_json::from_value(result).map_err(|error| {
            ErrorData::internal_error(
                format!("an elicitation result could not be made: {error}"),
                None,
            )
        })
    }
}

/// The text of a sampling message's content: a block or a list of blocks;
/// what is not text, named.
fn text_of(content: &Value) -> String {
    let block = |block: &Value| match block["type"].as_str() {
        Some("text") => block["text"].as_str().unwrap_or_default().to_owned(),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    };
    match content {
        Value::Array(blocks) => blocks.iter().map(block).collect::<Vec<_>>().join("\n"),
        other => block(other),
    }
}

/// The `default` of each field of a form that has one.
fn defaults_of(schema: &Value) -> Vec<(String, Value)> {
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, field)| Some((name.clone(), field.get("default")?.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An accepted answer gets the form's defaults for what it leaves out,
    /// and keeps what it gives.
    #[tokio::test]
    async fn an_accepted_form_is_filled_with_its_defaults() {
        let mut answerers = Answerers::default();
        answerers.elicitation(|request: FormRequest| async move {
            assert_eq!(request.message, "Who?");
            let mut given = Map::new();
            given.insert("name".to_owned(), json!("Ann"));
            FormAnswer::Accept(given)
        });
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "form",
            "message": "Who?",
            "requestedSchema": {"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "note": {"type": "string"}
            }}
        }))
        .unwrap();
        let result = serde_json::to_value(answerers.elicit(request).await.unwrap()).unwrap();
        assert_eq!(result["action"], "accept");
        assert_eq!(result["content"], json!({"name": "Ann", "age": 30}));
    }

    #[tokio::test]
    async fn without_an_answerer_a_question_is_refused_clearly() {
        let answerers = Answerers::default();
        let request: ElicitRequestParams = serde_json::from_value(json!({
            "message": "Who?",
            "requestedSchema": {"type": "object", "properties": {}}
        }))
        .unwrap();
        let error = answerers.elicit(request).await.unwrap_err();
        assert!(
            error.message.contains("answers no elicitation"),
            "{error:?}"
        );
    }
}

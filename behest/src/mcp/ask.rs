//! Tools that ask the client: elicitation (a typed question for the user)
//! and sampling (a completion from the client's model), through the
//! [`McpCaller`] of the call.

use rmcp::model::{
    ClientCapabilities, ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction,
    ElicitationSchema, InputRequest,
};
use serde::de::DeserializeOwned;

use super::McpCaller;
use crate::tool::ToolError;

/// The user's answer to [`McpCaller::elicit`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Elicitation<T> {
    /// The user answered.
    Accepted(T),
    /// The user said no; the tool goes on without the answer.
    Declined,
    /// The user dismissed the question.
    Cancelled,
}

/// Why a question to the client got no answer.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpAskError {
    /// The call did not come over MCP (a run, a test): nobody to ask.
    #[error("the call did not come over MCP: there is no client to ask")]
    NoClient,
    /// The client did not declare the capability (in its `initialize`, or
    /// under protocol 2026-07-28 in the request).
    #[error("the MCP client did not declare `{0}` in its capabilities: it cannot be asked")]
    NotSupported(&'static str),
    /// The type asked for is not a form MCP can put to a user: an object of
    /// strings, numbers, booleans and enums, nothing nested.
    #[error("`{type_name}` cannot be asked of a user: {reason}")]
    Form {
        /// The Rust type.
        type_name: &'static str,
        /// What MCP refuses in its schema.
        reason: String,
    },
    /// The client's answer does not fit the type asked for.
    #[error("the client's answer does not fit `{type_name}`: {reason}")]
    Answer {
        /// The Rust type.
        type_name: &'static str,
        /// Why it does not fit.
        reason: String,
    },
    /// The request failed on the way (the client went away, answered with
    /// an error, or timed out).
    #[error("the request to the MCP client failed: {0}")]
    Request(String),
}

impl From<McpAskError> for ToolError {
    fn from(error: McpAskError) -> Self {
        ToolError::execution(error.to_string())
    }
}

impl McpCaller {
    /// Asks the user a typed question through the client (MCP
    /// elicitation): `T`'s JSON Schema is the form, and the answer is read
    /// into `T`. Needs a client that declared `elicitation`.
    ///
    /// ```
    /// use behest::mcp::{Elicitation, McpCaller};
    /// use behest::{tool, ToolContext, ToolError};
    ///
    /// /// Where to ship.
    /// #[behest::data(input)]
    /// struct Address {
    ///     street: String,
    ///     city: String,
    /// }
    ///
    /// /// Ship the order, asking where to.
    /// #[tool]
    /// async fn ship(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    ///     let caller = cx.extension::<McpCaller>().ok_or_else(|| ToolError::execution("not over MCP"))?;
    ///     match caller.elicit::<Address>("Where should it go?").await? {
    ///         Elicitation::Accepted(address) => Ok(format!("shipping to {}", address.city)),
    ///         _ => Ok("not shipped".to_owned()),
    ///     }
    /// }
    /// ```
    pub async fn elicit<T>(&self, message: impl Into<String>) -> Result<Elicitation<T>, McpAskError>
    where
        T: schemars::JsonSchema + DeserializeOwned,
    {
        let type_name = std::any::type_name::<T>();
        self.declared("elicitation", |capabilities| {
            capabilities.elicitation.is_some()
        })?;
        let requested_schema =
            form_of::<T>().map_err(|reason| McpAskError::Form { type_name, reason })?;
        match self.ask_form(message.into(), requested_schema).await? {
            Elicitation::Accepted(content) => serde_json::from_value(content)
                .map(Elicitation::Accepted)
                .map_err(|error| McpAskError::Answer {
                    type_name,
                    reason: error.to_string(),
                }),
            Elicitation::Declined => Ok(Elicitation::Declined),
            Elicitation::Cancelled => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the user to fill in the form `schema` (MCP elicitation), given
    /// as the protocol's JSON: an object schema whose properties are
    /// strings, numbers, integers, booleans, single-select enums (`enum`,
    /// `oneOf` of titled `const`s, or legacy `enumNames`) and multi-select
    /// arrays, each with a `default` if wanted. For a form a Rust type
    /// says, [`elicit`](Self::elicit) is simpler. The answer is the JSON the
    /// user gave.
    ///
    /// # Errors
    /// [`McpAskError::Form`] when `schema` is not such a form, and as
    /// [`elicit`](Self::elicit) otherwise.
    pub async fn elicit_form(
        &self,
        message: impl Into<String>,
        schema: serde_json::Value,
    ) -> Result<Elicitation<serde_json::Value>, McpAskError> {
        self.declared("elicitation", |capabilities| {
            capabilities.elicitation.is_some()
        })?;
        let requested_schema: ElicitationSchema =
            serde_json::from_value(schema).map_err(|error| McpAskError::Form {
                type_name: "the form",
                reason: error.to_string(),
            })?;
        self.ask_form(message.into(), requested_schema).await
    }

    /// Puts `requested_schema` to the user with `message`; the content of
    /// an accepted answer.
    async fn ask_form(
        &self,
        message: String,
        requested_schema: ElicitationSchema,
    ) -> Result<Elicitation<serde_json::Value>, McpAskError> {
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema,
        };
        let answer: ElicitResult = match (&self.asker, &self.peer) {
            (Some(asker), _) => {
                let request = InputRequest::Elicitation(ElicitRequest::new(params));
                read_answer(asker.ask(request).await?, "an elicitation result")?
            }
            (None, Some(peer)) => peer
                .create_elicitation(params)
                .await
                .map_err(|error| McpAskError::Request(error.to_string()))?,
            (None, None) => return Err(McpAskError::NoClient),
        };
        match answer.action {
            ElicitationAction::Accept => {
                Ok(Elicitation::Accepted(answer.content.unwrap_or_default()))
            }
            ElicitationAction::Decline => Ok(Elicitation::Declined),
            // Cancel, or an action of a later protocol: no answer.
            _ => Ok(Elicitation::Cancelled),
        }
    }

    /// Asks the client's model to complete `prompt` in at most
    /// `max_tokens` (MCP sampling), and returns the text of its answer.
    /// Needs a client that declared `sampling`; the client may show the
    /// prompt to its user first.
    // Sampling is deprecated by the newest protocol (SEP-2577), not by the
    // versions behest serves; rmcp refuses it where it is forbidden.
    #[allow(deprecated)]
    pub async fn sample(
        &self,
        prompt: impl Into<String>,
        max_tokens: u32,
    ) -> Result<String, McpAskError> {
        self.declared("sampling", |capabilities| capabilities.sampling.is_some())?;
        use rmcp::model::{
            CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, SamplingMessage,
        };

        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens);
        let answer: CreateMessageResult = match (&self.asker, &self.peer) {
            (Some(asker), _) => {
                let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
                read_answer(asker.ask(request).await?, "a sampling result")?
            }
            (None, Some(peer)) => peer
                .create_message(params)
                .await
                .map_err(|error| McpAskError::Request(error.to_string()))?,
            (None, None) => return Err(McpAskError::NoClient),
        };
        let text: Vec<&str> = answer
            .message
            .content
            .iter()
            .filter_map(|block| block.as_text())
            .map(|text| text.text.as_str())
            .collect();
        Ok(text.join("\n"))
    }
}

impl McpCaller {
    /// Has the rest of this call run as a task, when its tool was given to
    /// [`McpTasks::deferred_tool`](super::McpTasks::deferred_tool) and its
    /// client declared the tasks extension: the request answers with the
    /// task now, and the client polls `tasks/get` for the result (and the
    /// tool's later questions). True when the call is a task from here on
    /// (or was already); false when it goes on in its request, as before.
    ///
    /// ```
    /// use behest::mcp::{Elicitation, McpCaller};
    /// use behest::{tool, ToolContext, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     confirm: bool,
    /// }
    ///
    /// /// Re-index every document, once the user agrees.
    /// #[tool]
    /// async fn reindex(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    ///     let caller = cx.extension::<McpCaller>().ok_or_else(|| ToolError::execution("no MCP caller"))?;
    ///     let agreed = caller.elicit::<Confirm>("Re-index everything?").await;
    ///     if !matches!(agreed, Ok(Elicitation::Accepted(Confirm { confirm: true }))) {
    ///         return Ok("left as it was".to_owned());
    ///     }
    ///     caller.continue_as_task().await;
    ///     // ... the long work ...
    ///     Ok("re-indexed".to_owned())
    /// }
    /// ```
    pub async fn continue_as_task(&self) -> bool {
        match &self.asker {
            Some(asker) => asker.continue_as_task().await,
            None => false,
        }
    }

    /// Whether there is a client to ask that declared `capability`.
    fn declared(
        &self,
        capability: &'static str,
        has: impl Fn(&ClientCapabilities) -> bool,
    ) -> Result<(), McpAskError> {
        if self.peer.is_none() && self.asker.is_none() {
            return Err(McpAskError::NoClient);
        }
        if !self.capabilities.as_ref().is_some_and(has) {
            return Err(McpAskError::NotSupported(capability));
        }
        Ok(())
    }
}

/// The client's answer in a retry's `inputResponses`, read as `what`.
fn read_answer<R: DeserializeOwned>(
    answer: serde_json::Value,
    what: &str,
) -> Result<R, McpAskError> {
    serde_json::from_value(answer).map_err(|error| {
        McpAskError::Request(format!("the client's answer is not {what}: {error}"))
    })
}

/// `T`'s JSON Schema as an MCP form: refs inlined, checked by rmcp's type
/// of a form (an object of primitive properties).
fn form_of<T: schemars::JsonSchema>() -> Result<ElicitationSchema, String> {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|settings| {
        settings.inline_subschemas = true;
    });
    let mut schema = serde_json::to_value(settings.into_generator().into_root_schema_for::<T>())
        .map_err(|error| error.to_string())?;
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    // An optional field is one left out of `required`; a form's property
    // names one type, so the `null` schemars adds for it goes.
    if let Some(properties) = schema
        .get_mut("properties")
        .and_then(serde_json::Value::as_object_mut)
    {
        properties.values_mut().for_each(drop_null);
    }
    serde_json::from_value(schema).map_err(|error| error.to_string())
}

/// `property` without its `null` alternative: `"type": ["string", "null"]`
/// becomes `"type": "string"`, `anyOf: [{..}, {"type": "null"}]` the other
/// branch.
fn drop_null(property: &mut serde_json::Value) {
    use serde_json::Value;

    let is_null = |value: &Value| value == "null" || value["type"] == "null";
    if let Some(Value::Array(types)) = property.get_mut("type") {
        types.retain(|kind| !is_null(kind));
        if let [only] = types.as_slice() {
            property["type"] = only.clone();
        }
    }
    let branch = match property.get("anyOf") {
        Some(Value::Array(branches)) if branches.iter().any(is_null) => {
            let kept: Vec<&Value> = branches.iter().filter(|branch| !is_null(branch)).collect();
            match kept.as_slice() {
                [only] => Some((*only).clone()),
                _ => None,
            }
        }
        _ => None,
    };
    if let (Some(Value::Object(branch)), Some(object)) = (branch, property.as_object_mut()) {
        object.remove("anyOf");
        object.extend(branch);
    }
}

#[cfg(test)]
mod form_tests {
    use rmcp::model::ElicitationSchema;
    use serde_json::{json, Value};

    /// A form given as JSON reaches the client as it was given: defaults
    /// (SEP-1034) and every kind of enum (SEP-1330) kept.
    #[test]
    fn a_form_given_as_json_is_sent_as_given() {
        let forms = [
            json!({"type": "object", "properties": {
                "name": {"type": "string", "description": "User name", "default": "John Doe"},
                "age": {"type": "integer", "description": "User age", "default": 30},
                "score": {"type": "number", "description": "User score", "default": 95.5},
                "status": {"type": "string", "description": "User status",
                    "enum": ["active", "inactive", "pending"], "default": "active"},
                "verified": {"type": "boolean", "description": "Verification status", "default": true}
            }}),
            json!({"type": "object", "properties": {
                "untitledSingle": {"type": "string", "description": "Select one option",
                    "enum": ["option1", "option2", "option3"]},
                "titledSingle": {"type": "string", "description": "Select one option with titles",
                    "oneOf": [{"const": "value1", "title": "First Option"},
                              {"const": "value2", "title": "Second Option"}]},
                "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2"], "enumNames": ["Option One", "Option Two"]},
                "untitledMulti": {"type": "array", "description": "Select multiple options",
                    "minItems": 1, "maxItems": 3,
                    "items": {"type": "string", "enum": ["option1", "option2"]}},
                "titledMulti": {"type": "array", "description": "Select multiple options with titles",
                    "minItems": 1, "maxItems": 3,
                    "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                        {"const": "value2", "title": "Second Choice"}]}}
            }}),
        ];
        for form in forms {
            let schema: ElicitationSchema = serde_json::from_value(form.clone()).unwrap();
            let sent: Value = serde_json::to_value(&schema).unwrap();
            for (name, property) in form["properties"].as_object().unwrap() {
                assert_eq!(&sent["properties"][name], property, "{name}: {sent}");
            }
        }
    }
}

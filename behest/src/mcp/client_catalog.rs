//! A server's resources and prompts, read through an [`McpClient`]: listed,
//! read as [`ResourceContent`], and a prompt's messages as the
//! conversation a run starts from.

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::Value;

use super::catalog::ResourceContent;
use super::client::{McpClient, McpClientError};
use crate::conversation::{AssistantMessage, ContentPart, Message};
use crate::tool::MediaSource;

/// A resource or resource template a server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedResource {
    /// Its URI, or for a template the template as written.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Its title, for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its media type.
    pub media_type: Option<String>,
}

/// A prompt's argument, as a server lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: Option<String>,
    /// Whether the prompt needs it.
    pub required: bool,
}

/// A prompt a server lists.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListedPrompt {
    /// Its name.
    pub name: String,
    /// Its title, for people.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<ListedArgument>,
}

fn text(value: &Value, key: &str) -> Option<String> {
    value[key].as_str().map(str::to_owned)
}

fn listed(value: &Value, uri_key: &str) -> ListedResource {
    ListedResource {
        uri: text(value, uri_key).unwrap_or_default(),
        name: text(value, "name").unwrap_or_default(),
        title: text(value, "title"),
        description: text(value, "description"),
        media_type: text(value, "mimeType"),
    }
}

/// `value` as JSON, or why not, said as `what`.
fn json_of<T: serde::Serialize>(value: &T, what: &str) -> Result<Value, McpClientError> {
    serde_json::to_value(value)
        .map_err(|error| McpClientError::Catalog(format!("{what} could not be read: {error}")))
}

/// The entries of a list the server gave for `what` (or its refusal), as
/// JSON.
fn entries<T: serde::Serialize, E: std::fmt::Display>(
    listed: Result<Vec<T>, E>,
    what: &str,
) -> Result<Vec<Value>, McpClientError> {
    let listed = listed.map_err(|error| McpClientError::Catalog(format!("{what}: {error}")))?;
    match json_of(&listed, what)? {
        Value::Array(entries) => Ok(entries),
        _ => Ok(Vec::new()),
    }
}

/// A resource's contents as MCP gives them (`text` or `blob`).
fn content_of(contents: &Value) -> ResourceContent {
    let content = match text(contents, "blob") {
        Some(blob) => ResourceContent::base64(blob),
        None => ResourceContent::text(text(contents, "text").unwrap_or_default()),
    };
    match text(contents, "mimeType") {
        Some(media_type) => content.with_media_type(media_type),
        None => content,
    }
}

/// A prompt message's content as a run reads it: text as text, an image
/// as an image part of the user's message, an embedded text resource as
/// its text; anything else named in a line.
fn part_of(content: &Value) -> ContentPart {
    let named = |what: &str| ContentPart::Text {
        text: format!("[{what}]"),
    };
    match content["type"].as_str() {
        Some("text") => ContentPart::Text {
            text: text(content, "text").unwrap_or_default(),
        },
        Some("image") => match (text(content, "mimeType"), text(content, "data")) {
            (Some(media_type), Some(data)) => ContentPart::Image {
                source: MediaSource::base64(media_type, data),
            },
            _ => named("image"),
        },
        Some("resource") => {
            let resource = &content["resource"];
            match text(resource, "text") {
                Some(text) => ContentPart::Text { text },
                None => named(&format!(
                    "resource: {}",
                    text(resource, "uri").unwrap_or_default()
                )),
            }
        }
        Some(other) => named(other),
        None => named("content"),
    }
}

impl McpClient {
    /// The server's resources, every page.
    ///
    /// # Errors
    /// [`McpClientError::Catalog`] when the server refuses or the list
    /// cannot be read.
    pub async fn resources(&self) -> Result<Vec<ListedResource>, McpClientError> {
        let resources = entries(self.peer().list_all_resources().await, "resources/list")?;
        Ok(resources
            .iter()
            .map(|resource| listed(resource, "uri"))
            .collect())
    }

    /// The server's resource templates, every page (their `uri` the
    /// template as written).
    ///
    /// # Errors
    /// As [`resources`](Self::resources).
    pub async fn resource_templates(&self) -> Result<Vec<ListedResource>, McpClientError> {
        let templates = entries(
            self.peer().list_all_resource_templates().await,
            "resources/templates/list",
        )?;
        Ok(templates
            .iter()
            .map(|template| listed(template, "uriTemplate"))
            .collect())
    }

    /// Reads the resource at `uri`: each of its contents.
    ///
    /// # Errors
    /// [`McpClientError::Catalog`] with the server's words when it has no
    /// such resource or its read fails.
    pub async fn read(&self, uri: &str) -> Result<Vec<ResourceContent>, McpClientError> {
        let read = self
            .peer()
            .read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|error| McpClientError::Catalog(format!("reading `{uri}`: {error}")))?;
        let read = json_of(&read, "resources/read")?;
        Ok(read["contents"]
            .as_array()
            .into_iter()
            .flatten()
            .map(content_of)
            .collect())
    }

    /// The server's prompts, every page.
    ///
    /// # Errors
    /// As [`resources`](Self::resources).
    pub async fn prompts(&self) -> Result<Vec<ListedPrompt>, McpClientError> {
        let prompts = entries(self.peer().list_all_prompts().await, "prompts/list")?;
        Ok(prompts
            .iter()
            .map(|prompt| ListedPrompt {
                name: text(prompt, "name").unwrap_or_default(),
                title: text(prompt, "title"),
                description: text(prompt, "description"),
                arguments: prompt["arguments"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|argument| ListedArgument {
                        name: text(argument, "name").unwrap_or_default(),
                        description: text(argument, "description"),
                        required: argument["required"].as_bool().unwrap_or(false),
                    })
                    .collect(),
            })
            .collect())
    }

    /// The prompt `name` with `arguments`, as messages a run starts from
    /// (`Agent::invoke(messages)`): the user's text and images, the
    /// assistant's text, an embedded text resource as its text.
    ///
    /// # Errors
    /// [`McpClientError::Catalog`] with the server's words when it has no
    /// such prompt or refuses the arguments.
    pub async fn prompt<K, V>(
        &self,
        name: &str,
        arguments: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Vec<Message>, McpClientError>
    where
        K: Into<String>,
        V: Into<String>,
    {
        let arguments: serde_json::Map<String, Value> = arguments
            .into_iter()
            .map(|(key, value)| (key.into(), Value::String(value.into())))
            .collect();
        let got = self
            .peer()
            .get_prompt(GetPromptRequestParams::new(name).with_arguments(arguments))
            .await
            .map_err(|error| McpClientError::Catalog(format!("the prompt `{name}`: {error}")))?;
        let got = json_of(&got, "prompts/get")?;
        Ok(got["messages"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|message| {
                let part = part_of(&message["content"]);
                match (message["role"].as_str(), part) {
                    (Some("assistant"), ContentPart::Text { text }) => {
                        Message::Assistant(AssistantMessage::text(text))
                    }
                    // An assistant's message holds text only: an image
                    // is named.
                    (Some("assistant"), _) => Message::Assistant(AssistantMessage::text(format!(
                        "[{}]",
                        message["content"]["type"].as_str().unwrap_or("content")
                    ))),
                    (_, ContentPart::Text { text }) => Message::user(text),
                    (_, part) => Message::user_parts([part]),
                }
            })
            .collect())
    }
}

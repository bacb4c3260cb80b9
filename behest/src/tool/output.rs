use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{MediaSource, ToolResult};

/// Content of a tool's output beside its text, JSON and images, in MCP's
/// terms: served over MCP as the content block it is, and read by a model
/// as text (a text resource's text, a line naming anything else), since
/// no model provider takes these in a tool's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Attachment {
    /// Audio, as base64 data.
    Audio {
        /// Its media type (`audio/wav`).
        media_type: String,
        /// The base64 data.
        data: String,
    },
    /// A resource's contents, embedded: text or base64 bytes.
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its media type, if known.
        #[serde(skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
        /// Its text, for a text resource.
        #[serde(skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// Its bytes in base64, for a binary one.
        #[serde(skip_serializing_if = "Option::is_none")]
        blob: Option<String>,
    },
    /// A link to a resource the client can read itself.
    ResourceLink {
        /// The resource's URI.
        uri: String,
        /// Its name.
        name: String,
        /// What it is, if said.
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// Its media type, if known.
        #[serde(skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
}

impl Attachment {
    /// Audio from base64 `data` of `media_type`.
    pub fn audio(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Audio {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// A text resource at `uri`, embedded.
    pub fn text_resource(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::Resource {
            uri: uri.into(),
            media_type: Some("text/plain".to_owned()),
            text: Some(text.into()),
            blob: None,
        }
    }

    /// A binary resource at `uri` of `media_type`, embedded as base64.
    pub fn blob_resource(
        uri: impl Into<String>,
        media_type: impl Into<String>,
        blob: impl Into<String>,
    ) -> Self {
        Self::Resource {
            uri: uri.into(),
            media_type: Some(media_type.into()),
            text: None,
            blob: Some(blob.into()),
        }
    }

    /// A link to the resource at `uri`, named `name`.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self::ResourceLink {
            uri: uri.into(),
            name: name.into(),
            description: None,
            media_type: None,
        }
    }

    /// What a model reads of it: a text resource's text; a line naming
    /// anything else.
    pub fn model_text(&self) -> String {
        match self {
            Self::Audio { media_type, .. } => format!("[audio: {media_type}]"),
            Self::Resource {
                text: Some(text), ..
            } => text.clone(),
            Self::Resource {
                uri, media_type, ..
            } => match media_type {
                Some(media_type) => format!("[resource: {uri} ({media_type})]"),
                None => format!("[resource: {uri}]"),
            },
            Self::ResourceLink {
                uri,
                name,
                description,
                ..
            } => match description {
                Some(description) => format!("[resource link: {name} <{uri}>: {description}]"),
                None => format!("[resource link: {name} <{uri}>]"),
            },
        }
    }

    fn encoded_len(&self) -> usize {
        match self {
            Self::Audio { media_type, data } => media_type.len() + data.len(),
            Self::Resource {
                uri,
                media_type,
                text,
                blob,
            } => {
                uri.len()
                    + media_type.as_ref().map_or(0, String::len)
                    + text.as_ref().map_or(0, String::len)
                    + blob.as_ref().map_or(0, String::len)
            }
            Self::ResourceLink {
                uri,
                name,
                description,
                media_type,
            } => {
                uri.len()
                    + name.len()
                    + description.as_ref().map_or(0, String::len)
                    + media_type.as_ref().map_or(0, String::len)
            }
        }
    }
}

/// What a tool returns: text, structured JSON, or both.
///
/// Providers that take only text receive [`ToolOutput::to_text`]: the text
/// when there is some, otherwise the JSON serialized.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ToolOutput {
    /// Text for the model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Structured output, matching the tool's output schema if it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured: Option<Value>,
    /// Images for the model to see, where its provider takes them in a
    /// tool's result (Anthropic, Responses, Gemini 3, MCP); Chat gets the
    /// text only.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<MediaSource>,
    /// Audio, embedded resources and resource links: MCP content blocks
    /// over MCP, text for a model (see [`Attachment`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The tokens the tool spent on models of its own (a tool that asks a
    /// model, an agent run as a tool), counted in the calling run's usage
    /// and limits (an agent run as a tool counts as it spends, and this
    /// shows what it spent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::usage::Usage>,
}

impl ToolOutput {
    /// Text output.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: Some(text.into()),
            ..Self::default()
        }
    }

    /// Structured JSON output.
    pub fn json(value: impl Into<Value>) -> Self {
        Self {
            structured: Some(value.into()),
            ..Self::default()
        }
    }

    /// An output with nothing in it, for tools that only act.
    pub fn empty() -> Self {
        Self::default()
    }

    /// Adds text next to structured output.
    #[must_use]
    pub fn with_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Adds an image for the model to see.
    #[must_use]
    pub fn with_image(mut self, image: MediaSource) -> Self {
        self.images.push(image);
        self
    }

    /// Adds audio, an embedded resource or a resource link.
    #[must_use]
    pub fn with_attachment(mut self, attachment: Attachment) -> Self {
        self.attachments.push(attachment);
        self
    }

    /// Adds structured output next to text.
    #[must_use]
    pub fn with_json(mut self, value: impl Into<Value>) -> Self {
        self.structured = Some(value.into());
        self
    }

    /// The output as one text: the text if set, else the JSON, else `""`.
    pub fn to_text(&self) -> String {
        match (&self.text, &self.structured) {
            (Some(text), _) => text.clone(),
            (None, Some(value)) => value.to_string(),
            (None, None) => String::new(),
        }
    }

    /// The PDFs among the attachments (embedded `application/pdf`
    /// resources), which some providers take as documents.
    pub fn documents(&self) -> impl Iterator<Item = MediaSource> + '_ {
        self.attachments
            .iter()
            .filter_map(|attachment| match attachment {
                Attachment::Resource {
                    media_type: Some(media_type),
                    blob: Some(blob),
                    ..
                } if super::media::is_pdf(media_type) => {
                    Some(MediaSource::base64("application/pdf", blob.clone()))
                }
                _ => None,
            })
    }

    /// What a model reads: [`to_text`](Self::to_text), then each
    /// attachment's [`model_text`](Attachment::model_text) on a line.
    pub fn to_model_text(&self) -> String {
        let mut text = self.to_text();
        for attachment in &self.attachments {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&attachment.model_text());
        }
        text
    }

    /// Approximate encoded size in bytes, used for the output limit.
    pub(crate) fn encoded_len(&self) -> usize {
        self.text.as_ref().map_or(0, String::len)
            + self
                .structured
                .as_ref()
                .map_or(0, crate::json_text::encoded_len_estimate)
            + self
                .images
                .iter()
                .map(MediaSource::encoded_len)
                .sum::<usize>()
            + self
                .attachments
                .iter()
                .map(Attachment::encoded_len)
                .sum::<usize>()
    }
}

/// A value a tool function can return as it is, without going through
/// `Serialize`: text, a [`ToolOutput`], `()` or a JSON [`Value`].
///
/// `#[tool]` functions may also return any `T: Serialize` (structured
/// output, with an output schema when `T: JsonSchema`) and `Result<T, E>`
/// of these, where `E` is [`ToolError`](super::ToolError) or implements `Display`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be returned from a tool",
    label = "this type cannot become tool output",
    note = "return `String`, `&'static str`, `ToolOutput`, `()`, a type that implements `serde::Serialize`, or `Result<T, E>` of those with `E: Display`"
)]
pub trait IntoToolOutput {
    /// Converts the value into the tool's output.
    fn into_tool_output(self) -> ToolResult<ToolOutput>;
}

impl IntoToolOutput for ToolOutput {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(self)
    }
}

impl IntoToolOutput for String {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for &'static str {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for Cow<'static, str> {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(self))
    }
}

impl IntoToolOutput for () {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::empty())
    }
}

impl IntoToolOutput for Value {
    fn into_tool_output(self) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::json(self))
    }
}

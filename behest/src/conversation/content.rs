//! What a user turn may carry beside text: images and documents.

use serde::{Deserialize, Serialize};

/// One part of a user turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (PNG, JPEG, GIF, WebP).
    Image {
        /// Where its bytes are.
        source: MediaSource,
    },
    /// A document, such as a PDF (Anthropic, Gemini, OpenAI's file inputs).
    Document {
        /// Where its bytes are.
        source: MediaSource,
    },
}

/// Where an image's or a document's bytes are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum MediaSource {
    /// At a URL the provider fetches.
    Url {
        /// The URL.
        url: String,
        /// Its media type, when known (Gemini needs one for a file URI).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        media_type: Option<String>,
    },
    /// In the request, base64-encoded.
    Base64 {
        /// Its media type: `image/png`, `application/pdf`, ….
        media_type: String,
        /// The bytes, base64-encoded.
        data: String,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }

    /// An image at a URL.
    pub fn image_url(url: impl Into<String>) -> Self {
        Self::Image {
            source: MediaSource::url(url),
        }
    }

    /// An image in the request: its media type and base64 bytes.
    pub fn image_base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Image {
            source: MediaSource::base64(media_type, data),
        }
    }

    /// A document at a URL, of this media type (`application/pdf`).
    pub fn document_url(url: impl Into<String>, media_type: impl Into<String>) -> Self {
        Self::Document {
            source: MediaSource::Url {
                url: url.into(),
                media_type: Some(media_type.into()),
            },
        }
    }

    /// A document in the request: its media type and base64 bytes.
    pub fn document_base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Document {
            source: MediaSource::base64(media_type, data),
        }
    }
}

impl MediaSource {
    /// At a URL, of a media type not given.
    pub fn url(url: impl Into<String>) -> Self {
        Self::Url {
            url: url.into(),
            media_type: None,
        }
    }

    /// In the request.
    pub fn base64(media_type: impl Into<String>, data: impl Into<String>) -> Self {
        Self::Base64 {
            media_type: media_type.into(),
            data: data.into(),
        }
    }

    /// A `data:` URL of base64 bytes, or the URL itself: what OpenAI takes.
    pub(crate) fn as_url(&self) -> String {
        match self {
            Self::Url { url, .. } => url.clone(),
            Self::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        }
    }

    /// Reads a `data:` URL back; any other URL is a URL.
    pub(crate) fn from_url(url: &str) -> Self {
        let inline = url
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"));
        match inline {
            Some((media_type, data)) => Self::base64(media_type, data),
            None => Self::url(url),
        }
    }
}

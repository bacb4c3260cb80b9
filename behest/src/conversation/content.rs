//! What a user turn may carry beside text: images and documents.

use serde::{Deserialize, Serialize};

pub use crate::tool::MediaSource;

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

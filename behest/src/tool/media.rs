//! Where an image's or a document's bytes are: in a user turn, or in a
//! tool's output.

use serde::{Deserialize, Serialize};

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

/// Whether `media_type` names a PDF, whatever its case or parameters.
pub(crate) fn is_pdf(media_type: &str) -> bool {
    media_type
        .split(';')
        .next()
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/pdf"))
}

impl MediaSource {
    /// Whether it is a PDF, as far as its media type says.
    pub fn is_pdf(&self) -> bool {
        match self {
            Self::Url { media_type, .. } => media_type.as_deref().is_some_and(is_pdf),
            Self::Base64 { media_type, .. } => is_pdf(media_type),
        }
    }

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

    /// Its size in a request, in bytes: the URL or the base64 text.
    pub(crate) fn encoded_len(&self) -> usize {
        match self {
            Self::Url { url, .. } => url.len(),
            Self::Base64 { data, .. } => data.len(),
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

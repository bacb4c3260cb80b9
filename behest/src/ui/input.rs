//! What a front end's request asks of a run, whichever protocol carried
//! it: a user's new message, or answers to the approvals a paused run
//! asked for.

use serde_json::Value;

use crate::conversation::{ContentPart, Message};
use crate::tool::{MediaSource, ToolOutput};

/// What a request asks.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Turn {
    /// Run the agent on the session's conversation and this message.
    Say(Message),
    /// Answer approvals of a paused run, by their ids.
    Answer(Vec<Answer>),
}

/// A person's answer to one approval.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Answer {
    /// The approval's id, as [`approval_id`] made it.
    pub id: String,
    /// Whether the call may run.
    pub approved: bool,
    /// Why not, for the model to read.
    pub reason: Option<String>,
}

/// Why a front end's request was refused before any run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UiInputError {
    /// The body is not the protocol's request.
    #[error("the request body is not {protocol}: {error}")]
    Body {
        /// The request that was expected.
        protocol: &'static str,
        /// What did not fit.
        error: serde_json::Error,
    },
    /// The request has no message.
    #[error("the request has no message")]
    NoMessage,
    /// The last message asks nothing new: not a user's message, and no
    /// approval answered.
    #[error("the last message is neither a user's message nor an answer to an approval")]
    NothingNew,
    /// The last message's role is not one a person sends.
    #[error("a message of role `{0}` cannot start a run: send the user's message")]
    Role(String),
    /// A part of the message could not be read.
    #[error("a message part could not be read: {0}")]
    Part(&'static str),
    /// A file part that is not a data URL or an http(s) URL.
    #[error("a file part must be a `data:` or `http(s):` URL with its media type")]
    File,
    /// A user's message with nothing in it.
    #[error("the user's message is empty")]
    Empty,
    /// What the request asks is not supported.
    #[error("not supported: {0}")]
    Unsupported(String),
    /// An approval's id that no run of this server made.
    #[error("`{0}` is not an approval this chat waits for")]
    Approval(String),
}

/// The id an approval is shown by: the run's id and the call's path, so
/// that an answer reaches the paused run that asked, at any depth.
pub(super) fn approval_id(run_id: &str, call_path: &str) -> String {
    format!("{run_id}:{call_path}")
}

/// The run's id and the call's path an approval id names.
pub(super) fn parse_approval_id(id: &str) -> Result<(&str, &str), UiInputError> {
    id.split_once(':')
        .filter(|(run, path)| !run.is_empty() && !path.is_empty())
        .ok_or_else(|| UiInputError::Approval(id.to_owned()))
}

/// A user's message of `parts`: plain text when it is one text part.
pub(super) fn user_message(mut parts: Vec<ContentPart>) -> Result<Message, UiInputError> {
    match parts.as_slice() {
        [] => Err(UiInputError::Empty),
        [ContentPart::Text { .. }] => match parts.remove(0) {
            ContentPart::Text { text } => Ok(Message::user(text)),
            _ => unreachable!("matched as text"),
        },
        _ => Ok(Message::user_parts(parts)),
    }
}

/// An image or a document from its media type and URL (a `data:` URL
/// with base64 data, or an http(s) URL).
pub(super) fn file_part(
    media_type: Option<&str>,
    url: Option<&str>,
) -> Result<ContentPart, UiInputError> {
    let (Some(media_type), Some(url)) = (media_type, url) else {
        return Err(UiInputError::File);
    };
    let source = if let Some(data) = url.strip_prefix("data:") {
        let (_, data) = data.split_once(";base64,").ok_or(UiInputError::File)?;
        MediaSource::base64(media_type, data)
    } else if url.starts_with("https://") || url.starts_with("http://") {
        MediaSource::url(url)
    } else {
        return Err(UiInputError::File);
    };
    Ok(if media_type.starts_with("image/") {
        ContentPart::Image { source }
    } else {
        ContentPart::Document { source }
    })
}

/// A call's arguments as the front end shows them: the JSON object, or
/// the text the model wrote when it is not JSON.
pub(super) fn tool_value(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) => serde_json::from_str(text).unwrap_or_else(|_| arguments.clone()),
        _ => arguments.clone(),
    }
}

/// A call's arguments as JSON text, for a protocol that streams them.
pub(super) fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(text) => text.clone(),
        _ => arguments.to_string(),
    }
}

/// A tool's output as the front end shows it: its structured value, else
/// its text.
pub(super) fn output_value(output: &ToolOutput) -> Value {
    match (&output.structured, &output.text) {
        (Some(structured), _) => structured.clone(),
        (None, Some(text)) => Value::String(text.clone()),
        (None, None) => Value::Null,
    }
}

/// A tool's output as text, for a protocol whose results are strings.
pub(super) fn output_text(output: &ToolOutput) -> String {
    match (&output.text, &output.structured) {
        (Some(text), _) => text.clone(),
        (None, Some(structured)) => structured.to_string(),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_approval_id_names_the_run_and_the_path() {
        let id = approval_id("run_1f_0", "billing#c3/refund#c1");
        assert_eq!(
            parse_approval_id(&id).unwrap(),
            ("run_1f_0", "billing#c3/refund#c1")
        );
        for bad in ["", "run", ":c1", "run:"] {
            assert!(matches!(
                parse_approval_id(bad),
                Err(UiInputError::Approval(_))
            ));
        }
    }

    #[test]
    fn file_parts_take_data_and_http_urls_only() {
        let image = file_part(Some("image/png"), Some("data:image/png;base64,iVBO")).unwrap();
        assert!(matches!(image, ContentPart::Image { .. }));
        let pdf = file_part(Some("application/pdf"), Some("https://example.com/a.pdf")).unwrap();
        assert!(matches!(pdf, ContentPart::Document { .. }));
        for (media, url) in [
            (None, Some("data:image/png;base64,AA")),
            (Some("image/png"), Some("file:///etc/passwd")),
            (Some("image/png"), Some("data:image/png,AA")),
        ] {
            assert!(matches!(file_part(media, url), Err(UiInputError::File)));
        }
    }
}

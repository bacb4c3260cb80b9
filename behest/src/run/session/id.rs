//! The names of sessions and of the runs paused in them, checked where
//! they come in: from a URL, a header, a user.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::SessionError;

/// The longest id a session or a paused run may have, in bytes.
pub const MAX_ID_BYTES: usize = 256;

/// The id of a session: 1 to [`MAX_ID_BYTES`] bytes, no control
/// characters. Any other string is refused by [`SessionId::new`] with
/// [`SessionError::BadId`], so a store never sees one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SessionId(String);

impl SessionId {
    /// The id `id`, if it is one.
    ///
    /// ```
    /// use behest::run::SessionId;
    ///
    /// assert!(SessionId::new("user-42").is_ok());
    /// assert!(SessionId::new("").is_err());
    /// assert!(SessionId::new("a\u{0}b").is_err());
    /// ```
    pub fn new(id: impl Into<String>) -> Result<Self, SessionError> {
        let id = id.into();
        check_id("session", &id)?;
        Ok(Self(id))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = String::deserialize(deserializer)?;
        Self::new(id).map_err(serde::de::Error::custom)
    }
}

/// Refuses an id that is empty, longer than [`MAX_ID_BYTES`] or holds a
/// control character; `what` names it in the error.
pub(crate) fn check_id(what: &'static str, id: &str) -> Result<(), SessionError> {
    let reason = if id.is_empty() {
        "it is empty".to_owned()
    } else if id.len() > MAX_ID_BYTES {
        format!(
            "it is {} bytes long, over the limit of {MAX_ID_BYTES}",
            id.len()
        )
    } else if let Some(at) = id.find(char::is_control) {
        format!("it holds a control character at byte {at}")
    } else {
        return Ok(());
    };
    Err(SessionError::BadId { what, reason })
}

//! The contract of a session store, and the values that cross it.

use std::time::SystemTime;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::super::{Message, RunState};
use super::{SessionError, SessionId};

/// The most one write may hold, in bytes of its encoded messages and
/// paused run: 16 MiB. A larger write is refused with
/// [`SessionError::TooLarge`] before the store sees it.
pub const MAX_WRITE_BYTES: usize = 16 << 20;

/// Where conversations are kept between runs, by session: their messages
/// and the runs paused in them.
///
/// Every write is a [`Commit`] against the version the writer read: it is
/// kept whole and the version goes up by one, or, when the session moved
/// on since, it is refused with [`SessionError::Conflict`] and nothing of
/// it is kept. Two writers that race never lose or repeat a message; the
/// loser reads again and retries. A store is shared by every process that
/// serves the sessions.
///
/// Implementations: [`MemoryStore`](super::MemoryStore) here, SQLite and
/// PostgreSQL in the `behest-sessions` crate.
pub trait SessionStore: Send + Sync + 'static {
    /// The session's messages, version and paused runs; a session never
    /// written is empty at version 0, and one deleted is empty at a
    /// version past its last, so that a writer who read it before the
    /// delete gets a conflict rather than writing onto a new session.
    fn load<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<Loaded, SessionError>>;

    /// Writes `commit` if the session is still at `expected`; gives the
    /// new version.
    fn commit<'a>(
        &'a self,
        id: &'a SessionId,
        expected: u64,
        commit: Commit<'a>,
    ) -> BoxFuture<'a, Result<u64, SessionError>>;

    /// Up to `limit` sessions, in the order of their ids, after `after`.
    fn list<'a>(
        &'a self,
        after: Option<&'a SessionId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, SessionError>>;

    /// Deletes the session, its messages and paused runs; whether it was
    /// there.
    fn delete<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<bool, SessionError>>;

    /// Retention: deletes every session (with its paused runs) last
    /// written before `idle_since`; how many.
    fn prune(&self, idle_since: SystemTime) -> BoxFuture<'_, Result<u64, SessionError>>;
}

/// A session as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// Its messages, in order.
    pub messages: Vec<Message>,
    /// Its version: the number of commits it has had.
    pub version: u64,
    /// The runs paused in it, waiting for answers.
    pub paused: Vec<PausedRun>,
}

/// A session in a [`list`](SessionStore::list).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    /// Its id.
    pub id: SessionId,
    /// Its version.
    pub version: u64,
    /// How many messages it holds.
    pub messages: u64,
    /// When it was last written.
    pub updated_at: SystemTime,
}

/// One write to a session: its messages, a paused run, or both at once.
#[derive(Debug, Clone, Copy, Default)]
pub struct Commit<'a> {
    /// What becomes of the messages.
    pub messages: Option<Change<'a>>,
    /// What becomes of a paused run.
    pub run: Option<RunChange<'a>>,
}

/// What a commit does to a session's messages.
#[derive(Debug, Clone, Copy)]
pub enum Change<'a> {
    /// These messages follow the others.
    Append(&'a [Message]),
    /// These messages are the session now (a conversation compacted).
    Replace(&'a [Message]),
}

/// What a commit does to a paused run.
#[derive(Debug, Clone, Copy)]
pub enum RunChange<'a> {
    /// Keeps the run (a new one, or one with new answers), by its id.
    Save(&'a PausedRun),
    /// The run is over: forget it.
    Remove(&'a str),
}

/// A run paused in a session, waiting for answers: its state, and
/// whether a process is finishing it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PausedRun {
    /// The run's state.
    pub state: RunState,
    /// Until when the process finishing the run holds it; `None` while it
    /// waits for answers. Past that time, another process may finish it.
    pub claimed_until: Option<SystemTime>,
}

impl PausedRun {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        self.state.run_id()
    }
}

impl Change<'_> {
    /// The messages it writes.
    pub fn messages(&self) -> &[Message] {
        match self {
            Change::Append(messages) | Change::Replace(messages) => messages,
        }
    }
}

/// The encodings a store keeps: each message as its own JSON text, a
/// paused run as one. For stores written outside this crate.
pub mod codec {
    use super::*;

    /// The messages of `commit`, each as its role and the JSON of the
    /// rest, and its paused run as JSON; refused when together they pass
    /// [`MAX_WRITE_BYTES`].
    ///
    /// A message is kept apart from its role so that it reads back
    /// straight into its own type: twice as fast as reading a tagged
    /// [`Message`], which is what loading a long session costs.
    pub fn encode(commit: &Commit<'_>) -> Result<Encoded, SessionError> {
        let messages: Vec<(&'static str, String)> = commit
            .messages
            .map(|change| change.messages().iter().map(encode_message).collect())
            .transpose()?
            .unwrap_or_default();
        let run = match commit.run {
            Some(RunChange::Save(run)) => Some(serde_json::to_string(run).map_err(unencodable)?),
            _ => None,
        };
        let bytes = messages.iter().map(|(_, body)| body.len()).sum::<usize>()
            + run.as_ref().map_or(0, String::len);
        if bytes > MAX_WRITE_BYTES {
            return Err(SessionError::TooLarge {
                bytes,
                limit: MAX_WRITE_BYTES,
            });
        }
        Ok(Encoded { messages, run })
    }

    fn unencodable(error: serde_json::Error) -> SessionError {
        SessionError::Backend(Box::new(error))
    }

    #[derive(Serialize, Deserialize)]
    struct Text<T> {
        text: T,
    }

    #[derive(Serialize, Deserialize)]
    struct Parts<T> {
        parts: T,
    }

    fn encode_message(message: &Message) -> Result<(&'static str, String), SessionError> {
        let (role, body) = match message {
            Message::System { text } => ("system", serde_json::to_string(&Text { text })),
            Message::User { text } => ("user", serde_json::to_string(&Text { text })),
            Message::UserParts { parts } => ("user_parts", serde_json::to_string(&Parts { parts })),
            Message::Assistant(reply) => ("assistant", serde_json::to_string(reply)),
            Message::ToolResult(result) => ("tool_result", serde_json::to_string(result)),
        };
        Ok((role, body.map_err(unencodable)?))
    }

    /// A commit encoded.
    #[derive(Debug, Clone, Default)]
    pub struct Encoded {
        /// The messages, in order: each its role and the JSON of the rest.
        pub messages: Vec<(&'static str, String)>,
        /// The paused run saved, as JSON.
        pub run: Option<String>,
    }

    /// The message at `at` of `session`, from its role and JSON.
    pub fn message(
        session: &SessionId,
        at: u64,
        role: &str,
        body: &str,
    ) -> Result<Message, SessionError> {
        let read = match role {
            "system" => serde_json::from_str(body).map(|Text { text }| Message::System { text }),
            "user" => serde_json::from_str(body).map(|Text { text }| Message::User { text }),
            "user_parts" => {
                serde_json::from_str(body).map(|Parts { parts }| Message::UserParts { parts })
            }
            "assistant" => serde_json::from_str(body).map(Message::Assistant),
            "tool_result" => serde_json::from_str(body).map(Message::ToolResult),
            other => {
                return Err(SessionError::Corrupt {
                    session: session.to_string(),
                    what: format!("message {at}"),
                    reason: format!("`{other}` is not a role"),
                })
            }
        };
        read.map_err(|error| SessionError::Corrupt {
            session: session.to_string(),
            what: format!("message {at}"),
            reason: error.to_string(),
        })
    }

    /// A paused run of `session`, from its JSON: one written by a newer
    /// version is refused with [`SessionError::Format`].
    pub fn paused_run(session: &SessionId, text: &str) -> Result<PausedRun, SessionError> {
        let corrupt = |reason: String| SessionError::Corrupt {
            session: session.to_string(),
            what: "a paused run".to_owned(),
            reason,
        };
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|error| corrupt(error.to_string()))?;
        if let Some(found) = value
            .pointer("/state/format")
            .and_then(serde_json::Value::as_u64)
        {
            let supported = u64::from(RunState::FORMAT);
            if found > supported {
                return Err(SessionError::Format {
                    what: format!("a paused run of session `{session}`"),
                    found,
                    supported,
                });
            }
        }
        serde_json::from_value(value).map_err(|error| corrupt(error.to_string()))
    }
}

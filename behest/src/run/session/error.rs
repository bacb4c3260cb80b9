//! What can go wrong keeping a session.

use super::super::ControlError;

/// Why a session could not be read, written or gone on with. Every
/// variant leaves the store as it was: a write is whole or not at all.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// An id that cannot name a session or a run (see
    /// [`SessionId`](super::SessionId)).
    #[error("not a valid {what} id: {reason}")]
    BadId {
        /// `"session"` or `"run"`.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Someone else wrote the session since it was read at `expected`:
    /// read it again and retry. Nothing of this write was kept.
    #[error(
        "session `{session}` changed since it was read at version {expected}; read it again and retry"
    )]
    Conflict {
        /// The session.
        session: String,
        /// The version the write expected.
        expected: u64,
    },
    /// A run of the session is paused, waiting for answers: the session
    /// goes on once that run is answered and finished (or discarded with
    /// [`Session::discard`](super::Session::discard)).
    #[error("session `{session}` has a paused run `{run_id}`; answer or discard it first")]
    Busy {
        /// The session.
        session: String,
        /// The paused run.
        run_id: String,
    },
    /// The session holds no paused run of that id (it never paused here,
    /// or it has finished).
    #[error("session `{session}` has no paused run `{run_id}`")]
    NoRun {
        /// The session.
        session: String,
        /// The run asked for.
        run_id: String,
    },
    /// Another process is finishing the run now; its outcome will be in
    /// the session.
    #[error("run `{run_id}` is being finished by another process")]
    Claimed {
        /// The run.
        run_id: String,
    },
    /// The answer was refused by the paused run: no call of that id waits,
    /// it was answered already, or it waits for another kind of answer.
    #[error(transparent)]
    Answer(#[from] ControlError),
    /// A write larger than [`MAX_WRITE_BYTES`](super::MAX_WRITE_BYTES).
    #[error("a write of {bytes} bytes is over the limit of {limit} bytes")]
    TooLarge {
        /// The write's size, as its messages encode.
        bytes: usize,
        /// The limit.
        limit: usize,
    },
    /// What the store holds cannot be read: a row written by something
    /// else, or changed by hand.
    #[error("session `{session}` holds {what} that cannot be read: {reason}")]
    Corrupt {
        /// The session.
        session: String,
        /// What: `"message 3"`, `"paused run r-1"`.
        what: String,
        /// Why.
        reason: String,
    },
    /// Something written by a newer version of this crate: a paused run's
    /// state, or a database whose schema is newer.
    #[error("{what} has format {found}; this version reads up to {supported}")]
    Format {
        /// What.
        what: String,
        /// The format found.
        found: u64,
        /// The newest this version reads.
        supported: u64,
    },
    /// The store itself failed: the database is gone, a connection broke.
    #[error("the session store failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

impl SessionError {
    /// Whether reading again and retrying may succeed
    /// ([`Conflict`](Self::Conflict)).
    pub fn is_conflict(&self) -> bool {
        matches!(self, Self::Conflict { .. })
    }
}

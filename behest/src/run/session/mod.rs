//! Sessions: conversations kept between runs, by id, in a
//! [`SessionStore`], with the runs paused in them.
//!
//! A chat backend runs each user message as a new request, often on
//! another replica, and a person's approval comes later in yet another.
//! [`Agent::session`](crate::run::Agent::session) gives a [`Session`]: its
//! [`run`](Session::run) reads the conversation so far, runs, and writes
//! what the run added in one commit against the version it read; a run
//! that waits is kept in the session and finished by whichever process
//! gets its answers.
//!
//! Stores: [`MemoryStore`] here; SQLite (the embedded default) and
//! PostgreSQL (many replicas) in the `behest-sessions` crate. A store of
//! your own implements [`SessionStore`] and keeps what [`codec`] encodes.

mod error;
mod id;
mod memory;
mod running;
mod store;

pub use error::SessionError;
pub use id::{SessionId, MAX_ID_BYTES};
pub use memory::MemoryStore;
pub use running::Session;
pub use store::{
    codec, Change, Commit, Loaded, PausedRun, RunChange, SessionInfo, SessionStore, MAX_WRITE_BYTES,
};

//! What differs between the databases a store runs on: how a transaction
//! begins, and how the first use of a database is made one at a time.

use sqlx::Database;

/// A database a [`SqlStore`](crate::SqlStore) runs on.
pub trait Backend: Database + Sized {
    /// Begins a transaction that writes: it takes the write lock at once.
    const BEGIN_WRITE: &'static str;
    /// Begins a transaction that reads one snapshot.
    const BEGIN_READ: &'static str;
    /// Run first in the migrations' transaction, so that processes that
    /// open one database together migrate it once.
    const MIGRATION_LOCK: Option<&'static str>;
    /// Whether a long read is decoded row by row as it arrives (a server
    /// sends the rest meanwhile), rather than once all rows are in (an
    /// embedded database hands each streamed row across threads).
    const STREAM_ROWS: bool;
}

#[cfg(feature = "sqlite")]
impl Backend for sqlx::Sqlite {
    // A deferred transaction that reads first and writes later can fail
    // at once with SQLITE_BUSY, past the busy timeout; IMMEDIATE waits.
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    const BEGIN_READ: &'static str = "BEGIN";
    // BEGIN IMMEDIATE already admits one writer.
    const MIGRATION_LOCK: Option<&'static str> = None;
    const STREAM_ROWS: bool = false;
}

#[cfg(feature = "postgres")]
impl Backend for sqlx::Postgres {
    const BEGIN_WRITE: &'static str = "BEGIN";
    // Read committed would let the session's rows come from two commits.
    const BEGIN_READ: &'static str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
    // Any 64-bit key, the same in every process: "behest" in ASCII.
    const MIGRATION_LOCK: Option<&'static str> =
        Some("SELECT pg_advisory_xact_lock(112205573403764)");
    const STREAM_ROWS: bool = true;
}

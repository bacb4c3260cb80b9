//! The tables a store keeps, as numbered migrations: a store brings its
//! database to the newest on first use, and refuses one newer than it.

/// The migrations, in order: the database's schema version is how many
/// have run. Never change one that has shipped; add the next.
pub(crate) const MIGRATIONS: &[&[&str]] = &[&[
    "CREATE TABLE behest_sessions (
        id TEXT PRIMARY KEY,
        version BIGINT NOT NULL,
        messages BIGINT NOT NULL,
        updated_at BIGINT NOT NULL
    )",
    "CREATE INDEX behest_sessions_updated_at ON behest_sessions (updated_at)",
    "CREATE TABLE behest_messages (
        session_id TEXT NOT NULL,
        seq BIGINT NOT NULL,
        role TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
    )",
    "CREATE TABLE behest_paused_runs (
        session_id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (session_id, run_id)
    )",
    // The version a deleted session's id goes on from, so that a writer
    // who read it before the delete cannot write onto a new session.
    "CREATE TABLE behest_deleted (
        id TEXT PRIMARY KEY,
        version BIGINT NOT NULL
    )",
]];

/// The table that holds the schema's version.
pub(crate) const VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS behest_schema (version BIGINT NOT NULL)";

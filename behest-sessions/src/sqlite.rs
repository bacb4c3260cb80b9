//! Sessions in one SQLite file.

use std::path::Path;
use std::time::Duration;

use behest::run::SessionError;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::SqlStore;

/// Sessions in one SQLite file (feature `sqlite`).
pub type SqliteStore = SqlStore<sqlx::Sqlite>;

impl SqlStore<sqlx::Sqlite> {
    /// The store in the file at `path`, made if missing, in WAL mode:
    /// several processes may read and write it at once, a writer waiting
    /// up to 10 s for another.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self, SessionError> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(10));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await
            .map_err(|error| SessionError::Backend(Box::new(error)))?;
        Self::from_pool(pool).await
    }
}

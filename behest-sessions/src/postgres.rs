//! Sessions in PostgreSQL.

use behest::run::SessionError;
use sqlx::postgres::PgPoolOptions;

use crate::SqlStore;

/// Sessions in PostgreSQL (feature `postgres`), shared by every replica.
pub type PostgresStore = SqlStore<sqlx::Postgres>;

impl SqlStore<sqlx::Postgres> {
    /// The store at `url` (`postgres://user:password@host/database`),
    /// through a pool of up to 8 connections.
    pub async fn connect(url: &str) -> Result<Self, SessionError> {
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect(url)
            .await
            .map_err(|error| SessionError::Backend(Box::new(error)))?;
        Self::from_pool(pool).await
    }
}

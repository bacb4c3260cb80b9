//! Session stores for behest on SQL databases: the conversations of
//! [`Session`](behest::run::Session)s, and the runs paused in them, kept
//! where every replica of a service can read them.
//!
//! - [`SqliteStore`] (feature `sqlite`, on by default): one file, nothing
//!   to start; WAL mode, so several processes may share it.
//! - [`PostgresStore`] (feature `postgres`): for many replicas.
//!
//! Both run their migrations on first use, and refuse a database whose
//! schema is newer than they know.
//!
//! ```no_run
//! # #[cfg(feature = "sqlite")]
//! # async fn demo(agent: behest::Agent) -> Result<(), behest::run::SessionError> {
//! use std::sync::Arc;
//! use behest::run::SessionId;
//! use behest_sessions::SqliteStore;
//!
//! let store = Arc::new(SqliteStore::open("sessions.db").await?);
//! let session = agent.session(store, SessionId::new("user-1")?);
//! session.run([behest::Message::user("Hello")]).await?;
//! # Ok(())
//! # }
//! ```

mod backend;
mod schema;
mod store;

pub use backend::Backend;
pub use store::SqlStore;

#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;

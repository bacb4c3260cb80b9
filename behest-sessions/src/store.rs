//! A session store on a SQL database: one row per session (its version),
//! one per message, one per paused run; every commit one transaction.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use behest::run::session::{
    codec, Change, Commit, Loaded, RunChange, SessionError, SessionId, SessionInfo, SessionStore,
};
use futures::future::BoxFuture;
use futures::TryStreamExt;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

use crate::backend::Backend;
use crate::schema::{MIGRATIONS, VERSION_TABLE};

/// A [`SessionStore`] on a SQL database through an sqlx pool; see
/// [`SqliteStore`](crate::SqliteStore) and
/// [`PostgresStore`](crate::PostgresStore).
#[derive(Debug, Clone)]
pub struct SqlStore<DB: Backend> {
    pool: Pool<DB>,
}

/// A database error, as the session error that holds it.
fn backend(error: sqlx::Error) -> SessionError {
    SessionError::Backend(Box::new(error))
}

/// A count from the database: never negative unless the row was changed
/// by hand.
fn count(session: &SessionId, what: &str, value: i64) -> Result<u64, SessionError> {
    u64::try_from(value).map_err(|_| SessionError::Corrupt {
        session: session.to_string(),
        what: what.to_owned(),
        reason: format!("{value} is negative"),
    })
}

/// A count for the database.
fn stored(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn millis(time: SystemTime) -> i64 {
    let since = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

impl<DB> SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    i64: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    String: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// A store on `pool`, its schema brought to the newest (created on a
    /// new database). A database of a newer schema is refused with
    /// [`SessionError::Format`].
    pub async fn from_pool(pool: Pool<DB>) -> Result<Self, SessionError> {
        let store = Self { pool };
        store.migrate().await?;
        Ok(store)
    }

    /// The pool the store uses.
    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }

    async fn migrate(&self) -> Result<(), SessionError> {
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(backend)?;
        if let Some(lock) = DB::MIGRATION_LOCK {
            tx.execute(lock).await.map_err(backend)?;
        }
        tx.execute(VERSION_TABLE).await.map_err(backend)?;
        let found: Option<i64> = sqlx::query("SELECT MAX(version) FROM behest_schema")
            .fetch_one(&mut *tx)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(backend)?;
        let found = usize::try_from(found.unwrap_or(0)).unwrap_or(usize::MAX);
        if found > MIGRATIONS.len() {
            return Err(SessionError::Format {
                what: "the session database's schema".to_owned(),
                found: found as u64,
                supported: MIGRATIONS.len() as u64,
            });
        }
        for migration in &MIGRATIONS[found..] {
            for statement in *migration {
                tx.execute(*statement).await.map_err(backend)?;
            }
        }
        if found < MIGRATIONS.len() {
            tx.execute("DELETE FROM behest_schema")
                .await
                .map_err(backend)?;
            sqlx::query("INSERT INTO behest_schema (version) VALUES ($1)")
                .bind(MIGRATIONS.len() as i64)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }

    async fn load_session(&self, id: &SessionId) -> Result<Loaded, SessionError> {
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_READ)
            .await
            .map_err(backend)?;
        let key = id.as_str().to_owned();
        let row = sqlx::query("SELECT version, messages FROM behest_sessions WHERE id = $1")
            .bind(key.clone())
            .fetch_optional(&mut *tx)
            .await
            .map_err(backend)?;
        let Some(row) = row else {
            // A session never written, or deleted: its id goes on from the
            // version it was deleted at.
            let deleted: Option<i64> =
                sqlx::query("SELECT version FROM behest_deleted WHERE id = $1")
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await
                    .and_then(|row| row.map(|row| row.try_get(0)).transpose())
                    .map_err(backend)?;
            return Ok(Loaded {
                version: count(id, "the version", deleted.unwrap_or(0))?,
                ..Loaded::default()
            });
        };
        let row: (i64, i64) = (
            row.try_get(0).map_err(backend)?,
            row.try_get(1).map_err(backend)?,
        );
        let (version, held) = row;
        // Capacity as the session says, within reason should the row lie.
        let mut messages = Vec::with_capacity(usize::try_from(held).unwrap_or(0).min(1 << 16));
        let mut decode = |row: &DB::Row| -> Result<(), SessionError> {
            let seq: i64 = row.try_get(0).map_err(backend)?;
            let role: &str = row.try_get(1).map_err(backend)?;
            let body: &str = row.try_get(2).map_err(backend)?;
            let at = count(id, "a message's place", seq)?;
            // Messages are numbered from 0 without gaps: anything else was
            // written by something else.
            if at != messages.len() as u64 {
                return Err(SessionError::Corrupt {
                    session: id.to_string(),
                    what: format!("message {at}"),
                    reason: format!("it is where message {} should be", messages.len()),
                });
            }
            messages.push(codec::message(id, at, role, body)?);
            Ok(())
        };
        let query = sqlx::query(
            "SELECT seq, role, body FROM behest_messages WHERE session_id = $1 ORDER BY seq",
        )
        .bind(key.clone());
        if DB::STREAM_ROWS {
            let mut rows = query.fetch(&mut *tx);
            while let Some(row) = rows.try_next().await.map_err(backend)? {
                decode(&row)?;
            }
        } else {
            for row in query.fetch_all(&mut *tx).await.map_err(backend)? {
                decode(&row)?;
            }
        }
        let rows = sqlx::query(
            "SELECT body FROM behest_paused_runs WHERE session_id = $1 ORDER BY run_id",
        )
        .bind(key)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        let mut paused = Vec::with_capacity(rows.len());
        for row in rows {
            let body: String = row.try_get(0).map_err(backend)?;
            paused.push(codec::paused_run(id, &body)?);
        }
        tx.commit().await.map_err(backend)?;
        Ok(Loaded {
            messages,
            version: count(id, "the version", version)?,
            paused,
        })
    }

    async fn write(
        &self,
        id: &SessionId,
        expected: u64,
        commit: Commit<'_>,
    ) -> Result<u64, SessionError> {
        let encoded = codec::encode(&commit)?;
        let key = id.as_str().to_owned();
        let now = millis(SystemTime::now());
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(backend)?;
        let bump = || {
            sqlx::query(
                "UPDATE behest_sessions SET version = version + 1, updated_at = $3 \
                 WHERE id = $1 AND version = $2 RETURNING messages",
            )
            .bind(key.clone())
            .bind(stored(expected))
            .bind(now)
        };
        let mut held: Option<i64> = bump()
            .fetch_optional(&mut *tx)
            .await
            .and_then(|row| row.map(|row| row.try_get(0)).transpose())
            .map_err(backend)?;
        if held.is_none() {
            // No such session yet: made at the version its id goes on from
            // (0, or where a deleted one ended), unless a racing writer
            // made it first.
            sqlx::query(
                "INSERT INTO behest_sessions (id, version, messages, updated_at) \
                 SELECT $1, COALESCE((SELECT version FROM behest_deleted WHERE id = $1), 0), 0, $2 \
                 WHERE true ON CONFLICT (id) DO NOTHING",
            )
            .bind(key.clone())
            .bind(now)
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            held = bump()
                .fetch_optional(&mut *tx)
                .await
                .and_then(|row| row.map(|row| row.try_get(0)).transpose())
                .map_err(backend)?;
        }
        let Some(held) = held else {
            // Dropping the transaction rolls it back: nothing was kept.
            return Err(SessionError::Conflict {
                session: id.to_string(),
                expected,
            });
        };
        if let Some(change) = commit.messages {
            let first = match change {
                Change::Append(_) => held,
                Change::Replace(_) => {
                    sqlx::query("DELETE FROM behest_messages WHERE session_id = $1")
                        .bind(key.clone())
                        .execute(&mut *tx)
                        .await
                        .map_err(backend)?;
                    0
                }
            };
            let total = i64::try_from(encoded.messages.len())
                .ok()
                .and_then(|added| first.checked_add(added))
                .filter(|_| first >= 0)
                .ok_or_else(|| SessionError::Corrupt {
                    session: id.to_string(),
                    what: "its message count".to_owned(),
                    reason: format!("{first} cannot be counted on from"),
                })?;
            for (seq, (role, body)) in (first..).zip(encoded.messages) {
                sqlx::query(
                    "INSERT INTO behest_messages (session_id, seq, role, body) \
                     VALUES ($1, $2, $3, $4)",
                )
                .bind(key.clone())
                .bind(seq)
                .bind(role.to_owned())
                .bind(body)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            }
            sqlx::query("UPDATE behest_sessions SET messages = $2 WHERE id = $1")
                .bind(key.clone())
                .bind(total)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
        }
        match (commit.run, encoded.run) {
            (Some(RunChange::Save(run)), Some(body)) => {
                sqlx::query(
                    "INSERT INTO behest_paused_runs (session_id, run_id, body) VALUES ($1, $2, $3) \
                     ON CONFLICT (session_id, run_id) DO UPDATE SET body = excluded.body",
                )
                .bind(key.clone())
                .bind(run.run_id().to_owned())
                .bind(body)
                .execute(&mut *tx)
                .await
                .map_err(backend)?;
            }
            (Some(RunChange::Remove(run_id)), _) => {
                sqlx::query("DELETE FROM behest_paused_runs WHERE session_id = $1 AND run_id = $2")
                    .bind(key.clone())
                    .bind(run_id.to_owned())
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
            }
            _ => {}
        }
        tx.commit().await.map_err(backend)?;
        Ok(expected + 1)
    }

    async fn list_sessions(
        &self,
        after: Option<&SessionId>,
        limit: usize,
    ) -> Result<Vec<SessionInfo>, SessionError> {
        let after = after.map_or_else(String::new, |id| id.as_str().to_owned());
        let rows = sqlx::query(
            "SELECT id, version, messages, updated_at FROM behest_sessions WHERE id > $1 ORDER BY id LIMIT $2",
        )
        .bind(after)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(backend)?;
        rows.into_iter()
            .map(|row| {
                let id: String = row.try_get(0).map_err(backend)?;
                let id = SessionId::new(id.clone()).map_err(|error| SessionError::Corrupt {
                    session: id,
                    what: "its id".to_owned(),
                    reason: error.to_string(),
                })?;
                let version = count(&id, "the version", row.try_get(1).map_err(backend)?)?;
                let messages = count(&id, "the message count", row.try_get(2).map_err(backend)?)?;
                let updated: i64 = row.try_get(3).map_err(backend)?;
                let updated_at = UNIX_EPOCH + Duration::from_millis(updated.max(0) as u64);
                Ok(SessionInfo {
                    id,
                    version,
                    messages,
                    updated_at,
                })
            })
            .collect()
    }

    async fn delete_session(&self, id: &SessionId) -> Result<bool, SessionError> {
        let deleted = self
            .delete_sessions("id = $1", id.as_str().to_owned())
            .await?;
        Ok(deleted > 0)
    }

    async fn prune_sessions(&self, idle_since: SystemTime) -> Result<u64, SessionError> {
        self.delete_sessions("updated_at < $1", millis(idle_since))
            .await
    }

    /// Deletes the sessions `which` picks (`$1` being `value`), with their
    /// messages and paused runs, in one transaction; how many.
    async fn delete_sessions<T>(&self, which: &str, value: T) -> Result<u64, SessionError>
    where
        T: for<'q> Encode<'q, DB> + Type<DB> + Clone + Send + 'static,
    {
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(backend)?;
        // The sessions' rows first: a writer of one of them waits on its
        // row until this commits, then finds it gone (a conflict), so no
        // message of its lands between the deletes below.
        let rows: Vec<DB::Row> = sqlx::query(&format!(
            "DELETE FROM behest_sessions WHERE {which} RETURNING id, version"
        ))
        .bind(value)
        .fetch_all(&mut *tx)
        .await
        .map_err(backend)?;
        for row in &rows {
            let id: String = row.try_get(0).map_err(backend)?;
            let version: i64 = row.try_get(1).map_err(backend)?;
            sqlx::query(
                "INSERT INTO behest_deleted (id, version) VALUES ($1, $2) \
                 ON CONFLICT (id) DO UPDATE SET version = excluded.version",
            )
            .bind(id.clone())
            .bind(version.saturating_add(1))
            .execute(&mut *tx)
            .await
            .map_err(backend)?;
            for table in ["behest_paused_runs", "behest_messages"] {
                sqlx::query(&format!("DELETE FROM {table} WHERE session_id = $1"))
                    .bind(id.clone())
                    .execute(&mut *tx)
                    .await
                    .map_err(backend)?;
            }
        }
        tx.commit().await.map_err(backend)?;
        Ok(rows.len() as u64)
    }
}

impl<DB> SessionStore for SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    i64: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    String: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    fn load<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<Loaded, SessionError>> {
        Box::pin(self.load_session(id))
    }

    fn commit<'a>(
        &'a self,
        id: &'a SessionId,
        expected: u64,
        commit: Commit<'a>,
    ) -> BoxFuture<'a, Result<u64, SessionError>> {
        Box::pin(self.write(id, expected, commit))
    }

    fn list<'a>(
        &'a self,
        after: Option<&'a SessionId>,
        limit: usize,
    ) -> BoxFuture<'a, Result<Vec<SessionInfo>, SessionError>> {
        Box::pin(self.list_sessions(after, limit))
    }

    fn delete<'a>(&'a self, id: &'a SessionId) -> BoxFuture<'a, Result<bool, SessionError>> {
        Box::pin(self.delete_session(id))
    }

    fn prune(&self, idle_since: SystemTime) -> BoxFuture<'_, Result<u64, SessionError>> {
        Box::pin(self.prune_sessions(idle_since))
    }
}

//! What a store reads that it did not write, and writes that fail half
//! way: each a clear error, nothing half-written, no panic.

mod support;

use behest::run::session::{Change, Commit};
use behest::run::{Message, SessionError, SessionId, SessionStore};
use sqlx::Executor;

fn id(text: &str) -> SessionId {
    SessionId::new(text).unwrap()
}

fn append(messages: &[Message]) -> Commit<'_> {
    Commit {
        messages: Some(Change::Append(messages)),
        run: None,
    }
}

fn three() -> Vec<Message> {
    ["one", "two", "three"].map(Message::user).to_vec()
}

/// The rows of another program: a message that is not one, a paused run
/// of a newer format, a negative count.
async fn check_foreign_rows(store: &dyn SessionStore, exec: impl AsyncFn(&str)) {
    let session = id("s");
    store.commit(&session, 0, append(&three())).await.unwrap();
    exec("UPDATE behest_messages SET role = 'robot' WHERE seq = 1").await;
    let error = store.load(&session).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { what, .. } if what == "message 1"),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("session `s` holds message 1 that cannot be read: `robot` is not a role"),
        "{error}"
    );
    exec("UPDATE behest_messages SET role = 'user', body = 'not json' WHERE seq = 1").await;
    assert!(matches!(
        store.load(&session).await.unwrap_err(),
        SessionError::Corrupt { .. }
    ));
    // A message of another role's shape.
    exec("UPDATE behest_messages SET role = 'tool_result', body = '{\"text\": \"hi\"}' WHERE seq = 1").await;
    let error = store.load(&session).await.unwrap_err();
    assert!(
        error.to_string().contains("missing field `call_id`"),
        "{error}"
    );

    let other = id("t");
    store.commit(&other, 0, append(&three())).await.unwrap();
    exec("INSERT INTO behest_paused_runs (session_id, run_id, body) VALUES ('t', 'r', '{\"state\": {\"format\": 99}, \"claimed_until\": null}')").await;
    let error = store.load(&other).await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::Format {
                found: 99,
                supported: 1,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("has format 99; this version reads up to 1"),
        "{error}"
    );
    exec("UPDATE behest_paused_runs SET body = '[1, 2]'").await;
    let error = store.load(&other).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { what, .. } if what == "a paused run"),
        "{error}"
    );

    // A gap where a message was taken out by hand.
    let gap = id("g");
    store.commit(&gap, 0, append(&three())).await.unwrap();
    exec("DELETE FROM behest_messages WHERE session_id = 'g' AND seq = 1").await;
    let error = store.load(&gap).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("message 2 that cannot be read: it is where message 1 should be"),
        "{error}"
    );
    // A count no write can go on from.
    let full = id("f");
    store.commit(&full, 0, append(&three())).await.unwrap();
    exec("UPDATE behest_sessions SET messages = 9223372036854775807 WHERE id = 'f'").await;
    let error = store.commit(&full, 1, append(&three())).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { what, .. } if what == "its message count"),
        "{error}"
    );
    exec("UPDATE behest_sessions SET messages = -4 WHERE id = 'f'").await;
    let error = store.commit(&full, 1, append(&three())).await.unwrap_err();
    assert!(matches!(&error, SessionError::Corrupt { .. }), "{error}");
    exec("DELETE FROM behest_sessions WHERE id IN ('f', 'g')").await;

    let third = id("u");
    store.commit(&third, 0, append(&three())).await.unwrap();
    exec("UPDATE behest_sessions SET version = -5 WHERE id = 'u'").await;
    let error = store.load(&third).await.unwrap_err();
    assert!(error.to_string().contains("-5 is negative"), "{error}");
    exec("UPDATE behest_sessions SET version = 1 WHERE id = 'u'").await;
    let long = "x".repeat(300);
    exec(&format!(
        "INSERT INTO behest_sessions (id, version, messages, updated_at) VALUES ('{long}', 1, 0, 0)"
    ))
    .await;
    let error = store.list(None, 10).await.unwrap_err();
    assert!(
        matches!(&error, SessionError::Corrupt { reason, .. } if reason.contains("300 bytes long")),
        "{error}"
    );
}

/// A write that fails after some of its rows went in keeps none of them.
async fn check_failed_write(store: &dyn SessionStore) {
    let session = id("half");
    let error = store
        .commit(&session, 0, append(&three()))
        .await
        .unwrap_err();
    assert!(matches!(error, SessionError::Backend(_)), "{error}");
    assert!(
        error.to_string().starts_with("the session store failed"),
        "{error}"
    );
    let loaded = store.load(&session).await.unwrap();
    assert!(
        loaded.messages.is_empty() && loaded.version == 0,
        "{loaded:?}"
    );
}

#[tokio::test]
async fn sqlite_foreign_rows_read_as_clear_errors() {
    let store = support::sqlite().await;
    let pool = store.pool().clone();
    check_foreign_rows(&store, async |sql: &str| {
        pool.execute(sql).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn postgres_foreign_rows_read_as_clear_errors() {
    let Some(store) = support::postgres("postgres_foreign_rows").await else {
        return;
    };
    let pool = store.pool().clone();
    check_foreign_rows(&store, async |sql: &str| {
        pool.execute(sql).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn sqlite_a_write_that_fails_half_way_keeps_nothing() {
    let store = support::sqlite().await;
    store
        .pool()
        .execute(
            "CREATE TRIGGER gone BEFORE INSERT ON behest_messages WHEN NEW.seq = 2 \
             BEGIN SELECT RAISE(ABORT, 'the disk is gone'); END",
        )
        .await
        .unwrap();
    check_failed_write(&store).await;
}

#[tokio::test]
async fn postgres_a_connection_that_drops_half_way_through_a_write_keeps_nothing() {
    let Some(store) = support::postgres("postgres_a_connection_that_drops").await else {
        return;
    };
    // The server ends the writer's own connection after two of its rows.
    store
        .pool()
        .execute(
            "CREATE FUNCTION behest_gone() RETURNS trigger AS $$ BEGIN \
             IF NEW.seq = 2 THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; \
             RETURN NEW; END $$ LANGUAGE plpgsql",
        )
        .await
        .unwrap();
    store
        .pool()
        .execute("CREATE TRIGGER gone BEFORE INSERT ON behest_messages FOR EACH ROW EXECUTE FUNCTION behest_gone()")
        .await
        .unwrap();
    check_failed_write(&store).await;
    // The store goes on on its other connections once the cause is gone.
    store
        .pool()
        .execute("DROP TRIGGER gone ON behest_messages")
        .await
        .unwrap();
    store
        .commit(&id("half"), 0, append(&three()))
        .await
        .unwrap();
    assert_eq!(store.load(&id("half")).await.unwrap().messages.len(), 3);
}

#[tokio::test]
async fn a_database_of_a_newer_schema_is_refused() {
    let path = support::sqlite_path();
    let store = behest_sessions::SqliteStore::open(&path).await.unwrap();
    store
        .pool()
        .execute("UPDATE behest_schema SET version = 7")
        .await
        .unwrap();
    store.pool().close().await;
    let error = behest_sessions::SqliteStore::open(&path).await.unwrap_err();
    assert!(
        matches!(
            error,
            SessionError::Format {
                found: 7,
                supported: 1,
                ..
            }
        ),
        "{error}"
    );
    assert!(
        error
            .to_string()
            .contains("the session database's schema has format 7"),
        "{error}"
    );

    let Some(url) = support::postgres_url("a_database_of_a_newer_schema").await else {
        return;
    };
    let store = behest_sessions::PostgresStore::connect(&url).await.unwrap();
    store
        .pool()
        .execute("UPDATE behest_schema SET version = 7")
        .await
        .unwrap();
    let error = behest_sessions::PostgresStore::connect(&url)
        .await
        .unwrap_err();
    assert!(
        matches!(error, SessionError::Format { found: 7, .. }),
        "{error}"
    );
}

#[tokio::test]
async fn a_database_that_is_not_there_is_a_clear_error() {
    // A server that is not there (a port nothing listens on), found out
    // within the pool's acquire timeout.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .acquire_timeout(std::time::Duration::from_secs(1))
        .connect_lazy("postgres://nobody@127.0.0.1:1/none")
        .unwrap();
    let error = behest_sessions::PostgresStore::from_pool(pool)
        .await
        .unwrap_err();
    assert!(matches!(error, SessionError::Backend(_)), "{error}");
    let error = behest_sessions::SqliteStore::open("/nonexistent-dir/for/sessions.db")
        .await
        .unwrap_err();
    assert!(matches!(error, SessionError::Backend(_)), "{error}");
}

#[tokio::test]
async fn processes_that_open_one_new_database_together_migrate_it_once() {
    let Some(url) = support::postgres_url("processes_that_open_one_new_database").await else {
        return;
    };
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            tokio::spawn(async move { behest_sessions::PostgresStore::connect(&url).await })
        })
        .collect();
    for open in opens {
        open.await.unwrap().unwrap();
    }
    let path = support::sqlite_path();
    let opens: Vec<_> = (0..6)
        .map(|_| {
            let path = path.clone();
            tokio::spawn(async move { behest_sessions::SqliteStore::open(&path).await })
        })
        .collect();
    for open in opens {
        open.await.unwrap().unwrap();
    }
}

//! Fresh stores for each test: in memory, in a new SQLite file, in a new
//! PostgreSQL database on the server `BEHEST_POSTGRES_URL` names (its
//! tests say "skipped" without one).

#![allow(dead_code)]

pub mod agent;

use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use behest::run::{MemoryStore, SessionStore};
use behest_sessions::{PostgresStore, SqliteStore};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::Executor;

static NEXT: AtomicU64 = AtomicU64::new(0);

fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!(
        "{prefix}_{}_{}_{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A new directory under the build's temporary folder.
pub fn temp_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(unique("behest_sessions"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A path for a new SQLite file.
pub fn sqlite_path() -> PathBuf {
    temp_dir().join("sessions.db")
}

pub async fn sqlite() -> SqliteStore {
    SqliteStore::open(sqlite_path()).await.unwrap()
}

/// The URL of a new, empty database on the test server; `None` (and the
/// test says "skipped") without one.
pub async fn postgres_url(test: &str) -> Option<String> {
    let Some(url) = std::env::var("BEHEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
    else {
        eprintln!(
            "skipped {test}: no PostgreSQL (set BEHEST_POSTGRES_URL; .ci/test-all starts one)"
        );
        return None;
    };
    let name = unique("behest");
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(&url)
        .await
        .unwrap();
    admin
        .execute(format!("CREATE DATABASE {name}").as_str())
        .await
        .unwrap();
    let (base, _) = url.rsplit_once('/').unwrap();
    Some(format!("{base}/{name}"))
}

pub async fn postgres(test: &str) -> Option<PostgresStore> {
    let url = postgres_url(test).await?;
    Some(PostgresStore::connect(&url).await.unwrap())
}

/// A second pool on the database of `store`, as another replica has.
pub async fn postgres_again(store: &PostgresStore) -> PostgresStore {
    let options: PgConnectOptions = (*store.pool().connect_options()).clone();
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await
        .unwrap();
    PostgresStore::from_pool(pool).await.unwrap()
}

/// Options for a PostgreSQL URL, for tests that connect by hand.
pub fn pg_options(url: &str) -> PgConnectOptions {
    PgConnectOptions::from_str(url).unwrap()
}

/// Each kind of store, fresh: `(name, store)`; PostgreSQL only with a
/// server.
pub async fn stores(test: &str) -> Vec<(&'static str, Arc<dyn SessionStore>)> {
    let mut stores: Vec<(&'static str, Arc<dyn SessionStore>)> = vec![
        ("memory", Arc::new(MemoryStore::new())),
        ("sqlite", Arc::new(sqlite().await)),
    ];
    if let Some(postgres) = postgres(test).await {
        stores.push(("postgres", Arc::new(postgres)));
    }
    stores
}

/// A kind of store, and two stores of it on one database.
pub type Replicas = (&'static str, Arc<dyn SessionStore>, Arc<dyn SessionStore>);

/// Each kind of store, fresh, as two replicas see it: two stores on one
/// database (one store, for memory).
pub async fn replicas(test: &str) -> Vec<Replicas> {
    let memory: Arc<dyn SessionStore> = Arc::new(MemoryStore::new());
    let path = sqlite_path();
    let mut replicas: Vec<Replicas> = vec![
        ("memory", memory.clone(), memory),
        (
            "sqlite",
            Arc::new(SqliteStore::open(&path).await.unwrap()),
            Arc::new(SqliteStore::open(&path).await.unwrap()),
        ),
    ];
    if let Some(postgres) = postgres(test).await {
        let again = postgres_again(&postgres).await;
        replicas.push(("postgres", Arc::new(postgres), Arc::new(again)));
    }
    replicas
}

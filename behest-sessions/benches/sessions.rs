//! What a session store costs over its database driver, in one run of
//! this binary:
//!
//! - loading a session of 100, 1 000 and 10 000 messages through the
//!   store, and through the same statements on the sqlx pool alone (the
//!   rows read as text, nothing decoded into messages): the ratio, and the
//!   store's time per message, to show the load linear;
//! - appending a turn (a user message and an answer) through the store,
//!   and through the same statements on the pool alone;
//! - the bytes a paused run keeps, per step of the run.
//!
//! On SQLite (a file in the temporary folder) always, and on PostgreSQL
//! when `BEHEST_POSTGRES_URL` names a server. Each figure is the median
//! of its samples; store and driver alternate, sample by sample. Without
//! `--bench` (under `cargo test --benches`) it takes a few samples only.
//!
//! Run: `BEHEST_POSTGRES_URL=… cargo bench -p behest-sessions --all-features --bench sessions`

use std::future::Future;
use std::time::{Duration, Instant};

use behest::run::session::{Change, Commit, PausedRun};
use behest::run::{Message, SessionId, SessionStore};
use behest_sessions::{Backend, PostgresStore, SqlStore, SqliteStore};
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Row, Type};

/// The median of `samples` timings of `work`, each run `reps` times.
async fn median<F: Future<Output = ()>>(
    samples: usize,
    reps: u32,
    mut work: impl FnMut() -> F,
) -> Duration {
    let mut times = Vec::with_capacity(samples);
    for _ in 0..samples {
        let started = Instant::now();
        for _ in 0..reps {
            work().await;
        }
        times.push(started.elapsed() / reps);
    }
    times.sort();
    times[times.len() / 2]
}

fn turn(at: usize) -> [Message; 2] {
    [
        Message::user(format!(
            "message {at}: where is my order? It was due on Monday."
        )),
        Message::Assistant(behest::AssistantMessage::text(format!(
            "Answer {at}: your order left the warehouse this morning and arrives tomorrow."
        ))),
    ]
}

/// A session of `count` messages, written a thousand at a time.
async fn fill(store: &dyn SessionStore, id: &SessionId, count: usize) {
    let messages: Vec<Message> = (0..count / 2).flat_map(turn).collect();
    let mut version = 0;
    for chunk in messages.chunks(1000) {
        let commit = Commit {
            messages: Some(Change::Append(chunk)),
            run: None,
        };
        version = store.commit(id, version, commit).await.unwrap();
    }
}

/// Loads through the pool alone: the store's statements, rows as text.
async fn raw_load<DB>(pool: &sqlx::Pool<DB>, id: &str) -> usize
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    i64: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    String: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    let mut tx = pool.begin_with(DB::BEGIN_READ).await.unwrap();
    let row = sqlx::query("SELECT version FROM behest_sessions WHERE id = $1")
        .bind(id.to_owned())
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    let _version: i64 = row.get(0);
    let rows = sqlx::query(
        "SELECT seq, role, body FROM behest_messages WHERE session_id = $1 ORDER BY seq",
    )
    .bind(id.to_owned())
    .fetch_all(&mut *tx)
    .await
    .unwrap();
    let mut bytes = 0;
    for row in &rows {
        let _seq: i64 = row.get(0);
        let _role: &str = row.get(1);
        let body: &str = row.get(2);
        bytes += body.len();
    }
    sqlx::query("SELECT body FROM behest_paused_runs WHERE session_id = $1 ORDER BY run_id")
        .bind(id.to_owned())
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
    bytes
}

/// Appends a turn through the pool alone: the store's statements, the
/// bodies encoded beforehand.
async fn raw_append<DB>(pool: &sqlx::Pool<DB>, id: &str, version: i64, bodies: &[(&str, String)])
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    i64: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    String: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    let mut tx = pool.begin_with(DB::BEGIN_WRITE).await.unwrap();
    let row = sqlx::query(
        "UPDATE behest_sessions SET version = version + 1, updated_at = $3 \
         WHERE id = $1 AND version = $2 RETURNING messages",
    )
    .bind(id.to_owned())
    .bind(version)
    .bind(0_i64)
    .fetch_one(&mut *tx)
    .await
    .unwrap();
    let held: i64 = row.get(0);
    for (seq, (role, body)) in (held..).zip(bodies) {
        sqlx::query(
            "INSERT INTO behest_messages (session_id, seq, role, body) VALUES ($1, $2, $3, $4)",
        )
        .bind(id.to_owned())
        .bind(seq)
        .bind((*role).to_owned())
        .bind(body.clone())
        .execute(&mut *tx)
        .await
        .unwrap();
    }
    sqlx::query("UPDATE behest_sessions SET messages = $2 WHERE id = $1")
        .bind(id.to_owned())
        .bind(held + bodies.len() as i64)
        .execute(&mut *tx)
        .await
        .unwrap();
    tx.commit().await.unwrap();
}

async fn measure<DB>(name: &str, store: SqlStore<DB>, samples: usize)
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    i64: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    String: Type<DB> + for<'q> Encode<'q, DB> + for<'r> Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Decode<'r, DB>,
    usize: ColumnIndex<DB::Row>,
{
    let pool = store.pool().clone();
    println!("{name}: load (store, driver alone, ratio, store per message)");
    for count in [100, 1_000, 10_000] {
        let id = SessionId::new(format!("load-{count}")).unwrap();
        fill(&store, &id, count).await;
        let reps = (10_000 / count).max(1) as u32;
        let mut ours = Vec::new();
        let mut bare = Vec::new();
        for _ in 0..samples {
            ours.push(
                median(1, reps, || async {
                    assert_eq!(store.load(&id).await.unwrap().messages.len(), count)
                })
                .await,
            );
            bare.push(
                median(1, reps, || async {
                    assert!(raw_load(&pool, id.as_str()).await > 0)
                })
                .await,
            );
        }
        ours.sort();
        bare.sort();
        let (ours, bare) = (ours[samples / 2], bare[samples / 2]);
        println!(
            "  {count:>6} messages: {ours:>10.2?} {bare:>10.2?} {:.2}x  {:.2?}/message",
            ours.as_secs_f64() / bare.as_secs_f64(),
            ours / count as u32
        );
    }
    let ours_id = SessionId::new("append-store").unwrap();
    let bare_id = SessionId::new("append-driver").unwrap();
    fill(&store, &ours_id, 2).await;
    fill(&store, &bare_id, 2).await;
    let mut versions = (1_u64, 1_i64);
    let mut ours = Vec::new();
    let mut bare = Vec::new();
    for at in 0..samples * 10 {
        let messages = turn(at);
        // Who goes first flips every time: a write can leave work (a WAL
        // checkpoint, a vacuum) to the next.
        for first in [at % 2 == 0, at % 2 == 1] {
            let started = Instant::now();
            if first {
                let commit = Commit {
                    messages: Some(Change::Append(&messages)),
                    run: None,
                };
                versions.0 = store.commit(&ours_id, versions.0, commit).await.unwrap();
                ours.push(started.elapsed());
            } else {
                let bodies: Vec<(&str, String)> = messages
                    .iter()
                    .map(|message| match message {
                        Message::User { text } => {
                            ("user", serde_json::json!({ "text": text }).to_string())
                        }
                        Message::Assistant(reply) => {
                            ("assistant", serde_json::to_string(reply).unwrap())
                        }
                        _ => unreachable!("a turn is a user message and an answer"),
                    })
                    .collect();
                raw_append(&pool, bare_id.as_str(), versions.1, &bodies).await;
                versions.1 += 1;
                bare.push(started.elapsed());
            }
        }
    }
    ours.sort();
    bare.sort();
    let (ours, bare) = (ours[ours.len() / 2], bare[bare.len() / 2]);
    println!(
        "{name}: append a turn: {ours:.2?} against {bare:.2?} ({:.2}x)",
        ours.as_secs_f64() / bare.as_secs_f64()
    );
}

/// Bytes of a paused run's row after `steps` rounds of one tool call.
async fn paused_bytes(steps: usize) -> usize {
    use behest::run::ScriptedTurn;
    use behest::{Agent, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};

    /// Look an order up.
    #[behest::tool]
    fn look_up(order: u32) -> String {
        format!("order {order}: paid, shipped, arrives tomorrow")
    }
    /// Refund an order.
    #[behest::tool(needs_approval)]
    fn refund(order: u32) -> String {
        format!("order {order} refunded")
    }
    let mut turns: Vec<ScriptedTurn> = (0..steps)
        .map(|at| {
            ScriptedTurn::tool_calls([ToolCall::new(
                format!("c{at}"),
                "look_up",
                format!(r#"{{"order": {at}}}"#),
            )])
        })
        .collect();
    turns.push(ScriptedTurn::tool_calls([ToolCall::new(
        "r",
        "refund",
        r#"{"order": 1}"#,
    )]));
    let tools = ToolRegistry::new()
        .with(LookUp)
        .unwrap()
        .with(Refund)
        .unwrap();
    let agent = Agent::new(ScriptedModel::new(turns), ToolRuntime::new(tools)).max_steps(steps + 2);
    let state = agent
        .invoke([Message::user("refund my order")])
        .pause_at_waits()
        .await
        .into_paused()
        .unwrap();
    serde_json::to_string(&PausedRun {
        state,
        claimed_until: None,
    })
    .unwrap()
    .len()
}

fn main() {
    let bench = std::env::args().any(|arg| arg == "--bench");
    let samples = if bench { 21 } else { 3 };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir =
            std::env::temp_dir().join(format!("behest-sessions-bench-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        measure(
            "sqlite",
            SqliteStore::open(dir.join("bench.db")).await.unwrap(),
            samples,
        )
        .await;
        std::fs::remove_dir_all(&dir).ok();
        match std::env::var("BEHEST_POSTGRES_URL")
            .ok()
            .filter(|url| !url.is_empty())
        {
            Some(url) => {
                let name = format!("behest_bench_{}", std::process::id());
                let admin = sqlx::PgPool::connect(&url).await.unwrap();
                admin
                    .execute(format!("CREATE DATABASE {name}").as_str())
                    .await
                    .unwrap();
                let (base, _) = url.rsplit_once('/').unwrap();
                let store = PostgresStore::connect(&format!("{base}/{name}"))
                    .await
                    .unwrap();
                measure("postgres", store, samples).await;
            }
            None => println!("postgres: skipped (set BEHEST_POSTGRES_URL)"),
        }
        let (ten, hundred) = (paused_bytes(10).await, paused_bytes(100).await);
        println!(
            "a paused run keeps {ten} bytes at 10 steps, {hundred} at 100: {} bytes per step",
            (hundred - ten) / 90
        );
    });
}

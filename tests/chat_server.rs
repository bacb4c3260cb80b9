//! The chat server example as a service of two replicas sharing one
//! database: the question arrives on one, the approval on the other, and
//! the refund is made once, even when the approval is sent to both at
//! once. On SQLite (one file) and on PostgreSQL (`BEHEST_POSTGRES_URL`;
//! "skipped" without one).

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The example's binary, built beside this test by `cargo test`.
fn example() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join("chat_server");
    path.exists().then_some(path)
}

/// One replica: its address, and what it printed.
struct Replica {
    _child: Child,
    url: String,
    printed: Arc<Mutex<Vec<String>>>,
}

async fn start(binary: &PathBuf, database: &str) -> Replica {
    let mut child = Command::new(binary)
        .env("DATABASE_URL", database)
        .env("PORT", "0")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines
        .next_line()
        .await
        .unwrap()
        .expect("the replica says where it listens");
    let url = first.strip_prefix("listening on ").unwrap().to_owned();
    let printed = Arc::new(Mutex::new(Vec::new()));
    let kept = printed.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            kept.lock().unwrap().push(line);
        }
    });
    Replica {
        _child: child,
        url,
        printed,
    }
}

async fn post(client: &reqwest::Client, url: String, body: Option<Value>) -> (u16, Value) {
    let mut request = client.post(url);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/json")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let body = serde_json::from_str(&response.text().await.unwrap()).unwrap();
    (status, body)
}

async fn two_replicas_finish_one_run(database: &str) {
    let Some(binary) = example() else {
        eprintln!("skipped: the chat_server example is not built (cargo test builds it)");
        return;
    };
    let one = start(&binary, database).await;
    let two = start(&binary, database).await;
    // reqwest asks for a TLS provider even for plain HTTP.
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::new();
    let say = |replica: &Replica, text: &str| {
        post(
            &client,
            format!("{}/sessions/ada/messages", replica.url),
            Some(serde_json::json!({ "text": text })),
        )
    };

    let (status, reply) = say(&one, "Hello, I am Ada").await;
    assert_eq!(
        (status, reply["reply"].as_str()),
        (
            200,
            Some("You said: Hello, I am Ada (message 1 of this conversation).")
        )
    );
    // The question arrives on one replica and waits there for a person.
    let (status, waiting) = say(&one, "Please refund order 42").await;
    assert_eq!(status, 200, "{waiting}");
    let run = waiting["run"].as_str().unwrap().to_owned();
    let call = waiting["waiting"][0]["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The session takes nothing else while the run waits, on either.
    let (status, busy) = say(&two, "hello?").await;
    assert_eq!(status, 409, "{busy}");
    // The approval is sent to both replicas at once: one finishes the run.
    let approve = |replica: &Replica| {
        post(
            &client,
            format!(
                "{}/sessions/ada/runs/{run}/calls/{call}/approve",
                replica.url
            ),
            None,
        )
    };
    let (first, second) = tokio::join!(approve(&two), approve(&one));
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(statuses[0], 200, "{first:?} {second:?}");
    assert!(matches!(statuses[1], 404 | 409), "{first:?} {second:?}");
    let done = if first.0 == 200 { &first.1 } else { &second.1 };
    assert_eq!(done["reply"], "Done: order 42 refunded.");
    // Both replicas read the whole conversation, and go on with it.
    let history = client
        .get(format!("{}/sessions/ada", one.url))
        .send()
        .await
        .unwrap();
    let history: Value = serde_json::from_str(&history.text().await.unwrap()).unwrap();
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        6,
        "{history}"
    );
    let (_, reply) = say(&two, "Thanks").await;
    assert_eq!(
        reply["reply"],
        "You said: Thanks (message 3 of this conversation)."
    );
    // The refund was made once, by whichever replica finished the run.
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let refunds: usize = [&one, &two]
        .iter()
        .map(|replica| {
            let printed = replica.printed.lock().unwrap();
            printed
                .iter()
                .filter(|line| *line == "refunded order 42")
                .count()
        })
        .sum();
    assert_eq!(refunds, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_sqlite_file_finish_a_run_once() {
    let dir = std::env::temp_dir().join(format!("behest-chat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("chat.db");
    two_replicas_finish_one_run(path.to_str().unwrap()).await;
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_replicas_on_one_postgres_finish_a_run_once() {
    let Some(url) = std::env::var("BEHEST_POSTGRES_URL")
        .ok()
        .filter(|url| !url.is_empty())
    else {
        eprintln!("skipped: no PostgreSQL (set BEHEST_POSTGRES_URL; .ci/test-all starts one)");
        return;
    };
    // A database of this test's own on the server.
    let name = format!("behest_chat_{}", std::process::id());
    let admin = sqlx::PgPool::connect(&url).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await
        .unwrap();
    let (base, _) = url.rsplit_once('/').unwrap();
    two_replicas_finish_one_run(&format!("{base}/{name}")).await;
}

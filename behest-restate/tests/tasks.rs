//! Durable MCP tasks against a real `restate-server`
//! (`BEHEST_RESTATE_SERVER`, installed by `.ci/run`): two replicas of a
//! behest MCP server keep their tasks in Restate (`RestateTasks`), the
//! tools run in the test service (`DurableTasks`), which is killed in the
//! middle of a task and started again; and a durable run whose tool,
//! imported from an MCP server, answers with a task goes on awaiting the
//! same task after its service dies.
#![cfg(feature = "mcp")]

#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;

#[path = "service/agent.rs"]
#[allow(dead_code)]
mod agent;

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use behest::mcp::{McpServer, McpTasks, TaskSupport};
use behest_restate::RestateTasks;
use serde_json::{json, Value};
use server::{free_port, start_server, until, Scratch};
use tokio::process::{Child, Command};

/// The test service, serving the test agent's tools as durable tasks.
async fn service(port: u16, counts: &Path) -> Child {
    service_in(port, counts, &[]).await
}

/// The test service with `more` arguments and environment.
async fn service_in(port: u16, counts: &Path, more: &[(&str, &str)]) -> Child {
    let mode: Vec<&str> = more
        .iter()
        .filter(|(name, _)| *name == "mode")
        .map(|(_, mode)| *mode)
        .collect();
    let child = Command::new(env!("CARGO_BIN_EXE_behest-restate-test-service"))
        .args([port.to_string(), "600000".to_owned()])
        .args(mode)
        .envs(more.iter().filter(|(name, _)| *name != "mode").copied())
        .env("BEHEST_TEST_COUNTS", counts)
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the test service starts");
    until("the test service to listen", || async {
        tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .ok()
    })
    .await;
    child
}

/// A replica of the MCP server: the test agent's tools, `work` answering
/// with a task kept in Restate at `ingress`. Its URL.
async fn replica(ingress: &str) -> String {
    let runtime = agent::agent(Duration::from_secs(600), agent::Mode::Plain)
        .runtime()
        .clone();
    let tasks = McpTasks::new()
        .tool("work", TaskSupport::Optional)
        .backend(RestateTasks::new(ingress));
    let server = McpServer::new(runtime).unwrap().tasks(tasks).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { behest::mcp::http::serve(listener, server).await });
    url
}

/// A request of protocol 2026-07-28 from a client that takes tasks,
/// with bearer `token`: the JSON-RPC answer.
async fn rpc(url: &str, token: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities":
            {"extensions": {"io.modelcontextprotocol/tasks": {}}},
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let body = server::http()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method)
        .header("mcp-name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    // A JSON body, or the answer's event on a stream.
    serde_json::from_str(&body)
        .ok()
        .or_else(|| {
            body.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .find_map(|data| serde_json::from_str(data.trim()).ok())
        })
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {body:?}"))
}

fn counted(counts: &Path, name: &str) -> usize {
    std::fs::read_to_string(counts.join(name)).map_or(0, |text| text.lines().count())
}

/// A task started on one replica is read on the other; its service is
/// killed while the tool works and started again; Restate plays the task
/// again and it completes, its result read on either replica, the work
/// done once to its end. Another caller sees no such task; cancelling one
/// that ended changes nothing.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_durable_task_outlives_its_service_and_every_replica_answers_for_it() {
    let binary = std::env::var_os("BEHEST_RESTATE_SERVER").expect("BEHEST_RESTATE_SERVER");
    let restate = start_server(&binary, "mcp-tasks").await;
    let ingress = format!("http://127.0.0.1:{}", restate.ingress);
    let counts = Scratch::new("mcp-tasks-counts");
    let port = free_port();
    let mut first = service(port, &counts).await;
    restate.register(port).await;
    let (one, two) = (replica(&ingress).await, replica(&ingress).await);

    let created = rpc(
        &one,
        "ada",
        "tools/call",
        json!({"name": "work", "arguments": {"step": 7}}),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let seen = rpc(&two, "ada", "tasks/get", json!({"taskId": id})).await;
    assert_eq!(seen["result"]["status"], "working", "{seen}");
    let theirs = rpc(&two, "bob", "tasks/get", json!({"taskId": id})).await;
    assert_eq!(theirs["error"]["code"], -32602, "{theirs}");

    // The tool works for 1.5 s: the service dies in the middle of it.
    until("the tool to start", || async {
        (counted(&counts, "work") >= 1).then_some(())
    })
    .await;
    first.kill().await.unwrap();
    let _second = service(port, &counts).await;

    let done = until("the task to complete", || async {
        let got = rpc(&one, "ada", "tasks/get", json!({"taskId": id})).await;
        (got["result"]["status"] != "working").then_some(got)
    })
    .await;
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "step 7 worked",
        "{done}"
    );
    let again = rpc(&two, "ada", "tasks/get", json!({"taskId": id})).await;
    assert_eq!(again["result"]["result"], done["result"]["result"]);
    assert_eq!(
        counted(&counts, "work"),
        2,
        "started once, and again after the crash"
    );
    assert_eq!(counted(&counts, "work_done"), 1, "worked to its end once");
    // Each attempt had the task's id as its idempotency key.
    let keys = std::fs::read_to_string(counts.join("work")).unwrap();
    assert!(keys.lines().all(|key| key == id), "{keys}");

    let late = rpc(&two, "ada", "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(late["result"]["resultType"], "complete", "{late}");
    let after = rpc(&one, "ada", "tasks/get", json!({"taskId": id})).await;
    assert_eq!(after["result"]["status"], "completed", "{after}");
}

/// A task cancelled on the other replica is cancelled at once for its
/// client, and stays cancelled when its tool's work ends.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_durable_task_cancelled_on_any_replica_stays_cancelled() {
    let binary = std::env::var_os("BEHEST_RESTATE_SERVER").expect("BEHEST_RESTATE_SERVER");
    let restate = start_server(&binary, "mcp-tasks-cancel").await;
    let ingress = format!("http://127.0.0.1:{}", restate.ingress);
    let counts = Scratch::new("mcp-tasks-cancel-counts");
    let port = free_port();
    let _service = service(port, &counts).await;
    restate.register(port).await;
    let (one, two) = (replica(&ingress).await, replica(&ingress).await);
    let created = rpc(
        &one,
        "ada",
        "tools/call",
        json!({"name": "work", "arguments": {"step": 1}}),
    )
    .await;
    let id = created["result"]["taskId"].as_str().unwrap().to_owned();
    let refused = rpc(&two, "bob", "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    let cancelled = rpc(&two, "ada", "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(
        cancelled["result"],
        json!({"resultType": "complete"}),
        "{cancelled}"
    );
    let now = rpc(&one, "ada", "tasks/get", json!({"taskId": id})).await;
    assert_eq!(now["result"]["status"], "cancelled", "{now}");
    until("the tool's work to end", || async {
        (counted(&counts, "work_done") == 1).then_some(())
    })
    .await;
    let after = until("the task to settle", || async {
        let got = rpc(&two, "ada", "tasks/get", json!({"taskId": id})).await;
        (got["result"]["status"] == "cancelled").then_some(got)
    })
    .await;
    assert!(after["result"].get("result").is_none(), "{after}");
}

/// Render page `page` (slowly), as an MCP server's long-running tool.
#[behest::tool]
async fn render(page: u32) -> String {
    RENDERS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    RENDERED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    format!("page {page} rendered")
}

/// How many times `render` ended.
static RENDERED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// How many times `render` began.
static RENDERS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A durable run calls `render`, imported from an MCP server that answers
/// with a task; its service dies while the run awaits the task and starts
/// again: the run goes on awaiting the same task (its start is a journal
/// entry of its own), the tool began once, and the run ends with its
/// result.
#[tokio::test]
#[cfg_attr(
    not(behest_restate_server),
    ignore = "skipped: BEHEST_RESTATE_SERVER does not name a restate-server binary (.ci/run installs it)"
)]
async fn a_durable_run_awaits_an_imported_tools_task_across_a_crash() {
    let binary = std::env::var_os("BEHEST_RESTATE_SERVER").expect("BEHEST_RESTATE_SERVER");
    let restate = start_server(&binary, "mcp-imported-task").await;
    let counts = Scratch::new("mcp-imported-task-counts");
    // The MCP server, in this process: `render` answers with a task.
    let runtime = behest::ToolRuntime::new(behest::ToolRegistry::new().with(Render).unwrap());
    let tasks = McpTasks::new()
        .tool("render", TaskSupport::Optional)
        .poll_interval(Duration::from_millis(100));
    let server = McpServer::new(runtime).unwrap().tasks(tasks).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { behest::mcp::http::serve(listener, server).await });
    let port = free_port();
    let more = [("mode", "mcp-task"), ("BEHEST_TEST_MCP_URL", url.as_str())];
    let mut first = service_in(port, &counts, &more).await;
    restate.register(port).await;
    let client = behest_restate::DurableClient::new(
        format!("http://127.0.0.1:{}", restate.ingress),
        format!("http://127.0.0.1:{}", restate.admin),
    );
    client
        .start("render-7", &[behest::Message::user("render page 7")])
        .await
        .unwrap();
    // The task runs on the MCP server: the service dies while the run
    // awaits it, its start journaled.
    until("the call's start to be journaled", || async {
        let rows = restate
            .query("SELECT j.name FROM sys_journal j JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_key = 'render-7' AND j.name = 'start part of call c0'")
            .await;
        rows["rows"].as_array().is_some_and(|rows| !rows.is_empty()).then_some(())
    })
    .await;
    assert_eq!(RENDERS.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The wait is not over: the task still renders.
    assert_eq!(RENDERED.load(std::sync::atomic::Ordering::SeqCst), 0);
    first.kill().await.unwrap();
    let _second = service_in(port, &counts, &more).await;
    let outcome = client.outcome("render-7").await.unwrap();
    assert_eq!(outcome.text(), Some("done: page 7 rendered"), "{outcome:?}");
    assert_eq!(
        RENDERS.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "the tool began once"
    );
}

//! The MCP tasks extension (`io.modelcontextprotocol/tasks`) on the wire,
//! under protocol 2026-07-28: which calls become tasks, who may see them,
//! and a tool that asks in its request before it goes on as a task.

use crate::mcp_support;

use std::net::SocketAddr;
use std::time::Duration;

use behest::mcp::http::{router, HttpOptions};
use behest::mcp::{Elicitation, McpCaller, McpServer, McpTasks, TaskSupport};
use behest::{tool, ToolContext, ToolError, ToolRegistry, ToolRuntime};
use mcp_support::{http_client, imported, serve_app};
use serde_json::{json, Value};

/// Work for `ms` milliseconds.
#[tool]
async fn work(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("worked {ms} ms")
}

/// Work that only a client taking tasks may start.
#[tool]
async fn batch() -> String {
    "batched".to_owned()
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    name: String,
}

/// Ask a name in the request, then go on as a task.
#[tool]
async fn hello_later(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = cx
        .extension::<McpCaller>()
        .ok_or_else(|| ToolError::execution("no MCP caller"))?;
    let name = match caller.elicit::<Name>("What is your name?").await? {
        Elicitation::Accepted(Name { name }) => name,
        _ => "nobody".to_owned(),
    };
    let became = caller.continue_as_task().await;
    Ok(format!("hello {name} (a task: {became})"))
}

async fn serve() -> SocketAddr {
    let registry = ToolRegistry::new()
        .with(Work)
        .unwrap()
        .with(Batch)
        .unwrap()
        .with(HelloLater)
        .unwrap();
    let tasks = McpTasks::new()
        .tool("work", TaskSupport::Optional)
        .tool("batch", TaskSupport::Required)
        .deferred_tool("hello_later", TaskSupport::Optional);
    let server = McpServer::new(ToolRuntime::new(registry))
        .unwrap()
        .tasks(tasks)
        .unwrap();
    let options =
        HttpOptions::default().bearer_identity(|token| token.split('#').next().map(str::to_owned));
    serve_app(router(server, "/mcp", &options)).await
}

/// A request of protocol 2026-07-28 by bearer `token`, its client taking
/// tasks or not: the JSON-RPC answer.
async fn rpc(addr: SocketAddr, token: &str, tasks: bool, method: &str, params: Value) -> Value {
    let mut params = params;
    let mut capabilities = json!({"elicitation": {"form": {}}});
    if tasks {
        capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    });
    let name = params
        .get("name")
        .or_else(|| params.get("taskId"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let mut request = http_client()
        .post(format!("http://{addr}/mcp"))
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    let body = request
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    serde_json::from_str(&body)
        .ok()
        .or_else(|| {
            body.lines()
                .filter_map(|line| line.strip_prefix("data:"))
                .find_map(|data| serde_json::from_str(data.trim()).ok())
        })
        .unwrap_or_else(|| panic!("no JSON-RPC answer in {body}"))
}

/// `tasks/get` until the task ends: its last answer.
async fn ended(addr: SocketAddr, token: &str, id: &str) -> Value {
    for _ in 0..100 {
        let got = rpc(addr, token, true, "tasks/get", json!({"taskId": id})).await;
        let status = got["result"]["status"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if ["completed", "failed", "cancelled"].contains(&status.as_str()) {
            return got;
        }
        assert!(
            ["working", "input_required"].contains(&status.as_str()),
            "{got}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("task {id} did not end");
}

/// A client that takes tasks gets one for a task tool; one that does not
/// gets the result in its request (optional) or error -32021 naming the
/// extension (required), and may not use `tasks/*` at all.
#[tokio::test]
async fn only_a_client_that_takes_tasks_gets_them() {
    let addr = serve().await;
    let plain = rpc(
        addr,
        "ada#1",
        false,
        "tools/call",
        json!({"name": "work", "arguments": {"ms": 1}}),
    )
    .await;
    assert_eq!(
        plain["result"]["content"][0]["text"], "worked 1 ms",
        "{plain}"
    );
    assert!(plain["result"].get("taskId").is_none(), "{plain}");
    let refused = rpc(
        addr,
        "ada#1",
        false,
        "tools/call",
        json!({"name": "batch", "arguments": {}}),
    )
    .await;
    assert_eq!(refused["error"]["code"], -32021, "{refused}");
    assert!(
        refused["error"]["data"]["requiredCapabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some(),
        "{refused}"
    );
    let gated = rpc(addr, "ada#1", false, "tasks/get", json!({"taskId": "x"})).await;
    assert_eq!(gated["error"]["code"], -32021, "{gated}");
    let created = rpc(
        addr,
        "ada#1",
        true,
        "tools/call",
        json!({"name": "batch", "arguments": {}}),
    )
    .await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    let id = created["result"]["taskId"].as_str().unwrap();
    let done = ended(addr, "ada#1", id).await;
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "batched",
        "{done}"
    );
}

/// A task is its caller's: the same identity with a new token sees it,
/// another identity finds no such task and cannot cancel it.
#[tokio::test]
async fn a_task_is_seen_and_cancelled_by_its_caller_only() {
    let addr = serve().await;
    let created = rpc(
        addr,
        "ada#1",
        true,
        "tools/call",
        json!({"name": "work", "arguments": {"ms": 60000}}),
    )
    .await;
    let result = &created["result"];
    assert_eq!(result["resultType"], "task", "{created}");
    assert_eq!(result["status"], "working", "{created}");
    assert!(
        result["ttlMs"].as_u64().is_some_and(|ttl| ttl > 0),
        "{created}"
    );
    let id = result["taskId"].as_str().unwrap().to_owned();
    let mine = rpc(addr, "ada#2", true, "tasks/get", json!({"taskId": id})).await;
    assert_eq!(mine["result"]["status"], "working", "{mine}");
    for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
        let params = json!({"taskId": id, "inputResponses": {}});
        let theirs = rpc(addr, "bob#1", true, method, params).await;
        assert_eq!(theirs["error"]["code"], -32602, "{method}: {theirs}");
    }
    let cancelled = rpc(addr, "ada#1", true, "tasks/cancel", json!({"taskId": id})).await;
    assert_eq!(
        cancelled["result"],
        json!({"resultType": "complete"}),
        "{cancelled}"
    );
    let after = ended(addr, "ada#1", &id).await;
    assert_eq!(after["result"]["status"], "cancelled", "{after}");
}

/// A deferred task tool asks in its request's rounds; the retry with the
/// answer is answered with a task, whose result has what was gathered.
#[tokio::test]
async fn a_deferred_tool_asks_first_and_then_goes_on_as_a_task() {
    let addr = serve().await;
    let call = json!({"name": "hello_later", "arguments": {}});
    let asked = rpc(addr, "ada#1", true, "tools/call", call.clone()).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    assert!(result.get("taskId").is_none(), "{asked}");
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut retry = call.clone();
    retry["requestState"] = result["requestState"].clone();
    retry["inputResponses"] = json!({key: {"action": "accept", "content": {"name": "Ada"}}});
    let created = rpc(addr, "ada#1", true, "tools/call", retry).await;
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    assert!(created["result"].get("requestState").is_none(), "{created}");
    let id = created["result"]["taskId"].as_str().unwrap();
    let done = ended(addr, "ada#1", id).await;
    assert_eq!(
        done["result"]["result"]["content"][0]["text"], "hello Ada (a task: true)",
        "{done}"
    );
    // Without the extension, the same tool finishes in its request.
    let asked = rpc(addr, "ada#1", false, "tools/call", call.clone()).await;
    let result = &asked["result"];
    let key = result["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .next()
        .unwrap()
        .clone();
    let mut retry = call;
    retry["requestState"] = result["requestState"].clone();
    retry["inputResponses"] = json!({key: {"action": "accept", "content": {"name": "Bob"}}});
    let done = rpc(addr, "ada#1", false, "tools/call", retry).await;
    assert_eq!(
        done["result"]["content"][0]["text"], "hello Bob (a task: false)",
        "{done}"
    );
}

/// A task tool the runtime does not have is an error naming it, not a
/// setting that silently does nothing.
#[test]
fn a_task_tool_the_runtime_lacks_is_an_error() {
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Work).unwrap());
    let tasks = McpTasks::new().tool("wrok", TaskSupport::Optional);
    let error = McpServer::new(runtime).unwrap().tasks(tasks).unwrap_err();
    assert!(
        matches!(&error, behest::mcp::McpTasksError::UnknownTool(tool) if tool == "wrok"),
        "{error:?}"
    );
    assert!(error.to_string().contains("`wrok`"), "{error}");
}

/// Ask to confirm, then work for `ms` milliseconds.
#[tool]
async fn confirm_work(ms: u64, #[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = cx
        .extension::<McpCaller>()
        .ok_or_else(|| ToolError::execution("no MCP caller"))?;
    let name = match caller.elicit::<Name>("Who confirms?").await? {
        Elicitation::Accepted(Name { name }) => name,
        _ => return Ok("not confirmed".to_owned()),
    };
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(format!("confirmed by {name}"))
}

/// The labels of the `watched` calls whose work was dropped (cancelled).
static WATCHED_DROPPED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

struct Watch(String);

impl Drop for Watch {
    fn drop(&mut self) {
        WATCHED_DROPPED.lock().unwrap().push(self.0.clone());
    }
}

/// Work until cancelled.
#[tool]
async fn watched(label: String) -> String {
    let watch = Watch(label);
    tokio::time::sleep(Duration::from_secs(600)).await;
    std::mem::forget(watch);
    "never".to_owned()
}

/// Waits until the `watched` call labelled `label` was cancelled on the
/// server.
async fn watched_cancelled(label: &str) {
    for _ in 0..100 {
        if WATCHED_DROPPED
            .lock()
            .unwrap()
            .iter()
            .any(|dropped| dropped == label)
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the server's task `{label}` was not cancelled");
}

/// A server whose `work` and `confirm_work` answer with tasks, over HTTP
/// with sessions: its URL, and the server (to see its tasks).
async fn task_server() -> String {
    let registry = ToolRegistry::new()
        .with(Work)
        .unwrap()
        .with(ConfirmWork)
        .unwrap()
        .with(Watched)
        .unwrap();
    let runtime = ToolRuntime::builder(registry)
        .tool_timeout("work", Duration::from_secs(600))
        .tool_timeout("watched", Duration::from_secs(600))
        .build();
    let tasks = McpTasks::new()
        .tool("work", TaskSupport::Optional)
        .tool("watched", TaskSupport::Optional)
        .tool("confirm_work", TaskSupport::Required)
        .poll_interval(Duration::from_millis(20));
    let server = McpServer::new(runtime).unwrap().tasks(tasks).unwrap();
    let addr = serve_app(router(server, "/mcp", &HttpOptions::default())).await;
    format!("http://{addr}/mcp")
}

/// behest's client declares the extension and awaits a task tool's task:
/// `McpClient::call` and an imported tool both get the result, the
/// task's question answered by the client's form answerer.
#[tokio::test]
async fn the_client_awaits_a_task_and_answers_its_questions() {
    let url = task_server().await;
    let options = behest::mcp::ConnectOptions::default().elicitation(
        |form: behest::mcp::FormRequest| async move {
            assert_eq!(form.message, "Who confirms?");
            behest::mcp::FormAnswer::Accept(json!({"name": "Ada"}).as_object().unwrap().clone())
        },
    );
    let client = behest::mcp::McpClient::http_with(&url, &options)
        .await
        .unwrap();
    let arguments = json!({"ms": 30}).as_object().unwrap().clone();
    let result = client.call("work", arguments.clone()).await.unwrap();
    assert_eq!(
        serde_json::to_value(&result).unwrap()["content"][0]["text"],
        "worked 30 ms"
    );
    let registry = imported(&client).await;
    let runtime = ToolRuntime::new(registry);
    let call = behest::ToolCall::new("c1", "confirm_work", json!({"ms": 30}));
    let output = runtime.call(call).await.outcome.unwrap();
    assert_eq!(output.text.as_deref(), Some("confirmed by Ada"));
}

/// An imported task tool's call cancelled on the client cancels the
/// server's task, which then says so.
#[tokio::test]
async fn cancelling_an_imported_call_cancels_its_task() {
    let url = task_server().await;
    let client = behest::mcp::McpClient::http(&url).await.unwrap();
    let registry = imported(&client).await;
    let runtime = ToolRuntime::new(registry);
    let token = behest::CancellationToken::new();
    let options = behest::CallOptions::default().cancellation(token.clone());
    let call = behest::ToolCall::new("c1", "watched", json!({"label": "cancelled"}));
    let running = tokio::spawn(async move { runtime.call_with(call, options).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    token.cancel();
    let outcome = tokio::time::timeout(Duration::from_secs(10), running)
        .await
        .unwrap()
        .unwrap()
        .outcome;
    assert!(matches!(outcome, Err(ToolError::Cancelled)), "{outcome:?}");
    // The server's task was cancelled: its tool's work dropped.
    watched_cancelled("cancelled").await;
}

/// An imported task tool's call that times out on the client cancels the
/// server's task too. (The timeout leaves the call time to become a task
/// first, on a loaded machine too.)
#[tokio::test]
async fn an_imported_call_that_times_out_cancels_its_task() {
    let url = task_server().await;
    let client = behest::mcp::McpClient::http(&url).await.unwrap();
    let registry = imported(&client).await;
    let runtime = ToolRuntime::builder(registry)
        .tool_timeout("watched", Duration::from_millis(1000))
        .build();
    let call = behest::ToolCall::new("c1", "watched", json!({"label": "timed out"}));
    let outcome = runtime.call(call).await.outcome;
    assert!(
        matches!(outcome, Err(ToolError::Timeout { .. })),
        "{outcome:?}"
    );
    watched_cancelled("timed out").await;
}

/// An imported task tool run in two parts, as an engine that plays calls
/// again runs it: the start sends the call and keeps the task; the rest,
/// dropped in the middle of its wait (as a crash drops it), does not
/// cancel the task, and played again from what the start kept it awaits
/// that same task to its end.
#[tokio::test]
async fn an_imported_call_in_two_parts_awaits_the_task_its_start_made() {
    let url = task_server().await;
    let client = behest::mcp::McpClient::http(&url).await.unwrap();
    let registry = imported(&client).await;
    assert!(registry.keeps_checkpoints("work"));
    let runtime = ToolRuntime::new(registry);
    let part = |part: behest::CallPart| behest::CallOptions::default().extension(part);
    let call = || behest::ToolCall::new("c1", "work", json!({"ms": 600}));
    let started = runtime
        .call_with(call(), part(behest::CallPart::Start))
        .await
        .outcome
        .unwrap();
    let kept: Value = serde_json::from_str(started.text.as_deref().unwrap()).unwrap();
    let finish = || runtime.call_with(call(), part(behest::CallPart::Finish(kept.clone())));
    let cut = tokio::time::timeout(Duration::from_millis(150), finish()).await;
    assert!(cut.is_err(), "the first wait is cut before the task ends");
    let rest = finish().await.outcome.unwrap();
    assert_eq!(rest.text.as_deref(), Some("worked 600 ms"));
}

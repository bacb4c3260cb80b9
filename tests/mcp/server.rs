//! MCP through rmcp: a behest runtime served to rmcp's own client and to
//! behest's, over an in-process byte stream and over streamable HTTP on
//! 127.0.0.1; remote tools imported into a registry and used in a run.

#![cfg(feature = "mcp")]

use crate::mcp_support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::mcp::rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientRequest, ProgressNotificationParam, Request,
};
use behest::mcp::rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use behest::mcp::rmcp::{ClientHandler, RoleClient, ServiceExt};
use behest::mcp::{Elicitation, ImportOptions, McpCaller, McpClient, McpServer};
use behest::run::ScriptedTurn;
use behest::{
    tool, Agent, Attachment, Message, Progress, ScriptedModel, ToolCall, ToolContext, ToolError,
    ToolOutput, ToolRegistry, ToolRuntime,
};
use mcp_support::{http_client, serve_app};
use serde_json::{json, Map, Value};

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The weather somewhere.
#[derive(serde::Serialize, schemars::JsonSchema)]
struct Weather {
    city: String,
    celsius: f64,
}

/// Forecast the weather of a city.
#[tool(read_only)]
fn forecast(city: String) -> Weather {
    Weather {
        city,
        celsius: 21.5,
    }
}

/// Work in three steps, reporting progress.
#[tool]
async fn work(#[ctx] cx: ToolContext) -> &'static str {
    for step in 1..=3 {
        cx.report_progress(
            Progress::new(f64::from(step), Some(3.0)).with_message(format!("step {step}")),
        );
        tokio::task::yield_now().await;
    }
    "done"
}

static SAW_CANCEL: AtomicBool = AtomicBool::new(false);

/// Wait until cancelled.
#[tool]
async fn wait_long(#[ctx] cx: ToolContext) -> &'static str {
    cx.cancellation().cancelled().await;
    SAW_CANCEL.store(true, Ordering::SeqCst);
    "cancelled"
}

/// Always fail loudly.
#[tool]
fn explode() -> String {
    panic!("secret internals")
}

/// Take too long.
#[tool(timeout = "50ms")]
async fn dawdle() -> &'static str {
    tokio::time::sleep(Duration::from_secs(30)).await;
    "late"
}

fn runtime() -> ToolRuntime {
    let registry = ToolRegistry::new()
        .with(Add)
        .unwrap()
        .with(Forecast)
        .unwrap()
        .with(Work)
        .unwrap()
        .with(WaitLong)
        .unwrap()
        .with(Explode)
        .unwrap()
        .with(Dawdle)
        .unwrap();
    ToolRuntime::new(registry)
}

/// A client that keeps every progress notification it receives.
#[derive(Clone, Default)]
struct Recording(Arc<Mutex<Vec<ProgressNotificationParam>>>);

impl ClientHandler for Recording {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params);
    }
}

/// `server` on one end of an in-process stream, rmcp's client on the other.
async fn connect(server: McpServer) -> RunningService<RoleClient, Recording> {
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve_on(server_end).await });
    Recording::default().serve(client_end).await.unwrap()
}

/// behest's client of an rmcp server of the test's own, in process.
async fn client_of(server: impl behest::mcp::rmcp::ServerHandler) -> McpClient {
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve(server_end).await.unwrap().waiting().await });
    McpClient::connect(client_end).await.unwrap()
}

/// Waits up to a second for `done`: notifications travel beside results,
/// and may trail them a moment.
async fn eventually(done: impl Fn() -> bool) {
    for _ in 0..100 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn arguments(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

async fn call(
    client: &RunningService<RoleClient, Recording>,
    name: &'static str,
    args: Value,
) -> CallToolResult {
    client
        .call_tool(CallToolRequestParams::new(name).with_arguments(arguments(args)))
        .await
        .unwrap()
}

pub(crate) fn text_of(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| block.as_text())
        .map(|text| text.text.clone())
        .collect()
}

#[tokio::test]
async fn rmcp_lists_the_tools_page_by_page_as_behest_declares_them() {
    let server = McpServer::new(runtime())
        .unwrap()
        .named("weather", "2.0.0")
        .page_size(4);
    let client = connect(server).await;
    let info = client.peer_info().unwrap();
    let implementation = info.server_info.clone().unwrap();
    assert_eq!(implementation.name, "weather");
    assert_eq!(implementation.version, "2.0.0");
    let first = client.list_tools(None).await.unwrap();
    assert_eq!(first.tools.len(), 4);
    assert_eq!(first.next_cursor.as_deref(), Some("4"));
    let all = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = all.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(
        names,
        ["add", "forecast", "work", "wait_long", "explode", "dawdle"]
    );
    // The same declaration as `providers::mcp` writes.
    let registry = runtime();
    let expected = behest::providers::mcp::tools(registry.registry())
        .unwrap()
        .tools;
    for (tool, expected) in all.iter().zip(&expected) {
        assert_eq!(&serde_json::to_value(tool).unwrap(), expected);
    }
    let forecast = &all[1];
    assert_eq!(
        forecast.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
    assert!(forecast.output_schema.is_some());
    // A cursor the server never gave is a protocol error.
    let bad = client
        .list_tools(Some(
            behest::mcp::rmcp::model::PaginatedRequestParams::default()
                .with_cursor(Some("99".into())),
        ))
        .await;
    assert!(bad.is_err());
}

#[tokio::test]
async fn calls_answer_with_results_errors_the_model_can_read_and_protocol_errors() {
    let client = connect(McpServer::new(runtime()).unwrap()).await;

    let sum = call(&client, "add", json!({"a": 2, "b": 3})).await;
    assert_eq!(sum.is_error, Some(false));
    assert_eq!(text_of(&sum), "5");

    // Structured output validates against the listed output schema.
    let weather = call(&client, "forecast", json!({"city": "Oslo"})).await;
    let structured = weather.structured_content.clone().unwrap();
    assert_eq!(structured, json!({"city": "Oslo", "celsius": 21.5}));
    let tools = client.list_all_tools().await.unwrap();
    let schema = Value::Object((*tools[1].output_schema.clone().unwrap()).clone());
    assert!(jsonschema::validator_for(&schema)
        .unwrap()
        .is_valid(&structured));

    // Bad arguments: a result with isError, and the text says what to fix.
    let bad = call(&client, "add", json!({"a": 2, "b": "three"})).await;
    assert_eq!(bad.is_error, Some(true));
    let text = text_of(&bad);
    assert!(text.contains("/b"), "{text}");

    // A panic and a timeout are results with isError; the panic's text
    // stays on the server.
    let panicked = call(&client, "explode", json!({})).await;
    assert_eq!(panicked.is_error, Some(true));
    assert!(!text_of(&panicked).contains("secret internals"));
    assert!(
        text_of(&panicked).contains("internal error"),
        "{}",
        text_of(&panicked)
    );
    let late = call(&client, "dawdle", json!({})).await;
    assert_eq!(late.is_error, Some(true));
    assert!(text_of(&late).contains("50ms"), "{}", text_of(&late));

    // An unknown tool is the JSON-RPC error rmcp uses, -32602.
    let unknown = client
        .call_tool(CallToolRequestParams::new("ad").with_arguments(Map::new()))
        .await
        .unwrap_err();
    let behest::mcp::rmcp::ServiceError::McpError(error) = unknown else {
        panic!("{unknown:?}");
    };
    assert_eq!(error.code.0, -32602);
    assert!(error.message.contains("add"), "{}", error.message);

    // The server still serves.
    assert_eq!(
        text_of(&call(&client, "add", json!({"a": 1, "b": 1})).await),
        "2"
    );
}

#[tokio::test]
async fn progress_reaches_the_client_in_order() {
    let client = connect(McpServer::new(runtime()).unwrap()).await;
    let done = call(&client, "work", json!({})).await;
    assert_eq!(text_of(&done), "done");
    // Notifications may still be in flight behind the response.
    eventually(|| client.service().0.lock().unwrap().len() == 3).await;
    let mut seen: Vec<(f64, Option<String>)> = client
        .service()
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|report| (report.progress, report.message.clone()))
        .collect();
    // rmcp's client hands each notification to its own task; the server
    // sends them in order, one task per call.
    seen.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(
        seen,
        [
            (1.0, Some("step 1".to_owned())),
            (2.0, Some("step 2".to_owned())),
            (3.0, Some("step 3".to_owned()))
        ]
    );
}

#[tokio::test]
async fn a_cancelled_call_sees_its_token_and_the_server_keeps_serving() {
    let client = connect(McpServer::new(runtime()).unwrap()).await;
    let request = ClientRequest::CallToolRequest(Request::new(
        CallToolRequestParams::new("wait_long").with_arguments(Map::new()),
    ));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    handle.cancel(Some("changed my mind".into())).await.unwrap();
    eventually(|| SAW_CANCEL.load(Ordering::SeqCst)).await;
    assert!(
        SAW_CANCEL.load(Ordering::SeqCst),
        "the tool saw no cancellation"
    );
    assert_eq!(
        text_of(&call(&client, "add", json!({"a": 4, "b": 4})).await),
        "8"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_calls_get_one_result_each() {
    let client = Arc::new(connect(McpServer::new(runtime()).unwrap()).await);
    let calls = (0..1000).map(|n| {
        let client = client.clone();
        async move {
            let result = call(&client, "add", json!({"a": n, "b": 1})).await;
            (n, text_of(&result))
        }
    });
    let results = futures::future::join_all(calls).await;
    assert_eq!(results.len(), 1000);
    for (n, text) in results {
        assert_eq!(text, (n + 1).to_string());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_tools_are_validated_locally_and_run_remotely_in_a_run() {
    let registry = ToolRegistry::new().with(Add).unwrap().with(Work).unwrap();
    let runtime = ToolRuntime::new(registry);
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let server = McpServer::new(runtime.clone()).unwrap();
    tokio::spawn(async move { server.serve_on(server_end).await });

    let client = McpClient::connect(client_end).await.unwrap();
    let mut registry = ToolRegistry::new().with(Forecast).unwrap();
    let names = client
        .import_into(&mut registry, &ImportOptions::prefixed("calc_"))
        .await
        .unwrap();
    assert_eq!(names, ["calc_add", "calc_work"]);
    let runtime = ToolRuntime::new(registry);

    // A bad call is refused here, with the remote schema, before it goes.
    let refused = runtime
        .call(ToolCall::new("c0", "calc_add", json!({"a": 1})))
        .await;
    let error = refused.outcome.unwrap_err();
    assert!(error.to_string().contains("`/b`"), "{error}");

    // Progress of the remote call reaches the local caller.
    let reports = Arc::new(Mutex::new(Vec::new()));
    let sink = reports.clone();
    let options = behest::runtime::CallOptions::new().progress(behest::ProgressSink::new(
        move |_, progress| {
            sink.lock().unwrap().push(progress.progress);
        },
    ));
    let worked = runtime
        .call_with(ToolCall::new("c1", "calc_work", json!({})), options)
        .await;
    assert_eq!(worked.outcome.unwrap().to_text(), "done");
    // The server sends them in order, before the result; rmcp's client may
    // let one overtake another, and a report that does not move the call
    // on is dropped: what arrives only increases, up to the last, which
    // may come after the answer (on two worker threads it often does).
    eventually(|| reports.lock().unwrap().last() == Some(&3.0)).await;
    let reports = reports.lock().unwrap().clone();
    assert!(
        reports.windows(2).all(|pair| pair[0] < pair[1]) && reports.last() == Some(&3.0),
        "{reports:?}"
    );

    // In a run: an imported tool and a local one side by side.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("c2", "calc_add", json!({"a": 20, "b": 22})),
            ToolCall::new("c3", "forecast", json!({"city": "Rome"})),
        ])
        .expect_tools(["forecast", "calc_add", "calc_work"]),
        ScriptedTurn::text("42, and mild in Rome")
            .expect_ok("c2", "42")
            .expect_ok("c3", "Rome"),
    ]);
    let outcome = Agent::new(model, runtime)
        .invoke([Message::user("go")])
        .await;
    assert_eq!(outcome.text(), Some("42, and mild in Rome"), "{outcome:?}");
}

/// The test tools served over streamable HTTP on 127.0.0.1.
async fn serve_http(options: &behest::mcp::http::HttpOptions) -> std::net::SocketAddr {
    let app = behest::mcp::http::router(McpServer::new(runtime()).unwrap(), "/mcp", options);
    serve_app(app).await
}

/// The tools of the server at `addr`, imported into a runtime.
async fn import_over_http(addr: std::net::SocketAddr, token: Option<&str>) -> ToolRuntime {
    let client = McpClient::http_with_token(&format!("http://{addr}/mcp"), token)
        .await
        .unwrap();
    let mut registry = ToolRegistry::new();
    client
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    // The tools keep the connection alive.
    ToolRuntime::new(registry)
}

/// Streamable HTTP on 127.0.0.1: behest's client imports and calls; a
/// request naming another host is refused (DNS rebinding), and so is one
/// without the bearer token when one is set.
#[tokio::test]
async fn the_runtime_is_served_over_streamable_http() {
    use behest::mcp::http::HttpOptions;

    let mut options = HttpOptions::default();
    options.bearer_token = Some("let-me-in".into());
    let addr = serve_http(&options).await;
    let open_addr = serve_http(&HttpOptions::default()).await;

    let imported = import_over_http(open_addr, None).await;
    let sum = imported
        .call(ToolCall::new("c1", "add", json!({"a": 40, "b": 2})))
        .await;
    assert_eq!(sum.outcome.unwrap().to_text(), "42");

    let initialize: Value = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}});
    let post = |addr: std::net::SocketAddr, host: &str, token: Option<&str>| {
        let mut request = http_client()
            .post(format!("http://{addr}/mcp"))
            .header("host", host)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        request.send()
    };
    // Stateless, for replicas behind a load balancer: each request stands
    // alone, progress still comes with the call.
    let mut stateless = HttpOptions::default();
    stateless.stateless = true;
    let imported = import_over_http(serve_http(&stateless).await, None).await;
    let sum = imported
        .call(ToolCall::new("c2", "add", json!({"a": 1, "b": 2})))
        .await;
    assert_eq!(sum.outcome.unwrap().to_text(), "3");
    let worked = imported.call(ToolCall::new("c3", "work", json!({}))).await;
    assert_eq!(worked.outcome.unwrap().to_text(), "done");

    // Origins checked when listed; bodies over the limit refused.
    let mut guarded = HttpOptions::default();
    guarded.allowed_origins = vec!["http://localhost:3000".into()];
    guarded.max_body_bytes = 1024;
    let guarded_addr = serve_http(&guarded).await;
    let from = |origin: &str| {
        http_client()
            .post(format!("http://{guarded_addr}/mcp"))
            .header("origin", origin)
            .header("accept", "application/json, text/event-stream")
            .json(&initialize)
            .send()
    };
    assert_eq!(from("http://evil.example").await.unwrap().status(), 403);
    assert_eq!(from("http://localhost:3000").await.unwrap().status(), 200);
    let mut huge = initialize.clone();
    huge["params"]["clientInfo"]["name"] = json!("x".repeat(4096));
    let too_big = http_client()
        .post(format!("http://{guarded_addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&huge)
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 413);

    let rebound = post(open_addr, "evil.example", None).await.unwrap();
    assert_eq!(rebound.status(), 403);
    let local = post(open_addr, "127.0.0.1", None).await.unwrap();
    assert_eq!(local.status(), 200);
    let anonymous = post(addr, "127.0.0.1", None).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert_eq!(anonymous.headers()["www-authenticate"], "Bearer");
    let wrong = post(addr, "127.0.0.1", Some("let-me-inn")).await.unwrap();
    assert_eq!(wrong.status(), 401);
    // behest's client with the token.
    let imported = import_over_http(addr, Some("let-me-in")).await;
    assert!(imported.registry().get("add").is_some());
    let authorized = post(addr, "127.0.0.1", Some("let-me-in")).await.unwrap();
    assert_eq!(authorized.status(), 200);
}

// FastMCP 4, when `BEHEST_FASTMCP_PYTHON` has it ----------------------------

/// Runs FastMCP 4's client in `mode` against `target`, and reads what it saw.
async fn fastmcp_client(mode: &str, target: &str) -> Value {
    let python = std::env::var_os("BEHEST_FASTMCP_PYTHON").expect("BEHEST_FASTMCP_PYTHON");
    let output = tokio::process::Command::new(python)
        .arg(python_file("fastmcp_client.py"))
        .args([mode, target])
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "FastMCP's client ({mode}, {target}) failed: {stderr}"
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// FastMCP's client in its default mode speaks the newest protocol
/// (2026-07-28): a tool's elicitation and sampling reach its handlers as
/// input-required rounds, and a tool's log message its log handler, over
/// stdio and HTTP alike; in FastMCP's legacy mode (2025-11-25) the same
/// work as server-to-client requests.
#[tokio::test]
#[cfg_attr(
    not(behest_fastmcp),
    ignore = "skipped: BEHEST_FASTMCP_PYTHON does not name a Python with fastmcp (.ci/run installs it)"
)]
async fn fastmcp_clients_in_auto_and_legacy_mode_elicit_sample_and_log() {
    let (_server, url) = python_test_server(&[]).await;
    let stdio = env!("CARGO_BIN_EXE_behest-mcp-test-server");
    for mode in ["auto", "legacy"] {
        for target in [stdio, url.as_str()] {
            let seen = fastmcp_client(mode, target).await;
            let context = format!("{mode} {target}: {seen}");
            let protocol = if mode == "auto" {
                "2026-07-28"
            } else {
                "2025-11-25"
            };
            assert_eq!(seen["protocol"], protocol, "{context}");
            assert_eq!(seen["add"], "5", "{context}");
            assert_eq!(seen["greeting"], "Hello, Ada!", "{context}");
            assert_eq!(seen["greeting_is_error"], false, "{context}");
            assert_eq!(seen["asked"]["elicitation"], "Who are you?", "{context}");
            assert_eq!(seen["asked"]["sampling"], "Greet Ada (36)", "{context}");
            let logs = seen["logs"].as_array().unwrap();
            assert!(
                logs.iter()
                    .any(|log| log.to_string().contains("looking up")),
                "{context}"
            );
        }
    }
}

/// The MCP Inspector's CLI (`BEHEST_INSPECTOR`) in protocol era `era`
/// against `target`, calling `tool` with `args`: its exit status and
/// output.
async fn inspector(era: &str, target: &str, tool: &str, args: &[&str]) -> (bool, String) {
    let inspector = std::env::var_os("BEHEST_INSPECTOR").expect("BEHEST_INSPECTOR");
    let mut command = tokio::process::Command::new(inspector);
    command
        .args(["--cli", "--protocol-era", era, target])
        .args(["--method", "tools/call", "--tool-name", tool]);
    for arg in args {
        command.args(["--tool-arg", arg]);
    }
    let output = command.output().await.unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), said)
}

/// The MCP Inspector's CLI in each of its protocol eras (modern is
/// 2026-07-28 only, auto probes for it, legacy is the `initialize`
/// handshake) calls a tool over stdio and HTTP. It declares neither
/// elicitation nor sampling, so a tool that would ask its user is told so
/// and the model reads why, in every era.
#[tokio::test]
#[cfg_attr(
    not(behest_inspector),
    ignore = "skipped: BEHEST_INSPECTOR does not name the MCP Inspector (.ci/run installs it)"
)]
async fn the_inspector_calls_tools_in_every_protocol_era() {
    let (_server, url) = python_test_server(&[]).await;
    let stdio = env!("CARGO_BIN_EXE_behest-mcp-test-server");
    for target in [stdio, url.as_str()] {
        for era in ["modern", "auto", "legacy"] {
            let (ok, said) = inspector(era, target, "add", &["a=2", "b=3"]).await;
            assert!(ok, "{era} {target}: {said}");
            let result: Value = serde_json::from_str(said.trim()).unwrap_or(Value::Null);
            assert_eq!(result["content"][0]["text"], "5", "{era} {target}: {said}");
            // An error result is printed, then the CLI's own error line.
            let (ok, said) = inspector(era, target, "greet_user", &[]).await;
            assert!(!ok, "{era} {target}: {said}");
            let printed = said.split("\n}").next().unwrap_or_default();
            let result: Value =
                serde_json::from_str(&format!("{printed}\n}}")).unwrap_or(Value::Null);
            assert_eq!(result["isError"], true, "{era} {target}: {said}");
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            assert!(
                text.contains("did not declare `elicitation`"),
                "{era} {target}: {said}"
            );
        }
    }
}

// The official Python SDK (`mcp`), when `BEHEST_PYTHON` has it ------------

fn python() -> std::path::PathBuf {
    std::env::var_os("BEHEST_PYTHON")
        .expect("BEHEST_PYTHON")
        .into()
}

fn python_file(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/mcp_python")
        .join(name)
}

/// Runs the SDK's client script with `args` (a mode, a target, more) and
/// reads what it saw.
async fn python_client(args: &[&str]) -> Value {
    let output = tokio::process::Command::new(python())
        .arg(python_file("client.py"))
        .args(args)
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the Python client failed: {stderr}"
    );
    // The SDK ends its session with DELETE on exit and warns unless the
    // answer is 200 or 204.
    assert!(!stderr.contains("termination failed"), "{stderr}");
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The test server over HTTP on a free port, with `args` after its
/// address; its address.
async fn python_test_server(args: &[&str]) -> (tokio::process::Child, String) {
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_behest-mcp-test-server"))
        .args(["--http", "127.0.0.1:0"])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = server.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let addr = lines.next_line().await.unwrap().unwrap();
    (server, format!("http://{addr}/mcp"))
}

/// What the SDK's client must have seen of the test server.
fn assert_python_saw_the_server(seen: &Value) {
    assert_eq!(seen["server"], "behest-test");
    assert_eq!(
        seen["tools"],
        json!(["add", "forecast", "work", "greet_user", "look_up"])
    );
    assert_eq!(seen["read_only"], json!(["forecast"]));
    assert_eq!(seen["add"], json!({"is_error": false, "text": "5"}));
    // The SDK re-validated structuredContent against the outputSchema.
    assert_eq!(seen["forecast"]["is_error"], false);
    assert_eq!(seen["forecast"]["structured"]["city"], "Oslo");
    assert_eq!(seen["bad"]["is_error"], true);
    assert!(
        seen["bad"]["text"].as_str().unwrap().contains("`/b`"),
        "{seen}"
    );
    assert_eq!(seen["work"], "done");
    assert_eq!(
        seen["progress"],
        json!([
            [1.0, 3.0, "step 1"],
            [2.0, 3.0, "step 2"],
            [3.0, 3.0, "step 3"]
        ])
    );
    assert_eq!(seen["unknown"], -32602);
}

#[tokio::test]
#[cfg_attr(
    not(behest_python_mcp),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the mcp package (.ci/run installs it)"
)]
async fn the_official_python_client_uses_the_stdio_server() {
    let server = env!("CARGO_BIN_EXE_behest-mcp-test-server");
    let seen = python_client(&["stdio", server]).await;
    assert_python_saw_the_server(&seen);
}

#[tokio::test]
#[cfg_attr(
    not(behest_python_mcp),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the mcp package (.ci/run installs it)"
)]
async fn the_official_python_client_uses_the_http_server() {
    let (_server, url) = python_test_server(&[]).await;
    let seen = python_client(&["http", &url]).await;
    assert_python_saw_the_server(&seen);
}

/// Over HTTP, a tool's questions reach the SDK's client, which declared
/// elicitation and sampling: its form is `Person`'s schema, its answers
/// come back to the tool.
#[tokio::test]
#[cfg_attr(
    not(behest_python_mcp),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the mcp package (.ci/run installs it)"
)]
async fn the_official_python_client_answers_a_tools_questions() {
    let (_server, url) = python_test_server(&[]).await;
    let seen = python_client(&["ask", &url]).await;
    assert_eq!(seen["greeting"], "Hello, Ada!", "{seen}");
    assert_eq!(seen["is_error"], false);
    assert_eq!(seen["asked"]["elicitation"]["message"], "Who are you?");
    let form = &seen["asked"]["elicitation"]["schema"];
    assert_eq!(form["properties"]["age"]["type"], "integer", "{form}");
    assert_eq!(seen["asked"]["sampling"], "Greet Ada (36)");
}

/// The SDK's client idles longer than the idle timeout (1 s standing in
/// for 30 minutes, as rmcp's 5 did) holding its notification stream open,
/// as it always does: a connected client is not idle, and its next call
/// is answered in the same session.
#[tokio::test]
#[cfg_attr(
    not(behest_python_mcp),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the mcp package (.ci/run installs it)"
)]
async fn the_official_python_client_idles_past_the_idle_timeout_and_keeps_its_session() {
    let (_server, url) = python_test_server(&["--idle-ms", "1000"]).await;
    let seen = python_client(&["idle", &url, "2.5"]).await;
    assert_eq!(seen, json!({"before": "3", "after": "7"}));
}

#[tokio::test]
#[cfg_attr(
    not(behest_python_mcp),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the mcp package (.ci/run installs it)"
)]
async fn a_fastmcp_servers_tools_are_imported_and_used_in_a_run() {
    let mut command = tokio::process::Command::new(python());
    command.arg(python_file("fastmcp_server.py"));
    let client = McpClient::child_process(command).await.unwrap();
    let mut registry = ToolRegistry::new().with(Add).unwrap();
    let names = client
        .import_into(&mut registry, &ImportOptions::prefixed("py_"))
        .await
        .unwrap();
    assert_eq!(names, ["py_multiply", "py_shout", "py_fail"]);
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("c1", "py_multiply", json!({"a": 6, "b": 7})),
            ToolCall::new("c2", "py_multiply", json!({"a": 6, "b": "seven"})),
            ToolCall::new("c3", "py_shout", json!({"text": "hi"})),
            ToolCall::new("c4", "py_fail", json!({"reason": "disk full"})),
            ToolCall::new("c5", "add", json!({"a": 1, "b": 1})),
        ]),
        ScriptedTurn::text("done")
            .expect_ok("c1", "42")
            .expect_error("c2", "`/b`")
            .expect_ok("c3", "HI")
            .expect_error("c4", "disk full")
            .expect_ok("c5", "2"),
    ]);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("go")])
        .await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
}

/// Through behest's client: a remote call cancelled here stops there, and
/// a server that went away is a clear error, not a hang.
#[tokio::test]
async fn an_imported_call_is_cancelled_remotely_and_a_lost_server_is_an_error() {
    static REMOTE_SAW_CANCEL: AtomicBool = AtomicBool::new(false);

    /// Wait until cancelled, remotely.
    #[tool]
    async fn remote_wait(#[ctx] cx: ToolContext) -> &'static str {
        cx.cancellation().cancelled().await;
        REMOTE_SAW_CANCEL.store(true, Ordering::SeqCst);
        "cancelled"
    }

    let registry = ToolRegistry::new().with(RemoteWait).unwrap();
    let server = McpServer::new(ToolRuntime::new(registry)).unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let serving = tokio::spawn(async move { server.serve_on(server_end).await });
    let client = McpClient::connect(client_end).await.unwrap();
    let mut registry = ToolRegistry::new();
    client
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    let runtime = ToolRuntime::new(registry);

    let token = behest::CancellationToken::new();
    let options = behest::runtime::CallOptions::new().cancellation(token.clone());
    let call = runtime.call_with(ToolCall::new("c1", "remote_wait", json!({})), options);
    let cancel = async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        token.cancel();
    };
    let (result, ()) = tokio::join!(call, cancel);
    assert!(
        matches!(result.outcome, Err(behest::ToolError::Cancelled)),
        "{result:?}"
    );
    eventually(|| REMOTE_SAW_CANCEL.load(Ordering::SeqCst)).await;
    assert!(REMOTE_SAW_CANCEL.load(Ordering::SeqCst));

    // A call dropped on a timeout here is cancelled there too.
    REMOTE_SAW_CANCEL.store(false, Ordering::SeqCst);
    let hasty = ToolRuntime::builder(runtime.registry().clone())
        .tool_timeout("remote_wait", Duration::from_millis(50))
        .build();
    let timed_out = hasty
        .call(ToolCall::new("c3", "remote_wait", json!({})))
        .await;
    assert!(
        matches!(timed_out.outcome, Err(behest::ToolError::Timeout { .. })),
        "{timed_out:?}"
    );
    eventually(|| REMOTE_SAW_CANCEL.load(Ordering::SeqCst)).await;
    assert!(
        REMOTE_SAW_CANCEL.load(Ordering::SeqCst),
        "the remote call ran on"
    );

    // The server goes away: the next call fails with a clear error.
    serving.abort();
    let _ = serving.await;
    let lost = tokio::time::timeout(
        Duration::from_secs(10),
        runtime.call(ToolCall::new("c2", "remote_wait", json!({}))),
    )
    .await
    .expect("a lost server is an error, not a hang");
    let error = lost.outcome.unwrap_err().to_string();
    assert!(error.contains("MCP server"), "{error}");
}

/// A server that says its tools changed: the client notices, and a new
/// import sees the new list.
#[tokio::test]
async fn a_changed_tool_list_is_noticed_and_imported_again() {
    use behest::mcp::rmcp::model::{
        CallToolResponse, ContentBlock, ListToolsResult, PaginatedRequestParams,
        ServerCapabilities, ServerConfig, Tool,
    };
    use behest::mcp::rmcp::service::RequestContext;
    use behest::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};

    /// An rmcp server whose `grow` tool adds a tool and says so.
    #[derive(Clone)]
    struct Growing(Arc<Mutex<Vec<Tool>>>);

    fn declared(name: String) -> Tool {
        let schema = json!({"type": "object", "properties": {}});
        Tool::new(
            name,
            "A tool.",
            Arc::new(schema.as_object().unwrap().clone()),
        )
    }

    impl ServerHandler for Growing {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(
                ServerCapabilities::builder()
                    .enable_tools()
                    .enable_tool_list_changed()
                    .build(),
            )
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            Ok(ListToolsResult::with_all_items(
                self.0.lock().unwrap().clone(),
            ))
        }

        async fn call_tool(
            &self,
            _request: CallToolRequestParams,
            context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            {
                let mut tools = self.0.lock().unwrap();
                let added = declared(format!("added_{}", tools.len()));
                tools.push(added);
            }
            let _ = context.peer.notify_tool_list_changed().await;
            Ok(CallToolResult::success(vec![ContentBlock::text("grew")]).into())
        }
    }

    let server = Growing(Arc::new(Mutex::new(vec![declared("grow".into())])));
    let client = client_of(server).await;
    let mut registry = ToolRegistry::new();
    let names = client
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(names, ["grow"]);
    assert!(!client.tools_changed());
    let runtime = ToolRuntime::new(registry);
    let grew = runtime.call(ToolCall::new("c1", "grow", json!({}))).await;
    assert_eq!(grew.outcome.unwrap().to_text(), "grew");
    tokio::time::timeout(Duration::from_secs(5), client.tools_change())
        .await
        .expect("the change is noticed");
    assert!(client.tools_changed());
    let mut registry = ToolRegistry::new();
    let names = client
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(names, ["grow", "added_1"]);
    assert!(!client.tools_changed());

    // Watched: the registry follows the server's list by itself, over
    // the local tools it started from.
    let base = ToolRegistry::new().with(Add).unwrap();
    let mut tools = client
        .watch_tools(base, ImportOptions::prefixed("r_"))
        .await
        .unwrap();
    let names = |registry: &ToolRegistry| registry.names().map(str::to_owned).collect::<Vec<_>>();
    assert_eq!(names(&tools.borrow()), ["add", "r_grow", "r_added_1"]);
    let runtime = ToolRuntime::new(tools.borrow().clone());
    let grew = runtime.call(ToolCall::new("c2", "r_grow", json!({}))).await;
    assert_eq!(grew.outcome.unwrap().to_text(), "grew");
    tokio::time::timeout(Duration::from_secs(5), tools.changed())
        .await
        .expect("the new list arrives")
        .unwrap();
    assert_eq!(
        names(&tools.borrow()),
        ["add", "r_grow", "r_added_1", "r_added_2"]
    );
}

// Client gone, server stopping, own checks -----------------------------------

static HELD: AtomicBool = AtomicBool::new(false);
static HELD_CANCELLED: AtomicBool = AtomicBool::new(false);

/// Hold the call until cancelled.
#[tool]
async fn hold(#[ctx] cx: ToolContext) -> &'static str {
    HELD.store(true, Ordering::SeqCst);
    cx.cancellation().cancelled().await;
    HELD_CANCELLED.store(true, Ordering::SeqCst);
    "released"
}

/// Stateless HTTP: a client that disconnects while its call runs cancels
/// it (nobody can receive the answer), and the call's permit is free
/// again: with one call admitted at a time, the next call runs. The
/// server then stops gracefully.
#[tokio::test]
async fn a_stateless_client_that_disconnects_mid_call_cancels_it_and_frees_its_permit() {
    use behest::mcp::http::{serve, HttpOptions};

    let registry = ToolRegistry::new().with(Hold).unwrap().with(Add).unwrap();
    let mut limits = behest::Limits::default();
    limits.max_concurrent_calls = 1;
    let runtime = ToolRuntime::builder(registry).limits(limits).build();
    let mut options = HttpOptions::default();
    options.stateless = true;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve(listener, McpServer::new(runtime).unwrap())
            .options(&options)
            .with_graceful_shutdown(async {
                let _ = stopped.await;
            })
            .await
    });

    let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "hold", "arguments": {}}});
    let request = http_client()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&call)
        .send();
    let request = tokio::spawn(request);
    // The client gives up and closes its connection while `hold` runs.
    for _ in 0..1000 {
        if HELD.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(HELD.load(Ordering::SeqCst), "the call never started");
    assert!(!request.is_finished(), "the held call answered");
    request.abort();
    for _ in 0..1000 {
        if HELD_CANCELLED.load(Ordering::SeqCst) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        HELD_CANCELLED.load(Ordering::SeqCst),
        "the tool never saw its call cancelled"
    );

    let imported = import_over_http(addr, None).await;
    let sum = tokio::time::timeout(
        Duration::from_secs(10),
        imported.call(ToolCall::new("c1", "add", json!({"a": 2, "b": 3}))),
    )
    .await
    .expect("the permit of the abandoned call was freed");
    assert_eq!(sum.outcome.unwrap().to_text(), "5");

    stop.send(()).unwrap();
    let ended = tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the server stops when asked");
    assert!(ended.unwrap().is_ok());
}

/// A bearer check of the application's own (several tokens here) guards
/// the endpoint beside or instead of a fixed token.
#[tokio::test]
async fn a_bearer_check_of_the_application_guards_the_endpoint() {
    use behest::mcp::http::HttpOptions;

    let options =
        HttpOptions::default().bearer_check(|token| ["team-a", "team-b"].contains(&token));
    assert!(format!("{options:?}").contains("bearer_check"));
    let addr = serve_http(&options).await;
    let status = |token: Option<&'static str>| {
        let mut request = http_client()
            .post(format!("http://{addr}/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "probe", "version": "0"}}}),
            );
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status(None).await, 401);
    assert_eq!(status(Some("team-c")).await, 401);
    assert_eq!(status(Some("team-b")).await, 200);
    let imported = import_over_http(addr, Some("team-a")).await;
    assert!(imported.registry().get("add").is_some());
}

/// rmcp asks a server for one tool by name (it does for every call over
/// HTTP): the declaration listed, or nothing.
#[tokio::test]
async fn get_tool_finds_the_listed_declaration() {
    use behest::mcp::rmcp::ServerHandler;

    let server = McpServer::new(runtime()).unwrap();
    let listed = behest::providers::mcp::tools(server.runtime().registry()).unwrap();
    let forecast = server.get_tool("forecast").expect("forecast is served");
    let declared = listed
        .tools
        .iter()
        .find(|tool| tool["name"] == "forecast")
        .unwrap();
    assert_eq!(serde_json::to_value(&forecast).unwrap(), *declared);
    assert!(server.get_tool("nope").is_none());
}

/// behest's client against behest's server: a remote panic, a remote
/// timeout and a remote structured result reach the local caller as they
/// would locally; a thousand concurrent imported calls get one result
/// each; a run mixes local, external and imported tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behest_to_behest_keeps_every_outcome_and_mixes_tools_in_a_run() {
    let (server_end, client_end) = tokio::io::duplex(256 * 1024);
    let server = McpServer::new(runtime()).unwrap();
    tokio::spawn(async move { server.serve_on(server_end).await });
    let client = McpClient::connect(client_end).await.unwrap();
    let mut registry = ToolRegistry::new();
    client
        .import_into(&mut registry, &ImportOptions::prefixed("remote_"))
        .await
        .unwrap();
    // The output schema came along, so a re-export lists it too.
    assert!(registry
        .get("remote_forecast")
        .unwrap()
        .spec()
        .output_schema
        .is_some());
    registry
        .register(
            "approve",
            Arc::new(behest::ExternalTool::new(
                "approve",
                "Ask a person to approve.",
                json!({"type": "object", "properties": {"what": {"type": "string"}},
                    "required": ["what"]}),
            )),
        )
        .unwrap();
    let registry = registry.with(Add).unwrap();
    let runtime = ToolRuntime::new(registry);

    // The model reads what it would read from the tools run locally.
    let local = self::runtime();
    for name in ["explode", "dawdle"] {
        let here = local.call(ToolCall::new("l", name, json!({}))).await;
        let there = runtime
            .call(ToolCall::new("r", format!("remote_{name}"), json!({})))
            .await;
        assert!(there.is_error(), "{name}");
        assert_eq!(there.to_model_text(), here.to_model_text(), "{name}");
    }
    let weather = runtime
        .call(ToolCall::new(
            "w",
            "remote_forecast",
            json!({"city": "Oslo"}),
        ))
        .await
        .outcome
        .unwrap();
    assert_eq!(
        weather.structured,
        Some(json!({"city": "Oslo", "celsius": 21.5}))
    );

    let calls =
        (0..1000).map(|n| ToolCall::new(format!("c{n}"), "remote_add", json!({"a": n, "b": 1})));
    let results = runtime.call_batch(calls).await;
    assert_eq!(results.len(), 1000);
    for (n, result) in results.iter().enumerate() {
        assert_eq!(result.call_id, format!("c{n}"));
        assert_eq!(result.to_model_text(), (n + 1).to_string());
    }

    // One run: a local tool, an imported one and an external one.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("r1", "add", json!({"a": 1, "b": 1})),
            ToolCall::new("r2", "remote_add", json!({"a": 2, "b": 2})),
            ToolCall::new("r3", "approve", json!({"what": "ship it"})),
        ]),
        ScriptedTurn::text("2, 4, approved")
            .expect_ok("r1", "2")
            .expect_ok("r2", "4")
            .expect_ok("r3", "approved: ship it"),
    ]);
    let invocation = Agent::new(model, runtime).invoke([Message::user("go")]);
    invocation.on(|envelope, control| {
        if let behest::EventKind::Tool(behest::ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let what = call.arguments["what"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let _ = control.resolve(
                &call.call_id,
                Ok(behest::ToolOutput::text(format!("approved: {what}"))),
            );
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("2, 4, approved"), "{outcome:?}");
}

/// Never trust either side: a remote result that does not match the
/// tool's declared output schema, or leaves out the structured content it
/// declares, is an error; content that is not text is named, not dropped.
#[tokio::test]
async fn remote_results_are_checked_and_every_content_block_is_read() {
    use behest::mcp::rmcp::model::{
        CallToolResponse, ContentBlock, ListToolsResult, PaginatedRequestParams,
        ServerCapabilities, ServerConfig, Tool,
    };
    use behest::mcp::rmcp::service::RequestContext;
    use behest::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};

    /// An rmcp server whose tools answer as their names say.
    #[derive(Clone)]
    struct Careless;

    impl ServerHandler for Careless {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let input = Arc::new(json!({"type": "object"}).as_object().unwrap().clone());
            let output = Arc::new(
                json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                    "properties": {"n": {"type": "integer"}, "site": {"type": "string", "format": "uri"}},
                    "required": ["n"]})
                .as_object()
                .unwrap()
                .clone(),
            );
            let typed = |name: &'static str| {
                Tool::new(name, "A tool.", input.clone()).with_raw_output_schema(output.clone())
            };
            Ok(ListToolsResult::with_all_items(vec![
                typed("fits"),
                typed("misfits"),
                typed("unstructured"),
                Tool::new("picture", "A tool.", input.clone()),
            ]))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            let result = match request.name.as_ref() {
                // A `format` the SDKs do not assert passes here too.
                "fits" => CallToolResult::structured(json!({"n": 1, "site": "not a uri"})),
                "misfits" => CallToolResult::structured(json!({"n": "one"})),
                "unstructured" => CallToolResult::success(vec![ContentBlock::text("n is 1")]),
                _ => CallToolResult::success(vec![
                    ContentBlock::text("a chart:"),
                    ContentBlock::image("aGVsbG8=", "image/png"),
                    ContentBlock::audio("UklGRg==", "audio/wav"),
                    ContentBlock::embedded_text("file:///notes.txt", "the notes"),
                    ContentBlock::resource_link(behest::mcp::rmcp::model::Resource::new(
                        "file:///big.csv",
                        "big.csv",
                    )),
                ]),
            };
            Ok(result.into())
        }
    }

    let client = client_of(Careless).await;
    let mut registry = ToolRegistry::new();
    client
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    let runtime = ToolRuntime::new(registry);
    let call = |name: &'static str| runtime.call(ToolCall::new("c", name, json!({})));

    let fits = call("fits").await.outcome.unwrap();
    assert_eq!(fits.structured, Some(json!({"n": 1, "site": "not a uri"})));
    let misfits = call("misfits").await.outcome.unwrap_err().to_string();
    assert!(
        misfits.contains("does not match the output schema") && misfits.contains("`/n`"),
        "{misfits}"
    );
    let unstructured = call("unstructured").await.outcome.unwrap_err().to_string();
    assert!(
        unstructured.contains("no structured result"),
        "{unstructured}"
    );
    // Each block comes through as what it is, not as a line of text.
    let picture = call("picture").await.outcome.unwrap();
    assert_eq!(picture.to_text(), "a chart:");
    assert_eq!(
        picture.images,
        [behest::conversation::MediaSource::base64(
            "image/png",
            "aGVsbG8="
        )]
    );
    assert_eq!(
        picture.attachments,
        [
            Attachment::audio("audio/wav", "UklGRg=="),
            Attachment::text_resource("file:///notes.txt", "the notes"),
            Attachment::link("file:///big.csv", "big.csv"),
        ]
    );
    // A model reads the text resource, and a line for the rest.
    assert_eq!(
        picture.to_model_text(),
        "a chart:\n[audio: audio/wav]\nthe notes\n[resource link: big.csv <file:///big.csv>]"
    );
}

/// A sound, a file and a link to another.
#[tool]
fn media() -> ToolOutput {
    ToolOutput::text("here they are")
        .with_attachment(Attachment::audio("audio/wav", "UklGRg=="))
        .with_attachment(Attachment::text_resource("file:///a.txt", "alpha"))
        .with_attachment(Attachment::blob_resource(
            "file:///b.bin",
            "application/octet-stream",
            "AAE=",
        ))
        .with_attachment(Attachment::link("file:///c.csv", "c.csv"))
}

/// A tool's attachments are served as MCP's content blocks of their kind
/// (rmcp's client reads them as such), and behest's client reads them back
/// as the same attachments.
#[tokio::test]
async fn attachments_are_served_as_their_own_content_blocks_and_read_back() {
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Media).unwrap());
    let served = McpServer::new(runtime).unwrap();
    let client = connect(served.clone()).await;
    let result = call(&client, "media", json!({})).await;
    let blocks: Vec<Value> = result
        .content
        .iter()
        .map(|block| serde_json::to_value(block).unwrap())
        .collect();
    assert_eq!(
        blocks,
        [
            json!({"type": "text", "text": "here they are"}),
            json!({"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}),
            json!({"type": "resource", "resource": {"uri": "file:///a.txt", "mimeType": "text/plain", "text": "alpha"}}),
            json!({"type": "resource", "resource": {"uri": "file:///b.bin", "mimeType": "application/octet-stream", "blob": "AAE="}}),
            json!({"type": "resource_link", "uri": "file:///c.csv", "name": "c.csv"}),
        ]
    );
    let imported = client_of(served).await;
    let mut registry = ToolRegistry::new();
    imported
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    let output = ToolRuntime::new(registry)
        .call(ToolCall::new("c", "media", json!({})))
        .await
        .outcome
        .unwrap();
    assert_eq!(output, media());
}

/// Report in a tight loop, far faster than a client reads.
#[tool]
fn flood(#[ctx] cx: ToolContext) -> &'static str {
    for step in 1..=20_000 {
        cx.report_progress(Progress::new(f64::from(step), Some(20_000.0)));
    }
    "flooded"
}

/// A tool that reports faster than the client reads does not grow the
/// server's queue past its bound, and the client still gets the last
/// report, before the result.
#[tokio::test]
async fn a_flood_of_progress_is_bounded_and_keeps_its_last_report() {
    let registry = ToolRegistry::new().with(Flood).unwrap();
    let client = connect(McpServer::new(ToolRuntime::new(registry)).unwrap()).await;
    let done = call(&client, "flood", json!({})).await;
    assert_eq!(text_of(&done), "flooded");
    let last = || {
        client
            .service()
            .0
            .lock()
            .unwrap()
            .iter()
            .map(|report| report.progress)
            .fold(0.0, f64::max)
    };
    eventually(|| last() == 20_000.0).await;
    assert_eq!(last(), 20_000.0);
    let received = client.service().0.lock().unwrap().len();
    // The tool ran to its end before the relay could send much: most
    // reports were replaced while the queue was full.
    assert!(received < 20_000, "{received} reports: nothing was bounded");
}

/// Report progress that goes back and forth, then keep reporting from a
/// task left running after the result.
#[tool]
async fn wobble(#[ctx] cx: ToolContext) -> &'static str {
    for value in [1.0, 1.0, 0.5, 2.0] {
        cx.report_progress(Progress::new(value, None));
    }
    let late = cx.clone();
    tokio::spawn(async move {
        for value in 3..8 {
            tokio::time::sleep(Duration::from_millis(10)).await;
            late.report_progress(Progress::new(f64::from(value), None));
        }
    });
    "wobbled"
}

/// Progress only increases, and none comes after the request's result:
/// Claude Code and Cursor drop the connection on either.
#[tokio::test]
async fn progress_increases_and_stops_with_the_result() {
    let registry = ToolRegistry::new().with(Wobble).unwrap();
    let client = connect(McpServer::new(ToolRuntime::new(registry)).unwrap()).await;
    let done = call(&client, "wobble", json!({})).await;
    assert_eq!(text_of(&done), "wobbled");
    // Long enough for the late task to report everything it would.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut seen: Vec<f64> = client
        .service()
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|report| report.progress)
        .collect();
    seen.sort_by(f64::total_cmp);
    assert_eq!(seen, [1.0, 2.0]);
}

/// Names MCP allows and the providers refuse do not fail an import: they
/// are made to fit, or the tool is skipped with a warning; a rename and a
/// filter choose the rest.
#[tokio::test]
async fn names_mcp_allows_are_mapped_and_one_bad_name_keeps_no_tool_out() {
    use behest::mcp::rmcp::model::{
        CallToolRequestParams, CallToolResponse, ContentBlock, ListToolsResult,
        PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    };
    use behest::mcp::rmcp::service::RequestContext;
    use behest::mcp::rmcp::{ErrorData, RoleServer, ServerHandler};

    /// An rmcp server whose tool names MCP allows and the providers do not.
    #[derive(Clone)]
    struct Dotted;

    impl ServerHandler for Dotted {
        fn get_info(&self) -> ServerConfig {
            ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
        }

        async fn list_tools(
            &self,
            _request: Option<PaginatedRequestParams>,
            _context: RequestContext<RoleServer>,
        ) -> Result<ListToolsResult, ErrorData> {
            let schema = Arc::new(
                json!({"type": "object", "properties": {}})
                    .as_object()
                    .unwrap()
                    .clone(),
            );
            let tool = |name: String| Tool::new(name, "A tool.", schema.clone());
            Ok(ListToolsResult::with_all_items(vec![
                tool("docs.read".into()),
                tool("x".repeat(70)),
                tool("admin_reset".into()),
                tool("search".into()),
            ]))
        }

        async fn call_tool(
            &self,
            request: CallToolRequestParams,
            _context: RequestContext<RoleServer>,
        ) -> Result<CallToolResponse, ErrorData> {
            Ok(
                CallToolResult::success(vec![ContentBlock::text(format!("ran {}", request.name))])
                    .into(),
            )
        }
    }

    let client = client_of(Dotted).await;
    let mut registry = ToolRegistry::new();
    let names = client
        .import_into(&mut registry, &ImportOptions::default())
        .await
        .unwrap();
    // The 70-character name cannot be made to fit: skipped, the rest kept.
    assert_eq!(names, ["docs_read", "admin_reset", "search"]);
    let runtime = ToolRuntime::new(registry);
    let read = runtime
        .call(ToolCall::new("c1", "docs_read", json!({})))
        .await;
    assert_eq!(read.outcome.unwrap().to_text(), "ran docs.read");

    let options = ImportOptions::prefixed("docs_")
        .filter(|spec| !spec.name.starts_with("admin"))
        .rename(|name| (name.len() <= 20).then(|| name.replace('.', "-")));
    let mut registry = ToolRegistry::new();
    let names = client.import_into(&mut registry, &options).await.unwrap();
    assert_eq!(names, ["docs_docs-read", "docs_search"]);
}

/// A session answers only the credential that opened it: with two tokens
/// admitted, the holder of one cannot list tools in, call in, or end the
/// other's session; it is told the session does not exist.
#[tokio::test]
async fn a_session_is_bound_to_the_credential_that_opened_it() {
    use behest::mcp::http::HttpOptions;

    let options =
        HttpOptions::default().bearer_check(|token| ["team-a", "team-b"].contains(&token));
    let addr = serve_http(&options).await;
    let url = format!("http://{addr}/mcp");
    let client = http_client();
    let post = |token: &'static str, session: Option<String>, body: Value| {
        let mut request = client
            .post(&url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let opened = post("team-a", None, json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "0"}}}))
    .await
    .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = opened.text().await;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let acked = post("team-a", Some(session.clone()), initialized)
        .await
        .unwrap();
    assert!(acked.status().is_success(), "{}", acked.status());
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}});
    // The other team's token: the session does not exist for it.
    for body in [list.clone(), call.clone()] {
        let stolen = post("team-b", Some(session.clone()), body).await.unwrap();
        assert_eq!(stolen.status(), 404);
    }
    let ended = client
        .delete(&url)
        .bearer_auth("team-b")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(ended.status(), 404);
    // The owner's session is untouched.
    let listed = post("team-a", Some(session.clone()), list).await.unwrap();
    assert_eq!(listed.status(), 200);
    assert!(listed.text().await.unwrap().contains("\"add\""));
    let ended = client
        .delete(&url)
        .bearer_auth("team-a")
        .header("mcp-session-id", &session)
        .send()
        .await
        .unwrap();
    assert!(ended.status().is_success(), "{}", ended.status());
}

/// A server that takes the connection and never answers `initialize`: the
/// client's handshake ends in an error at its timeout, not never.
#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_initialize_is_an_error_at_the_handshake_timeout() {
    use behest::mcp::ConnectOptions;

    let (ours, mut theirs) = tokio::io::duplex(64 * 1024);
    // Read everything, answer nothing.
    tokio::spawn(async move {
        let mut sink = tokio::io::sink();
        let _ = tokio::io::copy(&mut theirs, &mut sink).await;
    });
    let options = ConnectOptions::default().handshake_timeout(Duration::from_secs(5));
    let started = tokio::time::Instant::now();
    let error = McpClient::connect_with(ours, &options).await.unwrap_err();
    assert!(started.elapsed() >= Duration::from_secs(5));
    assert!(
        error
            .to_string()
            .contains("did not answer `initialize` within 5s"),
        "{error}"
    );
}

/// Headers of the client's options reach the server on every request (an
/// API gateway's key here); a header that cannot be sent is an error
/// naming it.
#[tokio::test]
async fn the_http_client_sends_its_headers_with_every_request() {
    use behest::mcp::ConnectOptions;

    let app = behest::mcp::http::router(
        McpServer::new(runtime()).unwrap(),
        "/mcp",
        &Default::default(),
    )
    .layer(axum::middleware::from_fn(
        |request: axum::extract::Request, next: axum::middleware::Next| async move {
            if request
                .headers()
                .get("x-gateway-key")
                .map(|key| key.as_bytes())
                == Some(b"k-1")
            {
                next.run(request).await
            } else {
                axum::response::IntoResponse::into_response(axum::http::StatusCode::FORBIDDEN)
            }
        },
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });

    assert!(McpClient::http(&url).await.is_err());
    let options = ConnectOptions::default().header("x-gateway-key", "k-1");
    let client = McpClient::http_with(&url, &options).await.unwrap();
    let tools = client.tools(&ImportOptions::default()).await.unwrap();
    assert!(tools.iter().any(|tool| tool.remote_name() == "add"));
    let bad = ConnectOptions::default().header("x-gateway-key", "line\nbreak");
    let error = McpClient::http_with(&url, &bad).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("\"x-gateway-key\" has an invalid value"),
        "{error}"
    );
}

/// A served runtime replaced at run time: every connection (here one over
/// a byte stream and one over HTTP, whose sessions each hold a clone) is
/// told `tools/list_changed` and lists the new tools; a removed tool is
/// unknown from then on.
#[tokio::test]
async fn a_replaced_runtime_is_announced_to_every_client_and_listed() {
    let first = ToolRuntime::new(ToolRegistry::new().with(Add).unwrap());
    let server = McpServer::new(first).unwrap();
    let over_stream = client_of(server.clone()).await;
    let app = behest::mcp::http::router(server.clone(), "/mcp", &Default::default());
    let addr = serve_app(app).await;
    let over_http = McpClient::http(&format!("http://{addr}/mcp"))
        .await
        .unwrap();
    for client in [&over_stream, &over_http] {
        let names: Vec<String> = client
            .tools(&ImportOptions::default())
            .await
            .unwrap()
            .iter()
            .map(|tool| tool.remote_name().to_owned())
            .collect();
        assert_eq!(names, ["add"]);
    }

    let second = ToolRuntime::new(ToolRegistry::new().with(Forecast).unwrap());
    server.replace_runtime(second).await.unwrap();
    for client in [&over_stream, &over_http] {
        tokio::time::timeout(Duration::from_secs(10), async {
            while !client.tools_changed() {
                client.tools_change().await;
            }
        })
        .await
        .expect("told of the change");
        let tools = client.tools(&ImportOptions::default()).await.unwrap();
        let names: Vec<&str> = tools.iter().map(|tool| tool.remote_name()).collect();
        assert_eq!(names, ["forecast"]);
        let gone = client
            .peer()
            .call_tool(
                CallToolRequestParams::new("add")
                    .with_arguments(arguments(json!({"a": 1, "b": 2}))),
            )
            .await
            .unwrap_err();
        assert!(gone.to_string().contains("add"), "{gone}");
    }
}

/// Who the user says they are.
#[behest::data(input)]
struct Person {
    name: String,
    age: u32,
    /// What they like to be called, if not their name.
    nickname: Option<String>,
}

/// Ask who the user is, then have the client's model greet them.
#[tool]
async fn greet_user(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = cx
        .extension::<McpCaller>()
        .cloned()
        .ok_or_else(|| ToolError::execution("not called over MCP"))?;
    let person = match caller.elicit::<Person>("Who are you?").await? {
        Elicitation::Accepted(person) => person,
        Elicitation::Declined => return Ok("declined".to_owned()),
        _ => return Ok("cancelled".to_owned()),
    };
    let name = person.nickname.unwrap_or(person.name);
    let prompt = format!("Greet {name} ({})", person.age);
    Ok(caller.sample(prompt, 50).await?)
}

/// An rmcp client that answers questions as a user and a model would, and
/// keeps what it was asked.
#[derive(Clone, Default)]
struct Answering {
    capable: bool,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Answering {
    fn get_info(&self) -> behest::mcp::rmcp::model::ClientConfig {
        let mut config = behest::mcp::rmcp::model::ClientConfig::default();
        if self.capable {
            config.capabilities =
                serde_json::from_value(json!({"elicitation": {}, "sampling": {}})).unwrap();
        }
        config
    }

    async fn create_elicitation(
        &self,
        request: behest::mcp::rmcp::model::ElicitRequestParams,
        _context: behest::mcp::rmcp::service::RequestContext<RoleClient>,
    ) -> Result<behest::mcp::rmcp::model::ElicitResult, behest::mcp::rmcp::ErrorData> {
        self.asked
            .lock()
            .unwrap()
            .push(serde_json::to_value(&request).unwrap());
        Ok(behest::mcp::rmcp::model::ElicitResult::new(
            behest::mcp::rmcp::model::ElicitationAction::Accept,
        )
        .with_content(json!({"name": "Ada", "age": 36})))
    }

    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: behest::mcp::rmcp::model::CreateMessageRequestParams,
        _context: behest::mcp::rmcp::service::RequestContext<RoleClient>,
    ) -> Result<behest::mcp::rmcp::model::CreateMessageResult, behest::mcp::rmcp::ErrorData> {
        use behest::mcp::rmcp::model::{CreateMessageResult, SamplingMessage};
        self.asked
            .lock()
            .unwrap()
            .push(serde_json::to_value(&params).unwrap());
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("Hello, Ada!"),
            "client-model".to_owned(),
        ))
    }
}

/// A tool asks the user through the client (the form is `Person`'s schema)
/// and has the client's model answer; a client that declared neither
/// capability gets a tool error saying so, not a hang.
#[tokio::test]
async fn a_tool_asks_the_user_and_the_clients_model_through_the_client() {
    let registry = ToolRegistry::new().with(GreetUser).unwrap();
    let server = McpServer::new(ToolRuntime::new(registry)).unwrap();

    let answering = Answering {
        capable: true,
        ..Answering::default()
    };
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let served = server.clone();
    tokio::spawn(async move { served.serve_on(server_end).await });
    let client = answering.clone().serve(client_end).await.unwrap();
    let result = client
        .call_tool(CallToolRequestParams::new("greet_user"))
        .await
        .unwrap();
    assert_eq!(text_of(&result), "Hello, Ada!");
    let asked = answering.asked.lock().unwrap().clone();
    assert_eq!(asked[0]["message"], "Who are you?");
    let form = &asked[0]["requestedSchema"];
    assert_eq!(form["type"], "object");
    assert_eq!(form["properties"]["name"]["type"], "string");
    assert_eq!(form["properties"]["age"]["type"], "integer");
    // An optional field is a property of one type, not required.
    assert_eq!(form["properties"]["nickname"]["type"], "string");
    assert_eq!(form["required"], json!(["name", "age"]));
    assert_eq!(asked[1]["messages"][0]["content"]["text"], "Greet Ada (36)");
    assert_eq!(asked[1]["maxTokens"], 50);

    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve_on(server_end).await });
    let unable = Answering::default().serve(client_end).await.unwrap();
    let result = unable
        .call_tool(CallToolRequestParams::new("greet_user"))
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert!(
        text_of(&result).contains("did not declare `elicitation`"),
        "{}",
        text_of(&result)
    );
}

/// Look something up, saying so in the logs.
#[tool]
async fn look_up(city: String) -> String {
    tracing::info!(city = %city, "looking up");
    tracing::debug!("cache miss");
    format!("found {city}")
}

/// A client that keeps the log messages it receives.
#[derive(Clone, Default)]
struct Listening(Arc<Mutex<Vec<Value>>>);

impl ClientHandler for Listening {
    #[allow(deprecated)]
    async fn on_logging_message(
        &self,
        params: behest::mcp::rmcp::model::LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0
            .lock()
            .unwrap()
            .push(serde_json::to_value(params).unwrap());
    }
}

/// A tool's `tracing` events reach the client that called it, at `info`
/// and above until the client sets another level; events outside calls do
/// not.
#[tokio::test]
#[allow(deprecated)]
async fn a_tools_tracing_events_reach_its_client_at_the_level_it_set() {
    use behest::mcp::rmcp::model::{LoggingLevel, SetLevelRequestParams};
    use tracing_subscriber::layer::SubscriberExt;

    let _subscriber = tracing::subscriber::set_default(
        tracing_subscriber::registry().with(behest::mcp::McpLogLayer),
    );
    let server =
        McpServer::new(ToolRuntime::new(ToolRegistry::new().with(LookUp).unwrap())).unwrap();
    // Another client of a clone of the server, served by rmcp itself: its
    // calls' events are its own, and its level is its own.
    let (other_end, other_client_end) = tokio::io::duplex(64 * 1024);
    let other_server = server.clone();
    tokio::spawn(async move { other_server.serve(other_end).await.unwrap().waiting().await });
    let other = Listening::default();
    let other_client = other.clone().serve(other_client_end).await.unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve_on(server_end).await });
    let listening = Listening::default();
    let client = listening.clone().serve(client_end).await.unwrap();
    other_client
        .call_tool(
            CallToolRequestParams::new("look_up")
                .with_arguments(arguments(json!({"city": "Quito"}))),
        )
        .await
        .unwrap();
    eventually(|| other.0.lock().unwrap().len() == 1).await;
    tracing::info!("not in a call");
    let look_up = |city: &str| {
        client.call_tool(
            CallToolRequestParams::new("look_up").with_arguments(arguments(json!({"city": city}))),
        )
    };
    look_up("Oslo").await.unwrap();
    eventually(|| listening.0.lock().unwrap().len() == 1).await;
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Debug))
        .await
        .unwrap();
    look_up("Rome").await.unwrap();
    eventually(|| listening.0.lock().unwrap().len() == 3).await;
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .unwrap();
    look_up("Lima").await.unwrap();
    // A last call at `info`, to know the `Lima` messages would have come.
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Info))
        .await
        .unwrap();
    look_up("Kyiv").await.unwrap();
    eventually(|| listening.0.lock().unwrap().len() == 4).await;
    let seen = listening.0.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            json!({"level": "info", "logger": "mcp::server", "data": {"message": "looking up", "city": "Oslo"}}),
            json!({"level": "info", "logger": "mcp::server", "data": {"message": "looking up", "city": "Rome"}}),
            json!({"level": "debug", "logger": "mcp::server", "data": "cache miss"}),
            json!({"level": "info", "logger": "mcp::server", "data": {"message": "looking up", "city": "Kyiv"}}),
        ]
    );
    // The other client saw its own call only, at its own (default) level.
    assert_eq!(
        *other.0.lock().unwrap(),
        [
            json!({"level": "info", "logger": "mcp::server", "data": {"message": "looking up", "city": "Quito"}})
        ]
    );
}

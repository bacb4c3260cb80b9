//! `tools/call` and `resources/read` under load, over loopback: behest's
//! MCP server against an rmcp `#[tool_router]` server with the same
//! three-argument tool and the same templated resource (`counts://{n}`,
//! read by hand in rmcp's `read_resource`), side by side in one run.
//!
//! Each server runs in a child process (this binary, started again with
//! `--serve KIND TRANSPORT`), so that its work and the client's do not
//! share a runtime. The client is rmcp's own, over stdio (the child's
//! stdin and stdout) and over streamable HTTP on 127.0.0.1 (sessions, as
//! both serve by default). For each, `CALLS` calls run with `CONCURRENCY`
//! in flight; throughput is calls per second of wall time, latencies are
//! per call. Each case runs `ROUNDS` times, alternating the servers (and
//! which goes first), and the median round is reported. behest checks
//! every call against the tool's schema: for this tool, whose argument
//! types say exactly what the schema says, by its typed read of the
//! arguments (the value route); rmcp's server deserializes them into the
//! tool's type.
//!
//! Over HTTP behest's server checks a bearer token and binds each session
//! to it (rmcp's ignores the token the client sends both).
//!
//! Last, the memory an idle session holds: `SESSIONS` sessions opened over
//! HTTP (`initialize`, then `notifications/initialized`) and left open,
//! the server's resident memory (`VmRSS`) read before and after, per
//! session.
//!
//! Run: `cargo bench --bench mcp_load --features mcp`

use std::time::{Duration, Instant};

use behest::mcp::rmcp::model::{CallToolRequestParams, ReadResourceRequestParams};
use behest::mcp::rmcp::service::RunningService;
use behest::mcp::rmcp::{RoleClient, ServiceExt};
use behest::mcp::McpServer;
use behest::{ToolRegistry, ToolRuntime};
use serde_json::{json, Map, Value};

const CALLS: usize = 20_000;
const CONCURRENCY: usize = 16;
const WARM_UP: usize = 1_000;
const ROUNDS: usize = 5;
/// How many idle sessions the memory measure opens.
const SESSIONS: usize = 10_000;
/// The bearer token of the HTTP cases.
const BENCH_TOKEN: &str = "bench-token";

/// Describe a count.
#[behest::tool]
async fn describe(count: i64, label: String, verbose: Option<bool>) -> String {
    describe_text(count, label, verbose)
}

fn describe_text(count: i64, label: String, verbose: Option<bool>) -> String {
    let sep = if verbose.unwrap_or(false) {
        ": many "
    } else {
        ": "
    };
    format!("{label}{sep}{count}")
}

/// The same tool, the way rmcp's macros write it.
mod baseline {
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::{tool, tool_router};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct DescribeArgs {
        count: i64,
        label: String,
        verbose: Option<bool>,
    }

    #[derive(Clone)]
    pub struct Server;

    #[tool_router]
    impl Server {
        #[tool(description = "Describe a count.")]
        async fn describe(&self, Parameters(args): Parameters<DescribeArgs>) -> String {
            super::describe_text(args.count, args.label, args.verbose)
        }
    }

    #[rmcp::tool_handler]
    impl rmcp::ServerHandler for Server {
        fn get_info(&self) -> rmcp::model::ServerConfig {
            rmcp::model::ServerConfig::new(
                rmcp::model::ServerCapabilities::builder()
                    .enable_tools()
                    .enable_resources()
                    .build(),
            )
        }

        async fn read_resource(
            &self,
            request: rmcp::model::ReadResourceRequestParams,
            _context: rmcp::service::RequestContext<rmcp::RoleServer>,
        ) -> Result<rmcp::model::ReadResourceResponse, rmcp::ErrorData> {
            let Some(n) = request.uri.strip_prefix("counts://") else {
                return Err(rmcp::ErrorData::resource_not_found(
                    "no such resource",
                    None,
                ));
            };
            let text = super::count_text(n);
            Ok(
                rmcp::model::ReadResourceResult::new(vec![rmcp::model::ResourceContents::text(
                    text,
                    request.uri.clone(),
                )])
                .into(),
            )
        }
    }
}

/// What the resource `counts://{n}` holds.
fn count_text(n: &str) -> String {
    format!("count {n}")
}

/// The same resource, as behest's `#[resource]` writes it.
#[behest::mcp::resource("counts://{n}", mime_type = "text/plain")]
fn counts(n: String) -> String {
    count_text(&n)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Behest,
    Rmcp,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Behest => "behest",
            Kind::Rmcp => "rmcp",
        }
    }
}

fn behest_server() -> McpServer {
    let registry = ToolRegistry::new()
        .with(Describe)
        .expect("the tool registers");
    let catalog = behest::mcp::McpCatalog::new()
        .resource(Counts)
        .expect("the resource joins the catalog");
    McpServer::new(ToolRuntime::new(registry))
        .expect("the tool can be served")
        .catalog(catalog)
}

/// The child: serves one kind over one transport until its client leaves.
async fn serve(kind: &str, transport: &str) {
    match (kind, transport) {
        ("behest", "stdio") => behest_server().serve_stdio().await.unwrap(),
        ("rmcp", "stdio") => {
            let running = baseline::Server
                .serve((tokio::io::stdin(), tokio::io::stdout()))
                .await
                .unwrap();
            let _ = running.waiting().await;
        }
        (kind, "http") => {
            use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
            use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            println!("{}", listener.local_addr().unwrap());
            let app = if kind == "behest" {
                // Sessions bound to the credential that opened them, and
                // each request's events kept for resumption: behest's
                // sessions as they serve with a token.
                let mut options = behest::mcp::http::HttpOptions::default()
                    .bearer_check(|token| token == BENCH_TOKEN);
                // Room for the idle sessions the memory measure opens.
                options.max_sessions = 2 * SESSIONS;
                options.max_sessions_per_identity = 2 * SESSIONS;
                behest::mcp::http::router(behest_server(), "/mcp", &options)
            } else {
                let service = StreamableHttpService::new(
                    || Ok(baseline::Server),
                    std::sync::Arc::new(LocalSessionManager::default()),
                    StreamableHttpServerConfig::default(),
                );
                axum::Router::new().nest_service("/mcp", service)
            };
            axum::serve(listener, app).await.unwrap();
        }
        other => panic!("unknown server {other:?}"),
    }
}

/// A server of `kind` in a child process, and rmcp's client connected to
/// it (the child goes with the client).
async fn connect(
    kind: Kind,
    transport: &str,
) -> (RunningService<RoleClient, ()>, tokio::process::Child) {
    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--serve", kind.name(), transport])
        .kill_on_drop(true);
    if transport == "stdio" {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take().unwrap();
        let client = ().serve((stdout, stdin)).await.unwrap();
        return (client, child);
    }
    command.stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let addr = lines.next_line().await.unwrap().unwrap();
    let _installed = rustls::crypto::ring::default_provider().install_default();
    // Both servers get the token; only behest's checks it.
    let config =
        rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
            format!("http://{addr}/mcp"),
        )
        .auth_header(BENCH_TOKEN);
    let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
    let client = ().serve(transport).await.unwrap();
    (client, child)
}

fn arguments(n: usize) -> Map<String, Value> {
    let value = json!({"count": n, "label": "apples", "verbose": n.is_multiple_of(2)});
    value.as_object().cloned().unwrap()
}

/// What the load asks: a tool call, or a resource read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Operation {
    Call,
    Read,
}

impl Operation {
    fn name(self) -> &'static str {
        match self {
            Operation::Call => "tools/call",
            Operation::Read => "resources/read",
        }
    }

    /// Asks it, the `n`th time.
    async fn ask(self, client: &RunningService<RoleClient, ()>, n: usize) {
        match self {
            Operation::Call => {
                let call = CallToolRequestParams::new("describe").with_arguments(arguments(n));
                let result = client.call_tool(call).await.expect("the call is answered");
                assert_ne!(result.is_error, Some(true), "{result:?}");
            }
            Operation::Read => {
                let read = ReadResourceRequestParams::new(format!("counts://{n}"));
                let result = client
                    .read_resource(read)
                    .await
                    .expect("the read is answered");
                assert_eq!(result.contents.len(), 1, "{result:?}");
            }
        }
    }
}

/// Asks `operation` `calls` times, `CONCURRENCY` at a time; returns the
/// wall time and each request's latency.
async fn load(
    client: &RunningService<RoleClient, ()>,
    operation: Operation,
    calls: usize,
) -> (Duration, Vec<Duration>) {
    use futures::StreamExt;

    let started = Instant::now();
    let latencies: Vec<Duration> = futures::stream::iter(0..calls)
        .map(|n| async move {
            let sent = Instant::now();
            operation.ask(client, n).await;
            sent.elapsed()
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    (started.elapsed(), latencies)
}

struct Round {
    per_second: f64,
    p50: Duration,
    p99: Duration,
}

async fn round(kind: Kind, transport: &str, operation: Operation) -> Round {
    let (client, _child) = connect(kind, transport).await;
    load(&client, operation, WARM_UP).await;
    let (wall, mut latencies) = load(&client, operation, CALLS).await;
    latencies.sort_unstable();
    let at = |quantile: f64| {
        latencies[((latencies.len() as f64 * quantile) as usize).min(latencies.len() - 1)]
    };
    let _ = client.cancel().await;
    Round {
        per_second: CALLS as f64 / wall.as_secs_f64(),
        p50: at(0.50),
        p99: at(0.99),
    }
}

/// The resident memory of process `pid`, in bytes.
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| {
            value
                .trim()
                .trim_end_matches("kB")
                .trim()
                .parse::<u64>()
                .ok()
        })
        .map_or(0, |kib| kib * 1024)
}

/// Bytes of resident memory per idle session: a server of `kind` over
/// HTTP, `sessions` sessions opened and left open.
async fn memory_per_session(kind: Kind, sessions: usize) -> f64 {
    use futures::StreamExt;

    let mut command = tokio::process::Command::new(std::env::current_exe().unwrap());
    command
        .args(["--serve", kind.name(), "http"])
        .kill_on_drop(true)
        .stdout(std::process::Stdio::piped());
    let mut child = command.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(stdout));
    let url = format!("http://{}/mcp", lines.next_line().await.unwrap().unwrap());
    let pid = child.id().unwrap();
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = http
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {BENCH_TOKEN}"))
            .body(body.to_string());
        if let Some(session) = session {
            request = request
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        request.send()
    };
    let open = || async {
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"}}});
        let answer = post(initialize, None)
            .await
            .expect("initialize is answered");
        let session = answer.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = answer.bytes().await;
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let answer = post(initialized, Some(session))
            .await
            .expect("initialized is taken");
        assert!(answer.status().is_success(), "{}", answer.status());
    };
    // Settled: one session open, so what every session shares is there.
    open().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = resident_bytes(pid);
    futures::stream::iter(0..sessions)
        .map(|_| open())
        .buffer_unordered(CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let after = resident_bytes(pid);
    drop(child);
    after.saturating_sub(before) as f64 / sessions as f64
}

fn median_round(mut rounds: Vec<Round>) -> Round {
    rounds.sort_by(|a, b| a.per_second.total_cmp(&b.per_second));
    rounds.swap_remove(rounds.len() / 2)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if let [flag, kind, transport] = args.as_slice() {
        if flag == "--serve" {
            runtime.block_on(serve(kind, transport));
            return;
        }
    }
    // `cargo bench` passes `--bench`; `cargo test --benches` passes
    // nothing: a test run only checks that both servers answer.
    let quick = !args.iter().any(|arg| arg == "--bench");
    println!(
        "{} requests, {CONCURRENCY} in flight, median of {ROUNDS} rounds",
        if quick { 100 } else { CALLS }
    );
    println!("| request | transport | server | per second | p50 | p99 | throughput vs rmcp |");
    println!("|---|---|---|---|---|---|---|");
    let cases = [
        (Operation::Call, "stdio"),
        (Operation::Call, "http"),
        (Operation::Read, "stdio"),
        (Operation::Read, "http"),
    ];
    for (operation, transport) in cases {
        let request = operation.name();
        if quick {
            for kind in [Kind::Behest, Kind::Rmcp] {
                runtime.block_on(async {
                    let (client, _child) = connect(kind, transport).await;
                    load(&client, operation, 100).await;
                    let _ = client.cancel().await;
                });
            }
            println!("| {request} | {transport} | both answered 100 requests | | | | |");
            continue;
        }
        let mut behest = Vec::new();
        let mut rmcp = Vec::new();
        for n in 0..ROUNDS {
            let order = if n % 2 == 0 {
                [Kind::Behest, Kind::Rmcp]
            } else {
                [Kind::Rmcp, Kind::Behest]
            };
            for kind in order {
                let result = runtime.block_on(round(kind, transport, operation));
                match kind {
                    Kind::Behest => behest.push(result),
                    Kind::Rmcp => rmcp.push(result),
                }
            }
        }
        let (behest, rmcp) = (median_round(behest), median_round(rmcp));
        for (kind, result) in [(Kind::Behest, &behest), (Kind::Rmcp, &rmcp)] {
            println!(
                "| {request} | {transport} | {} | {:.0} | {:.0} µs | {:.0} µs | {:.2} |",
                kind.name(),
                result.per_second,
                result.p50.as_secs_f64() * 1e6,
                result.p99.as_secs_f64() * 1e6,
                result.per_second / rmcp.per_second
            );
        }
    }
    let sessions = if quick { 50 } else { SESSIONS };
    println!();
    println!("memory of {sessions} idle HTTP sessions (resident, per session)");
    println!("| server | bytes per session | vs rmcp |");
    println!("|---|---|---|");
    let rmcp = runtime.block_on(memory_per_session(Kind::Rmcp, sessions));
    let behest = runtime.block_on(memory_per_session(Kind::Behest, sessions));
    for (kind, bytes) in [(Kind::Behest, behest), (Kind::Rmcp, rmcp)] {
        println!(
            "| {} | {bytes:.0} | {:.2} |",
            kind.name(),
            bytes / rmcp.max(1.0)
        );
    }
}

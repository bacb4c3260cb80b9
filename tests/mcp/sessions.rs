//! MCP's streamable HTTP sessions on the wire, driven as real clients drive
//! them: raw requests where the fault is on the wire (priming events by
//! protocol version, resumption with `Last-Event-ID`, idle expiry, the
//! session cap, `DELETE`, OAuth discovery, CORS), and the official Python
//! SDK where it shows one (a client idling past the idle timeout).

#![cfg(feature = "mcp")]

use crate::mcp_support;

use std::net::SocketAddr;
use std::time::Duration;

use behest::mcp::http::{router, HttpOptions, ProtectedResource};
use behest::mcp::{McpCaller, McpServer};
use behest::{tool, ToolContext, ToolRegistry, ToolRuntime};
use mcp_support::{http_client, serve_app};
use serde_json::{json, Value};

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Wait `ms` milliseconds, then answer.
#[tool]
async fn wait(ms: u64) -> String {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    format!("waited {ms} ms")
}

/// Who the user is, in their own words.
#[behest::data(input)]
struct Name {
    name: String,
}

/// Greet the user by the name they give.
#[tool]
async fn greet(#[ctx] cx: ToolContext) -> Result<String, behest::ToolError> {
    let caller = cx.extension::<McpCaller>().cloned().unwrap_or_default();
    match caller.elicit::<Name>("What is your name?").await? {
        behest::mcp::Elicitation::Accepted(Name { name }) => Ok(format!("hello {name}")),
        _ => Ok("hello, whoever you are".to_owned()),
    }
}

/// `n` times the letter x.
#[tool]
async fn pad(n: usize) -> String {
    "x".repeat(n)
}

/// Who is calling, as the tool sees it.
#[tool]
async fn whoami(#[ctx] cx: ToolContext) -> Value {
    let caller = cx.extension::<McpCaller>().cloned().unwrap_or_default();
    let header = caller
        .http
        .as_ref()
        .and_then(|parts| parts.headers.get("x-team")?.to_str().ok());
    json!({
        "session": caller.session_id,
        "token": caller.bearer_token(),
        "version": caller.protocol_version,
        "client": caller.client.as_ref().map(|(name, _)| name),
        "header": header,
        "debug": format!("{caller:?}"),
    })
}

async fn serve(options: &HttpOptions) -> SocketAddr {
    let registry = ToolRegistry::new()
        .with(Add)
        .unwrap()
        .with(Wait)
        .unwrap()
        .with(Whoami)
        .unwrap()
        .with(Pad)
        .unwrap()
        .with(Greet)
        .unwrap();
    let runtime = ToolRuntime::builder(registry)
        .tool_timeout("wait", Duration::from_secs(3600))
        .build();
    let server = McpServer::new(runtime).unwrap();
    serve_app(router(server, "/mcp", options)).await
}

/// One SSE event as a client's parser reads it.
#[derive(Debug, Default)]
struct Event {
    id: Option<String>,
    data: String,
    retry: bool,
}

fn events(body: &str) -> Vec<Event> {
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter(|block| !block.trim().is_empty())
        .filter_map(|block| {
            let mut event = Event::default();
            let mut fields = 0;
            for line in block.lines() {
                let (field, value) = line.split_once(':').unwrap_or((line, ""));
                let value = value.strip_prefix(' ').unwrap_or(value);
                match field {
                    "id" => event.id = Some(value.to_owned()),
                    "data" => event.data.push_str(value),
                    "retry" => event.retry = true,
                    _ => continue,
                }
                fields += 1;
            }
            // A block of comments only (a keep-alive) is no event.
            (fields > 0).then_some(event)
        })
        .collect()
}

/// A client session opened by hand, as an SDK opens one.
struct Session {
    client: reqwest::Client,
    url: String,
    id: String,
    version: &'static str,
}

impl Session {
    async fn open(addr: SocketAddr, version: &'static str) -> Self {
        let client = http_client();
        let url = format!("http://{addr}/mcp");
        let opened = initialize(&client, &url, version).await;
        assert_eq!(opened.status(), 200);
        let id = opened.headers()["mcp-session-id"]
            .to_str()
            .unwrap()
            .to_owned();
        let _ = opened.text().await;
        let session = Self {
            client,
            url,
            id,
            version,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(session.post(&initialized).await.status(), 202);
        session
    }

    fn request(&self, method: reqwest::Method) -> reqwest::RequestBuilder {
        self.client
            .request(method, &self.url)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", self.version)
            .header("mcp-session-id", &self.id)
    }

    async fn post(&self, body: &Value) -> reqwest::Response {
        self.request(reqwest::Method::POST)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// The whole body of a call's answer.
    async fn call_body(&self, id: u64, name: &str, arguments: Value) -> String {
        self.call(id, name, arguments).await.text().await.unwrap()
    }

    async fn call(&self, id: u64, name: &str, arguments: Value) -> reqwest::Response {
        self.post(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}))
            .await
    }
}

async fn initialize(client: &reqwest::Client, url: &str, version: &str) -> reqwest::Response {
    initialize_request(client, url, version)
        .send()
        .await
        .unwrap()
}

fn initialize_request(
    client: &reqwest::Client,
    url: &str,
    version: &str,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"}}}),
        )
}

/// The text of the answer among `events`.
fn answer_text(events: &[Event]) -> Option<String> {
    events.iter().find_map(|event| {
        let message: Value = serde_json::from_str(&event.data).ok()?;
        message["result"]["content"][0]["text"]
            .as_str()
            .map(str::to_owned)
    })
}

/// A 2025-06-18 client's SSE parser fails on an event with empty data: it
/// never gets one. A 2025-11-25 client gets the priming event first, with
/// the id it resumes from.
#[tokio::test]
async fn priming_events_go_only_to_clients_whose_version_defines_them() {
    let addr = serve(&HttpOptions::default()).await;
    for version in ["2025-06-18", "2025-03-26"] {
        let session = Session::open(addr, version).await;
        let body = session.call_body(1, "add", json!({"a": 2, "b": 3})).await;
        let events = events(&body);
        assert!(
            events.iter().all(|event| !event.data.is_empty()),
            "{version}: {events:?}"
        );
        assert_eq!(answer_text(&events).as_deref(), Some("5"), "{version}");
    }
    let session = Session::open(addr, "2025-11-25").await;
    let body = session.call_body(1, "add", json!({"a": 2, "b": 3})).await;
    let events = events(&body);
    let priming = &events[0];
    assert!(priming.data.is_empty() && priming.retry, "{events:?}");
    assert!(priming.id.is_some(), "{events:?}");
    assert_eq!(answer_text(&events).as_deref(), Some("5"));
}

/// The client drops its connection after the priming event; the answer
/// comes while it is away, and is there when it resumes.
#[tokio::test]
async fn an_answer_that_comes_while_the_client_is_away_is_there_when_it_resumes() {
    let addr = serve(&HttpOptions::default()).await;
    let session = Session::open(addr, "2025-11-25").await;
    let response = session.call(7, "wait", json!({"ms": 200})).await;
    let last_event_id = walk_away(response).await;
    // Long enough for the answer to be sent to nobody.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let resumed = session
        .request(reqwest::Method::GET)
        .header("last-event-id", &last_event_id)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), 200);
    let body = resumed.text().await.unwrap();
    assert_eq!(
        answer_text(&events(&body)).as_deref(),
        Some("waited 200 ms"),
        "{body}"
    );
}

/// The id of the priming event of a call's stream, read before the
/// client walks away from it.
async fn walk_away(mut response: reqwest::Response) -> String {
    let mut first = String::new();
    while !first.contains("\n\n") {
        let chunk = response.chunk().await.unwrap().unwrap();
        first.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    events(&first)[0].id.clone().unwrap()
}

/// Answers nobody read, past the session's byte budget: the oldest goes
/// (its client's resumption ends with nothing), the newest is still there.
#[tokio::test]
async fn unread_answers_past_the_session_byte_budget_drop_the_oldest() {
    let mut options = HttpOptions::default();
    options.max_session_bytes = 50_000;
    let addr = serve(&options).await;
    let session = Session::open(addr, "2025-11-25").await;
    let mut primed = Vec::new();
    for id in 1..=4 {
        let response = session.call(id, "pad", json!({"n": 20_000})).await;
        primed.push(walk_away(response).await);
        // Each answer is sent to nobody before the next call.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let resume = |last_event_id: String| {
        session
            .request(reqwest::Method::GET)
            .header("last-event-id", last_event_id)
            .send()
    };
    let newest = resume(primed[3].clone()).await.unwrap();
    assert_eq!(newest.status(), 200);
    let body = newest.text().await.unwrap();
    assert_eq!(
        answer_text(&events(&body)).map(|text| text.len()),
        Some(20_000)
    );
    // rmcp answers a resumption it cannot serve with an empty stream that
    // ends, not an error a browser's EventSource would retry forever.
    let oldest = resume(primed[0].clone()).await.unwrap();
    assert_eq!(oldest.status(), 200);
    let body = oldest.text().await.unwrap();
    assert!(
        events(&body).iter().all(|event| event.data.is_empty()),
        "{body}"
    );
}

/// rmcp's own timer ended a session five minutes after its last event,
/// cutting a long call. On a shortened clock (a 2 s idle timeout for the
/// real 30 minutes): a call three times longer than the timeout is
/// answered, the session outlives a pause shorter than it, then, idle past
/// it, ends, and its client is told 404.
#[tokio::test]
async fn a_long_call_outlives_the_idle_timeout_and_an_idle_session_then_ends() {
    let idle = Duration::from_secs(2);
    let mut options = HttpOptions::default();
    options.idle_timeout = Some(idle);
    let addr = serve(&options).await;
    let session = Session::open(addr, "2025-06-18").await;
    let body = session.call_body(1, "wait", json!({"ms": 6000})).await;
    assert_eq!(
        answer_text(&events(&body)).as_deref(),
        Some("waited 6000 ms"),
        "{body}"
    );
    tokio::time::sleep(idle / 4).await;
    let body = session.call_body(2, "add", json!({"a": 1, "b": 1})).await;
    assert_eq!(answer_text(&events(&body)).as_deref(), Some("2"));
    tokio::time::sleep(idle + idle / 2).await;
    let gone = session.call(3, "add", json!({"a": 1, "b": 1})).await;
    assert_eq!(gone.status(), 404);
}

/// Past `max_sessions`, `initialize` gets 503 with `Retry-After` and a
/// JSON-RPC error; a `DELETE` (204, as SDK clients expect) frees a place.
/// A `DELETE` of a session that does not exist is 404.
#[tokio::test]
async fn the_session_cap_refuses_with_503_and_a_deleted_session_frees_its_place() {
    let mut options = HttpOptions::default();
    options.max_sessions = 2;
    let addr = serve(&options).await;
    let first = Session::open(addr, "2025-11-25").await;
    let _second = Session::open(addr, "2025-11-25").await;
    let client = http_client();
    let url = format!("http://{addr}/mcp");
    // A request without a session that opens none is rmcp's to answer.
    let listing = client
        .post(&url)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_ne!(listing.status(), 503);
    let refused = initialize(&client, &url, "2025-11-25").await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 2 sessions"),
        "{error}"
    );
    let ended = first.request(reqwest::Method::DELETE).send().await.unwrap();
    assert_eq!(ended.status(), 204);
    let again = first.request(reqwest::Method::DELETE).send().await.unwrap();
    assert_eq!(again.status(), 404);
    let _third = Session::open(addr, "2025-11-25").await;
}

/// An OAuth-aware client (Claude Code, the SDKs) reads where to get a
/// token from the 401, then the metadata document (RFC 9728).
#[tokio::test]
async fn a_401_names_the_protected_resource_metadata_that_is_served() {
    let options = HttpOptions::default()
        .bearer_check(|token| token == "issued")
        .protected_resource(
            ProtectedResource::new("http://127.0.0.1/mcp", "https://auth.example.com")
                .scopes(["tools"]),
        );
    let addr = serve(&options).await;
    let client = http_client();
    let refused = initialize(&client, &format!("http://{addr}/mcp"), "2025-11-25").await;
    assert_eq!(refused.status(), 401);
    assert_eq!(
        refused.headers()["www-authenticate"],
        "Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\""
    );
    let wrong = client
        .post(format!("http://{addr}/mcp"))
        .bearer_auth("forged")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
    assert_eq!(
        wrong.headers()["www-authenticate"],
        "Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource/mcp\", error=\"invalid_token\""
    );
    let document: Value = client
        .get(format!(
            "http://{addr}/.well-known/oauth-protected-resource/mcp"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(document["resource"], "http://127.0.0.1/mcp");
    assert_eq!(
        document["authorization_servers"],
        json!(["https://auth.example.com"])
    );
    assert_eq!(document["scopes_supported"], json!(["tools"]));
}

/// A browser page of a listed origin passes the preflight and its request;
/// one of another origin gets no CORS grant and is refused.
#[tokio::test]
async fn cors_lets_listed_origins_in_and_no_other() {
    let options = HttpOptions::default().cors(["https://app.example.com"]);
    let addr = serve(&options).await;
    let client = http_client();
    let url = format!("http://{addr}/mcp");
    let preflight = client
        .request(reqwest::Method::OPTIONS, &url)
        .header("origin", "https://app.example.com")
        .header("access-control-request-method", "POST")
        .header(
            "access-control-request-headers",
            "content-type, mcp-session-id",
        )
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert_eq!(
        preflight.headers()["access-control-allow-origin"],
        "https://app.example.com"
    );
    let allowed_headers = preflight.headers()["access-control-allow-headers"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        allowed_headers.contains("mcp-session-id"),
        "{allowed_headers}"
    );
    let from_page = |origin: &'static str| {
        initialize_request(&client, &url, "2025-11-25")
            .header("origin", origin)
            .send()
    };
    let opened = from_page("https://app.example.com").await.unwrap();
    assert_eq!(opened.status(), 200);
    let exposed = opened.headers()["access-control-expose-headers"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(exposed.contains("mcp-session-id"), "{exposed}");
    let stranger = from_page("https://evil.example.com").await.unwrap();
    assert_eq!(stranger.status(), 403);
    assert!(!stranger
        .headers()
        .contains_key("access-control-allow-origin"));
}

/// A tool reads who called it: the session, the token the bearer check
/// accepted, the client and its protocol version, the request's headers.
#[tokio::test]
async fn a_tool_sees_its_caller() {
    let options =
        HttpOptions::default().bearer_check(|token| ["team-a", "team-b"].contains(&token));
    let addr = serve(&options).await;
    let url = format!("http://{addr}/mcp");
    let client = http_client();
    let opened = client
        .post(&url)
        .bearer_auth("team-a")
        .header("accept", "application/json, text/event-stream")
        .json(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-client", "version": "0"}}}),
        )
        .send()
        .await
        .unwrap();
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = opened.text().await;
    let post = |body: Value| {
        client
            .post(&url)
            .bearer_auth("team-a")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-06-18")
            .header("mcp-session-id", &session)
            .header("x-team", "search")
            .json(&body)
            .send()
    };
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await
        .unwrap();
    let body = post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}}}))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let mut seen: Value = serde_json::from_str(&answer_text(&events(&body)).unwrap()).unwrap();
    // Its Debug names the headers, never their values.
    let debug = seen["debug"].take();
    let debug = debug.as_str().unwrap();
    assert!(
        debug.contains("authorization") && !debug.contains("team-a"),
        "{debug}"
    );
    seen.as_object_mut().unwrap().remove("debug");
    assert_eq!(
        seen,
        json!({"session": session, "token": "team-a", "version": "2025-06-18",
            "client": "raw-client", "header": "search"})
    );
}

/// With `cors(["*"])` a page of any origin passes (rmcp's own origin check
/// steps aside rather than refuse what CORS allows).
#[tokio::test]
async fn cors_for_every_origin_lets_any_page_in() {
    let addr = serve(&HttpOptions::default().cors(["*"])).await;
    let client = http_client();
    let opened = initialize_request(&client, &format!("http://{addr}/mcp"), "2025-11-25")
        .header("origin", "https://anywhere.example.org")
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    assert_eq!(opened.headers()["access-control-allow-origin"], "*");
}

/// With `bearer_identity`, a session is bound to who the token names: a
/// client whose token rotates (an OAuth refresh) keeps its session, and
/// another identity is still told it does not exist.
#[tokio::test]
async fn a_session_follows_its_identity_through_a_token_refresh() {
    let options = HttpOptions::default()
        .bearer_identity(|token| token.split_once('#').map(|(user, _)| user.to_owned()));
    let addr = serve(&options).await;
    let client = http_client();
    let url = format!("http://{addr}/mcp");
    let opened = initialize_request(&client, &url, "2025-11-25")
        .bearer_auth("alice#1")
        .send()
        .await
        .unwrap();
    assert_eq!(opened.status(), 200);
    let session = opened.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let _ = opened.text().await;
    let post = |token: &'static str, body: Value| {
        client
            .post(&url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session)
            .json(&body)
            .send()
    };
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post("alice#1", initialized).await.unwrap().status(), 202);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    assert_eq!(post("alice#2", list.clone()).await.unwrap().status(), 200);
    assert_eq!(post("bob#1", list.clone()).await.unwrap().status(), 404);
    let unnamed = post("no-user", list).await.unwrap();
    assert_eq!(unnamed.status(), 401);
}

/// Stateless HTTP keeps no session to hold a log level in, nor a stream to
/// send on outside a call: it does not offer `logging`; with sessions it
/// does.
#[tokio::test]
async fn logging_is_offered_only_where_a_session_carries_it() {
    for (stateless, offered) in [(false, true), (true, false)] {
        let mut options = HttpOptions::default();
        options.stateless = stateless;
        let addr = serve(&options).await;
        let body = initialize(&http_client(), &format!("http://{addr}/mcp"), "2025-11-25")
            .await
            .text()
            .await
            .unwrap();
        let answer: Value = match serde_json::from_str(&body) {
            Ok(answer) => answer,
            Err(_) => events(&body)
                .iter()
                .find_map(|event| serde_json::from_str(&event.data).ok())
                .unwrap(),
        };
        let capabilities = &answer["result"]["capabilities"];
        assert_eq!(
            capabilities.get("logging").is_some(),
            offered,
            "stateless {stateless}: {capabilities}"
        );
    }
}

/// A body that is not a JSON-RPC message is answered as JSON-RPC and MCP
/// say: 400 with an error object, -32700 for text that is not JSON and
/// -32600 for JSON that is no request; a body of another content type is
/// still 415, and a good request after them works.
#[tokio::test]
async fn a_malformed_message_gets_400_and_a_json_rpc_error() {
    let addr = serve(&HttpOptions::default()).await;
    let url = format!("http://{addr}/mcp");
    let client = http_client();
    let send = |body: &'static str, content_type: &'static str| {
        client
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    for (body, code) in [
        ("{bad json", -32700),
        ("", -32700),
        (r#"{"jsonrpc": "2.0", "id": 1}"#, -32600),
        (r#"{"id": 1, "method": "tools/list"}"#, -32600),
        ("[1, 2]", -32600),
        ("42", -32600),
    ] {
        let answer = send(body, "application/json").await.unwrap();
        assert_eq!(answer.status(), 400, "{body}");
        assert_eq!(
            answer.headers()["content-type"],
            "application/json",
            "{body}"
        );
        let error: Value = answer.json().await.unwrap();
        assert_eq!(error["jsonrpc"], "2.0", "{body}");
        assert_eq!(error["id"], Value::Null, "{body}");
        assert_eq!(error["error"]["code"], code, "{body}: {error}");
        assert!(error["error"]["message"].is_string(), "{body}");
    }
    let plain = send("{}", "text/plain").await.unwrap();
    assert_eq!(plain.status(), 415);
    let answer = initialize(&client, &url, "2025-11-25").await;
    assert_eq!(answer.status(), 200);
}

/// The listener of `serve` closes a connection that stalls in
/// its headers once the header timeout passes, closes one past the
/// connection cap at once, answers a body that trickles in too slowly with
/// 408, and serves a normal client all along.
#[tokio::test]
async fn stalled_and_surplus_connections_are_closed_and_others_are_served() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let mut options = HttpOptions::default();
    options.header_read_timeout = Some(Duration::from_secs(2));
    options.body_read_timeout = Some(Duration::from_millis(300));
    options.max_connections = 8;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Add).unwrap());
    tokio::spawn(async move {
        let server = behest::mcp::McpServer::new(runtime).unwrap();
        behest::mcp::http::serve(listener, server)
            .options(&options)
            .await
    });
    let connect = || tokio::net::TcpStream::connect(addr);
    // On every place there is: connections that send nothing, or headers
    // begun and never finished.
    let mut stalled = Vec::new();
    for n in 0..8 {
        let mut stream = connect().await.unwrap();
        if n % 2 == 1 {
            stream
                .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                .await
                .unwrap();
        }
        stalled.push(stream);
    }
    // One more: closed at once, with no answer.
    let mut surplus = connect().await.unwrap();
    let _ = surplus
        .write_all(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await;
    let mut buffer = [0u8; 256];
    let read = tokio::time::timeout(Duration::from_secs(10), surplus.read(&mut buffer))
        .await
        .expect("the connection past the cap is closed");
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    // The stalled ones are closed once their header timeout passes.
    for mut stream in stalled {
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer))
            .await
            .expect("a stalled connection is closed");
        assert!(
            matches!(read, Ok(0) | Err(_)) || String::from_utf8_lossy(&buffer).contains("408"),
            "{read:?}"
        );
    }
    // Part of an HTTP/2 preface (which an HTTP/1.1 server never reads as a
    // request): closed, not held.
    let mut preface = connect().await.unwrap();
    preface.write_all(b"PRI * HTTP/2").await.unwrap();
    let mut rest = Vec::new();
    // `read_to_end` returns at its end: EOF (perhaps after a 400), or a
    // reset.
    let _ended = tokio::time::timeout(Duration::from_secs(10), preface.read_to_end(&mut rest))
        .await
        .expect("a connection that began an HTTP/2 preface is closed");
    // A body that never comes whole: 408.
    let mut slow = connect().await.unwrap();
    slow.write_all(
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
    )
    .await
    .unwrap();
    let read = tokio::time::timeout(Duration::from_secs(10), slow.read(&mut buffer))
        .await
        .expect("a slow body is answered")
        .unwrap();
    let answer = String::from_utf8_lossy(&buffer[..read]);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // And a client like any other is served.
    let url = format!("http://{addr}/mcp");
    let answer = initialize(&http_client(), &url, "2025-11-25").await;
    assert_eq!(answer.status(), 200);
}

/// Opens a session as the holder of `token`: the answer.
async fn open_as(client: &reqwest::Client, url: &str, token: &str) -> reqwest::Response {
    initialize_request(client, url, "2025-11-25")
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
}

/// The session an `initialize` answer opened.
fn session_of(answer: &reqwest::Response) -> String {
    answer.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_owned()
}

/// Calls `name` on `session` as the holder of `token`.
fn call_as(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    session: &str,
    id: u64,
    name: &str,
    arguments: Value,
) -> reqwest::RequestBuilder {
    client
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("mcp-session-id", session)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}))
}

/// One credential cannot take everyone's places: past its own cap, its
/// `initialize` ends its longest-idle session to make room (that session
/// is then gone, 404), gets 429 when all of its sessions are busy, and
/// another credential opens sessions all the while.
#[tokio::test]
async fn one_identity_cannot_hold_more_than_its_share_of_sessions() {
    let mut options = HttpOptions::default().bearer_check(|token| token == "a" || token == "b");
    options.max_sessions_per_identity = 2;
    options.max_sessions = 4;
    let addr = serve(&options).await;
    let url = format!("http://{addr}/mcp");
    let client = http_client();
    let open = |token: &'static str| open_as(&client, &url, token);
    let call = |token: &'static str, session: String, id: u64, name: &str, arguments: Value| {
        call_as(&client, &url, token, &session, id, name, arguments).send()
    };
    let first = open("a").await;
    assert_eq!(first.status(), 200);
    let first = session_of(&first);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = open("a").await;
    let second = session_of(&second);
    // A third of `a`'s: its longest-idle session makes room.
    let third = open("a").await;
    assert_eq!(third.status(), 200);
    let third = session_of(&third);
    let gone = call("a", first.clone(), 1, "add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    // Both of `a`'s sessions busy with a long call (its answer's stream
    // open, so the call is in flight): a fourth is refused.
    let mut busy = Vec::new();
    for session in [second, third] {
        let answer = call("a", session, 2, "wait", json!({"ms": 60_000}))
            .await
            .unwrap();
        assert_eq!(answer.status(), 200);
        busy.push(answer);
    }
    let refused = open("a").await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 2 sessions"),
        "{error}"
    );
    // Another credential is not held back by `a`.
    let other = open("b").await;
    assert_eq!(other.status(), 200);
    drop(busy);

    // One static token shared by every client names no identity: no cap
    // of its own.
    let mut options = HttpOptions::default();
    options.bearer_token = Some("shared".to_owned());
    options.max_sessions_per_identity = 1;
    let addr = serve(&options).await;
    let url = format!("http://{addr}/mcp");
    for _ in 0..3 {
        let opened = open_as(&client, &url, "shared").await;
        assert_eq!(opened.status(), 200);
    }
}

/// One identity has at most its limit of requests in flight on its
/// sessions, a call counted until its answer's stream ends: past it, 429;
/// once one ends, it calls again; another identity calls all the while.
#[tokio::test]
async fn one_identity_cannot_have_more_than_its_share_of_calls_in_flight() {
    let mut options = HttpOptions::default().bearer_check(|token| token == "a" || token == "b");
    options.max_in_flight_per_identity = 2;
    let addr = serve(&options).await;
    let url = format!("http://{addr}/mcp");
    let client = http_client();
    let open = |token: &'static str| async {
        let answer = open_as(&client, &url, token).await;
        assert_eq!(answer.status(), 200);
        session_of(&answer)
    };
    let call = |token: &'static str, session: &str, id: u64, arguments: Value| {
        call_as(&client, &url, token, session, id, "wait", arguments).send()
    };
    let (a, b) = (open("a").await, open("b").await);
    let mut held = Vec::new();
    for id in 1..=2 {
        let answer = call("a", &a, id, json!({"ms": 60_000})).await.unwrap();
        assert_eq!(answer.status(), 200);
        held.push(answer);
    }
    let refused = call("a", &a, 3, json!({"ms": 1})).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    let error: Value = refused.json().await.unwrap();
    assert!(
        error["error"]["message"]
            .as_str()
            .unwrap()
            .contains("limit of 2 requests in flight"),
        "{error}"
    );
    let other = call("b", &b, 1, json!({"ms": 1})).await.unwrap();
    assert_eq!(other.status(), 200);
    // One of `a`'s answers' streams ends (its client went away): a place
    // is free again.
    drop(held.pop());
    let mut again = None;
    for _ in 0..100 {
        let answer = call("a", &a, 4, json!({"ms": 1})).await.unwrap();
        if answer.status() == 200 {
            again = Some(answer);
            break;
        }
        assert_eq!(answer.status(), 429);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(again.is_some(), "a place was not freed when a stream ended");
}

/// A `tools/call` of protocol 2026-07-28 (no session, every request
/// stamped with the version, the client and its capabilities), with
/// bearer `token` and more `params`: the JSON-RPC answer.
async fn call_2026(url: &str, token: &str, params: Value) -> Value {
    let mut params = params;
    params["name"] = json!("greet");
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    });
    let answer = http_client()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "greet")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .send()
        .await
        .unwrap();
    assert!(answer.headers().get("mcp-session-id").is_none());
    let body = answer.text().await.unwrap();
    serde_json::from_str(&body).unwrap_or_else(|_| {
        events(&body)
            .iter()
            .find_map(|event| serde_json::from_str::<Value>(&event.data).ok())
            .unwrap_or_else(|| panic!("no JSON-RPC answer in {body}"))
    })
}

/// Under protocol 2026-07-28 a tool's question ends the round with an
/// `input_required` result; only the caller's own retry, with its answer,
/// goes on with the call, which then finishes.
#[tokio::test]
async fn a_question_under_2026_07_28_is_a_round_only_its_caller_can_answer() {
    let options =
        HttpOptions::default().bearer_identity(|token| token.split('#').next().map(str::to_owned));
    let addr = serve(&options).await;
    let url = format!("http://{addr}/mcp");
    let asked = call_2026(&url, "ada#1", json!({"arguments": {}})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let state = result["requestState"].as_str().unwrap().to_owned();
    let requests = result["inputRequests"].as_object().unwrap();
    let (key, question) = requests.iter().next().unwrap();
    assert_eq!(question["method"], "elicitation/create", "{asked}");
    assert_eq!(question["params"]["message"], "What is your name?");
    let answers = json!({key: {"action": "accept", "content": {"name": "Ada"}}});
    let retry = json!({"arguments": {}, "requestState": state, "inputResponses": answers});
    // Another identity's retry finds no call, and takes nothing from it.
    let stolen = call_2026(&url, "bob#1", retry.clone()).await;
    assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
    let message = stolen["error"]["message"].as_str().unwrap();
    assert!(message.contains("names no call"), "{message}");
    // The caller's retry, with a refreshed token of the same identity.
    let done = call_2026(&url, "ada#2", retry.clone()).await;
    assert_eq!(done["result"]["content"][0]["text"], "hello Ada", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    // A call answered is gone.
    let again = call_2026(&url, "ada#2", retry).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
}

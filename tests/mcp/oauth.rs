//! `McpOAuth` end to end: a behest MCP server that asks for tokens, and an
//! authorization server on 127.0.0.1 that answers as RFC 8414 (metadata),
//! RFC 7591 (registration), RFC 6749 and RFC 7636 (authorization code with
//! PKCE S256, refresh) describe: what the conformance kit leaves out (tokens
//! kept between connections, refresh, a user who does not authorize, a
//! server that never takes a token).

use crate::mcp_support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Form, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;
use behest::mcp::http::{router, HttpOptions, ProtectedResource};
use behest::mcp::{ConnectOptions, FileTokenStore, McpClient, McpOAuth, McpServer};
use behest::{tool, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};
use sha2::Digest;

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// What the authorization server saw and gave.
#[derive(Default)]
struct Issued {
    /// Authorization codes waiting for their exchange: code, its PKCE
    /// challenge.
    codes: HashMap<String, String>,
    access_tokens: Vec<String>,
    refresh_tokens: Vec<String>,
    registrations: usize,
    refreshes: usize,
}

#[derive(Clone)]
struct Server {
    issuer: String,
    /// Seconds a token lives.
    lifetime: u64,
    issued: Arc<Mutex<Issued>>,
}

async fn metadata(State(server): State<Server>) -> Json<Value> {
    let issuer = &server.issuer;
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "registration_endpoint": format!("{issuer}/register"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none"],
    }))
}

async fn register(State(server): State<Server>, Json(request): Json<Value>) -> Response {
    let mut issued = server.issued.lock().unwrap();
    issued.registrations += 1;
    let answer = json!({
        "client_id": format!("client-{}", issued.registrations),
        "redirect_uris": request["redirect_uris"],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
    });
    (StatusCode::CREATED, Json(answer)).into_response()
}

/// The user agrees at once: a redirect back with a code.
async fn authorize(
    State(server): State<Server>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if query.get("code_challenge_method").map(String::as_str) != Some("S256") {
        return (StatusCode::BAD_REQUEST, "PKCE S256 is required").into_response();
    }
    let mut issued = server.issued.lock().unwrap();
    let code = format!("code-{}", issued.codes.len() + issued.access_tokens.len());
    issued
        .codes
        .insert(code.clone(), query["code_challenge"].clone());
    let location = format!(
        "{}?code={code}&state={}&iss={}",
        query["redirect_uri"], query["state"], server.issuer
    );
    (StatusCode::FOUND, [(header::LOCATION, location)]).into_response()
}

fn error(code: &str) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({"error": code}))).into_response()
}

async fn token(
    State(server): State<Server>,
    Form(form): Form<HashMap<String, String>>,
) -> Response {
    let mut issued = server.issued.lock().unwrap();
    match form.get("grant_type").map(String::as_str) {
        Some("authorization_code") => {
            let Some(challenge) = form.get("code").and_then(|code| issued.codes.remove(code))
            else {
                return error("invalid_grant");
            };
            let verifier = form.get("code_verifier").cloned().unwrap_or_default();
            let hashed = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(sha2::Sha256::digest(verifier.as_bytes()));
            if hashed != challenge {
                return error("invalid_grant");
            }
        }
        Some("refresh_token") => {
            let known = form
                .get("refresh_token")
                .is_some_and(|token| issued.refresh_tokens.contains(token));
            if !known {
                return error("invalid_grant");
            }
            issued.refreshes += 1;
        }
        _ => return error("unsupported_grant_type"),
    }
    let n = issued.access_tokens.len();
    let (access, refresh) = (format!("access-{n}"), format!("refresh-{n}"));
    issued.access_tokens.push(access.clone());
    issued.refresh_tokens.push(refresh.clone());
    Json(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": server.lifetime,
        "refresh_token": refresh,
    }))
    .into_response()
}

/// An authorization server whose tokens live `lifetime` seconds.
async fn authorization_server(lifetime: u64) -> Server {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let server = Server {
        issuer,
        lifetime,
        issued: Arc::default(),
    };
    let app = Router::new()
        .route("/.well-known/oauth-authorization-server", get(metadata))
        .route("/register", post(register))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(server.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    server
}

/// A behest MCP server that takes the tokens `takes` accepts, naming
/// `issuer` as its authorization server: its URL.
async fn mcp_server(issuer: &str, takes: impl Fn(&str) -> bool + Send + Sync + 'static) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let options = HttpOptions::default()
        .bearer_check(takes)
        .protected_resource(ProtectedResource::new(&url, issuer));
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Add).unwrap());
    let app = router(McpServer::new(runtime).unwrap(), "/mcp", &options);
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// The user's part, agreeing at once: the authorization page's redirect,
/// read and not followed.
async fn follow(url: String) -> Result<String, String> {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| error.to_string())?;
    let answer = browser
        .get(&url)
        .send()
        .await
        .map_err(|error| error.to_string())?;
    let location = answer.headers().get("location").ok_or("no redirect")?;
    Ok(location
        .to_str()
        .map_err(|error| error.to_string())?
        .to_owned())
}

/// OAuth whose user agrees at once, counting how often they were asked.
fn agreeing(asked: Arc<AtomicUsize>) -> McpOAuth {
    McpOAuth::new("http://127.0.0.1:9/callback", move |url: String| {
        asked.fetch_add(1, Ordering::SeqCst);
        follow(url)
    })
}

async fn added(client: &McpClient) -> Value {
    let result = client
        .call("add", json!({"a": 2, "b": 3}).as_object().unwrap().clone())
        .await
        .unwrap();
    serde_json::to_value(result).unwrap()
}

/// The first connection sends its user to authorize once (discovery from
/// the 401, registration, PKCE) and keeps the tokens in the file store,
/// owner-only; a second connection with the same store calls without
/// asking the user again.
#[tokio::test]
async fn a_client_authorizes_once_and_a_later_connection_uses_the_kept_tokens() {
    let _provider = mcp_support::http_client();
    let server = authorization_server(3600).await;
    let url = mcp_server(&server.issuer, |token| token.starts_with("access-")).await;
    let dir = std::env::temp_dir().join(format!("behest-oauth-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens.json");
    let asked = Arc::new(AtomicUsize::new(0));
    for _ in 0..2 {
        let oauth = agreeing(asked.clone()).store(FileTokenStore::new(&file));
        let client = McpClient::http_with(&url, &ConnectOptions::default().oauth(oauth))
            .await
            .unwrap();
        assert_eq!(added(&client).await["content"][0]["text"], "5");
    }
    assert_eq!(asked.load(Ordering::SeqCst), 1, "the user was asked once");
    let issued = server.issued.lock().unwrap();
    assert_eq!(issued.registrations, 1);
    assert_eq!(issued.access_tokens.len(), 1);
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains("access-0"), "{kept}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A token that ran out is refreshed with its refresh token, without the
/// user.
#[tokio::test]
async fn a_token_that_ran_out_is_refreshed_without_the_user() {
    let _provider = mcp_support::http_client();
    let server = authorization_server(1).await;
    let url = mcp_server(&server.issuer, |token| token.starts_with("access-")).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let options = ConnectOptions::default().oauth(agreeing(asked.clone()));
    let client = McpClient::http_with(&url, &options).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    assert_eq!(added(&client).await["content"][0]["text"], "5");
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    assert!(server.issued.lock().unwrap().refreshes >= 1);
}

/// A user who does not authorize: the connection fails with their reason,
/// and nothing hangs.
#[tokio::test]
async fn a_user_who_does_not_authorize_gets_an_error_with_the_reason() {
    let _provider = mcp_support::http_client();
    let server = authorization_server(3600).await;
    let url = mcp_server(&server.issuer, |token| token.starts_with("access-")).await;
    let oauth = McpOAuth::new("http://127.0.0.1:9/callback", |_url: String| async {
        Err::<String, _>("the user closed the browser".to_owned())
    });
    let error = McpClient::http_with(&url, &ConnectOptions::default().oauth(oauth))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("the user closed the browser"), "{error}");
}

/// A server that takes no token ends in an error after the most
/// authorizations, not in a loop.
#[tokio::test]
async fn a_server_that_never_takes_a_token_ends_in_an_error() {
    let _provider = mcp_support::http_client();
    let server = authorization_server(3600).await;
    let url = mcp_server(&server.issuer, |_| false).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let oauth = agreeing(asked.clone()).most_authorizations(2);
    let error = McpClient::http_with(&url, &ConnectOptions::default().oauth(oauth))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("still refuses after 2 authorizations"),
        "{error}"
    );
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}

/// One file store given to two servers behind the same authorization
/// server: the second is not sent the first's token; its user is asked.
#[tokio::test]
async fn tokens_kept_for_one_server_are_not_sent_to_another() {
    let _provider = mcp_support::http_client();
    let server = authorization_server(3600).await;
    let first = mcp_server(&server.issuer, |token| token == "access-0").await;
    let second = mcp_server(&server.issuer, |token| token == "access-1").await;
    let dir = std::env::temp_dir().join(format!("behest-oauth-two-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tokens.json");
    let asked = Arc::new(AtomicUsize::new(0));
    for url in [&first, &second] {
        let oauth = agreeing(asked.clone()).store(FileTokenStore::new(&file));
        let client = McpClient::http_with(url, &ConnectOptions::default().oauth(oauth))
            .await
            .unwrap();
        assert_eq!(added(&client).await["content"][0]["text"], "5");
    }
    assert_eq!(
        asked.load(Ordering::SeqCst),
        2,
        "the user was asked for each server"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A redirect whose `state` is not the one the authorization sent (a
/// forged or stale one) is refused, and says so.
#[tokio::test]
async fn a_redirect_with_another_state_is_refused() {
    let _provider = mcp_support::http_client();
    let server = authorization_server(3600).await;
    let url = mcp_server(&server.issuer, |token| token.starts_with("access-")).await;
    let forging = McpOAuth::new("http://127.0.0.1:9/callback", |url: String| async move {
        let back = follow(url).await?;
        let (before, after) = back.split_once("state=").ok_or("no state")?;
        let rest = after.split_once('&').map_or("", |(_, rest)| rest);
        Ok(format!("{before}state=forged&{rest}"))
    });
    let error = McpClient::http_with(&url, &ConnectOptions::default().oauth(forging))
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("`state` is not the one"), "{error}");
}

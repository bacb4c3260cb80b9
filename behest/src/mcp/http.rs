//! MCP over streamable HTTP: a [`McpServer`] as rmcp's
//! `StreamableHttpService`, mounted in axum.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::{McpServeError, McpServer};
use crate::runtime::ToolRuntime;

/// rustls needs a crypto provider for `https://` URLs; ring is the one
/// compiled in. An application that installed its own keeps it.
pub(crate) fn install_crypto_provider() {
    let _installed = rustls::crypto::ring::default_provider().install_default();
}

/// How the HTTP endpoint is guarded.
#[derive(Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Hosts the `Host` header may name (DNS-rebinding guard). Default:
    /// `localhost`, `127.0.0.1`, `::1`, any port. Serving other names (a
    /// LAN address, a domain behind a proxy) means listing them; an empty
    /// list lets every host through.
    pub allowed_hosts: Vec<String>,
    /// Origins a browser request may come from. Default: pages served from
    /// `localhost`, `127.0.0.1` or `::1`, any port; requests without an
    /// `Origin` (every non-browser client) pass. Empty: not checked.
    pub allowed_origins: Vec<String>,
    /// The largest request body, in bytes. Default 4 MiB.
    pub max_body_bytes: usize,
    /// No session: every request stands alone, so several replicas can
    /// serve behind a load balancer with no affinity. Default off.
    ///
    /// It also decides what a client that disconnects mid-call means.
    /// Stateless, nobody can receive the answer any more: the call is
    /// cancelled (its tool sees its token, then is dropped after the
    /// grace period) and its permit freed. With sessions, MCP says a
    /// disconnect is not a cancellation (the client may come back for the
    /// answer); a client cancels with `notifications/cancelled`.
    pub stateless: bool,
    /// A bearer token every request must carry (`Authorization: Bearer ..`),
    /// checked by [`router`]. For other schemes, mount [`service`] behind
    /// your own axum middleware.
    pub bearer_token: Option<String>,
    /// A check of the bearer token a request carries (several tokens, a
    /// signed token, a lookup), run by [`router`] besides
    /// [`bearer_token`](Self::bearer_token): a request passes when it
    /// carries a token both accept. Set with
    /// [`bearer_check`](Self::bearer_check).
    pub bearer_check: Option<BearerCheck>,
}

/// A check of a request's bearer token: whether it may pass.
pub type BearerCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

impl HttpOptions {
    /// Lets through only requests whose bearer token `check` accepts.
    #[must_use]
    pub fn bearer_check(mut self, check: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.bearer_check = Some(Arc::new(check));
        self
    }

    /// Whether a request carrying `presented` (its bearer token, if any)
    /// may pass.
    fn admits(&self, presented: Option<&str>) -> bool {
        if self.bearer_token.is_none() && self.bearer_check.is_none() {
            return true;
        }
        let Some(presented) = presented else {
            return false;
        };
        self.bearer_token
            .as_deref()
            .is_none_or(|token| same_secret(presented, token))
            && self
                .bearer_check
                .as_ref()
                .is_none_or(|check| check(presented))
    }
}

/// Shows everything but the token.
impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions")
            .field("allowed_hosts", &self.allowed_hosts)
            .field("allowed_origins", &self.allowed_origins)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("stateless", &self.stateless)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "***"))
            .field("bearer_check", &self.bearer_check.as_ref().map(|_| ".."))
            .finish()
    }
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
            ],
            max_body_bytes: 4 * 1024 * 1024,
            stateless: false,
            bearer_token: None,
            bearer_check: None,
        }
    }
}

/// `server` as a tower service of MCP's streamable HTTP transport, with
/// the host, origin and body checks of `options` (not its bearer token:
/// [`router`] checks that).
pub fn service(
    server: McpServer,
    options: &HttpOptions,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    service_until(server, options, CancellationToken::new())
}

/// [`service`], whose sessions and streams end when `stop` is cancelled.
fn service_until(
    server: McpServer,
    options: &HttpOptions,
    stop: CancellationToken,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_allowed_origins(options.allowed_origins.clone())
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless);
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// An axum router serving `server` at `path` (`"/mcp"`; not `"/"`, which
/// axum cannot nest), with the bearer token checked when one is set. Merge
/// it into your own router.
pub fn router(server: McpServer, path: &str, options: &HttpOptions) -> axum::Router {
    router_until(server, path, options, CancellationToken::new())
}

fn router_until(
    server: McpServer,
    path: &str,
    options: &HttpOptions,
    stop: CancellationToken,
) -> axum::Router {
    let router = axum::Router::new().nest_service(path, service_until(server, options, stop));
    if options.bearer_token.is_none() && options.bearer_check.is_none() {
        return router;
    }
    let options = Arc::new(options.clone());
    let sessions = Arc::new(SessionOwners::default());
    router.layer(axum::middleware::from_fn(
        move |request: axum::extract::Request, next: axum::middleware::Next| {
            let options = options.clone();
            let sessions = sessions.clone();
            async move {
                let presented = request
                    .headers()
                    .get(axum::http::header::AUTHORIZATION)
                    .and_then(|value| value.to_str().ok())
                    .and_then(|value| value.split_once(' '))
                    .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                    .map(|(_, presented)| presented.trim().to_owned());
                if options.admits(presented.as_deref()) {
                    let presented = presented.unwrap_or_default();
                    let session = session_id(request.headers());
                    // A session answers only the credential that opened
                    // it: another is told it does not exist, and changes
                    // nothing (the spec's security notes).
                    if let Some(session) = &session {
                        if !sessions.belongs(session, &presented) {
                            return axum::response::IntoResponse::into_response(
                                axum::http::StatusCode::NOT_FOUND,
                            );
                        }
                    }
                    let deleting = request.method() == axum::http::Method::DELETE;
                    let response = next.run(request).await;
                    match (session_id(response.headers()), &session) {
                        (Some(opened), None) => sessions.open(opened, &presented),
                        (_, Some(ended)) if deleting && response.status().is_success() => {
                            sessions.end(ended);
                        }
                        _ => {}
                    }
                    response
                } else {
                    let mut refused = axum::response::IntoResponse::into_response(
                        axum::http::StatusCode::UNAUTHORIZED,
                    );
                    refused.headers_mut().insert(
                        axum::http::header::WWW_AUTHENTICATE,
                        axum::http::HeaderValue::from_static("Bearer"),
                    );
                    refused
                }
            }
        },
    ))
}

/// The `Mcp-Session-Id` of a request or response.
fn session_id(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Which credential opened each session, so that no other can use it.
/// Kept as digests: the map holds no token.
#[derive(Default)]
struct SessionOwners {
    owners: std::sync::Mutex<std::collections::HashMap<String, u64>>,
}

impl SessionOwners {
    fn digest(token: &str) -> u64 {
        use std::hash::{BuildHasher, Hasher};
        // A fixed-key hash of the process: equal tokens, equal digests.
        static KEYS: std::sync::OnceLock<std::collections::hash_map::RandomState> =
            std::sync::OnceLock::new();
        let mut hasher = KEYS.get_or_init(Default::default).build_hasher();
        hasher.write(token.as_bytes());
        hasher.finish()
    }

    fn open(&self, session: String, token: &str) {
        crate::sync::lock(&self.owners).insert(session, Self::digest(token));
    }

    /// Whether `session` may be used with `token`: it was opened with it,
    /// or it is not one this server opened (rmcp answers for those).
    fn belongs(&self, session: &str, token: &str) -> bool {
        crate::sync::lock(&self.owners)
            .get(session)
            .is_none_or(|owner| *owner == Self::digest(token))
    }

    fn end(&self, session: &str) {
        crate::sync::lock(&self.owners).remove(session);
    }
}

/// Whether `presented` is `expected`, in time that does not depend on
/// where they differ.
fn same_secret(presented: &str, expected: &str) -> bool {
    let (presented, expected) = (presented.as_bytes(), expected.as_bytes());
    presented.len() == expected.len()
        && presented
            .iter()
            .zip(expected)
            .fold(0u8, |differ, (a, b)| differ | (a ^ b))
            == 0
}

/// Serves `runtime`'s tools at `http://{addr}/mcp` until the process ends,
/// guarded by `options`. Bind `127.0.0.1` unless other machines must reach
/// it, and then list the names they use in
/// [`allowed_hosts`](HttpOptions::allowed_hosts).
pub async fn serve_http(
    runtime: ToolRuntime,
    addr: SocketAddr,
    options: &HttpOptions,
) -> Result<(), McpServeError> {
    let listener = listen(addr).await?;
    serve_http_until(runtime, listener, options, std::future::pending()).await
}

/// [`serve_http`] on `127.0.0.1:{port}`: reachable from this machine only.
pub async fn serve_http_local(
    runtime: ToolRuntime,
    port: u16,
    options: &HttpOptions,
) -> Result<(), McpServeError> {
    serve_http(runtime, SocketAddr::from(([127, 0, 0, 1], port)), options).await
}

/// Serves `runtime`'s tools at `/mcp` on a listener already bound (port 0
/// for any free one: read it from the listener first) until `shutdown`
/// completes. Then no request is taken, every session ends, and calls
/// still running are cancelled (their tools see their tokens); the
/// function returns once the connections have closed.
pub async fn serve_http_until(
    runtime: ToolRuntime,
    listener: tokio::net::TcpListener,
    options: &HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), McpServeError> {
    let server = McpServer::new(runtime)?;
    // Open sessions' streams would hold the graceful shutdown for ever:
    // they end with it.
    let stop = CancellationToken::new();
    let app = router_until(server, "/mcp", options, stop.clone());
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            shutdown.await;
            stop.cancel();
        })
        .await
        .map_err(|error| McpServeError::new(format!("the HTTP server failed: {error}")))
}

async fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, McpServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| McpServeError::new(format!("cannot listen on {addr}: {error}")))
}

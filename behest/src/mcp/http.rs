//! MCP over streamable HTTP: a [`McpServer`] as rmcp's
//! `StreamableHttpService`, mounted in axum.

use std::net::SocketAddr;
use std::sync::Arc;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use super::{McpServeError, McpServer};
use crate::runtime::ToolRuntime;

/// rustls needs a crypto provider for `https://` URLs; ring is the one
/// compiled in. An application that installed its own keeps it.
pub(crate) fn install_crypto_provider() {
    let _installed = rustls::crypto::ring::default_provider().install_default();
}

/// How the HTTP endpoint is guarded.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Hosts the `Host` header may name (DNS-rebinding guard). Default:
    /// `localhost`, `127.0.0.1`, `::1`, any port.
    pub allowed_hosts: Vec<String>,
    /// Origins a browser request may come from (`http://localhost:*`);
    /// empty: requests that send an `Origin` are not checked.
    pub allowed_origins: Vec<String>,
    /// The largest request body, in bytes. Default 4 MiB.
    pub max_body_bytes: usize,
    /// No session: every request stands alone, so several replicas can
    /// serve behind a load balancer with no affinity. Default off.
    pub stateless: bool,
    /// A bearer token every request must carry (`Authorization: Bearer ..`).
    pub bearer_token: Option<String>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: Vec::new(),
            max_body_bytes: 4 * 1024 * 1024,
            stateless: false,
            bearer_token: None,
        }
    }
}

/// `server` as a tower service of MCP's streamable HTTP transport.
pub fn service(
    server: McpServer,
    options: &HttpOptions,
) -> StreamableHttpService<McpServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
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

/// An axum router serving `server` at `path` (`"/mcp"`), with the bearer
/// token checked when one is set. Merge it into your own router.
pub fn router(server: McpServer, path: &str, options: &HttpOptions) -> axum::Router {
    let router = axum::Router::new().nest_service(path, service(server, options));
    match options.bearer_token.clone() {
        None => router,
        Some(token) => {
            let expected: Arc<str> = format!("Bearer {token}").into();
            router.layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    let expected = expected.clone();
                    async move {
                        let authorized = request
                            .headers()
                            .get(axum::http::header::AUTHORIZATION)
                            .and_then(|value| value.to_str().ok())
                            == Some(&*expected);
                        if authorized {
                            next.run(request).await
                        } else {
                            axum::response::IntoResponse::into_response(
                                axum::http::StatusCode::UNAUTHORIZED,
                            )
                        }
                    }
                },
            ))
        }
    }
}

/// Serves `runtime`'s tools at `http://{addr}/mcp` until the process ends;
/// bind `127.0.0.1` unless other machines must reach it.
pub async fn serve_http(runtime: ToolRuntime, addr: SocketAddr) -> Result<(), McpServeError> {
    let server = McpServer::new(runtime)?;
    let app = router(server, "/mcp", &HttpOptions::default());
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| McpServeError::new(format!("cannot listen on {addr}: {error}")))?;
    axum::serve(listener, app)
        .await
        .map_err(|error| McpServeError::new(format!("the HTTP server failed: {error}")))
}

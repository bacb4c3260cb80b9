//! MCP over streamable HTTP: a [`McpServer`] as rmcp's
//! `StreamableHttpService`, mounted in axum.

use std::sync::Arc;

use axum::http::{header, HeaderValue, Method, StatusCode};

use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::guard::{self, Guard};
pub(crate) use super::options::CallerIdentity;
use super::options::{json_response, SSE_RETRY};
pub use super::options::{BearerCheck, BearerIdentity, HttpOptions, ProtectedResource};
use super::owners::SessionOwners;
pub use super::serve::{serve, Serve};
#[allow(deprecated)]
pub use super::serve::{
    serve_http, serve_http_local, serve_http_until, serve_server, serve_server_until,
};
use super::sessions::SessionLimits;
pub use super::sessions::{McpSessions, McpSessionsError, SessionTransport};
use super::McpServer;

/// rustls needs a crypto provider for `https://` URLs; ring is the one
/// compiled in. An application that installed its own keeps it.
pub(crate) fn install_crypto_provider() {
    let _installed = rustls::crypto::ring::default_provider().install_default();
}

/// `server` as rmcp's tower service of MCP's streamable HTTP transport,
/// with behest's sessions ([`McpSessions`]) and the host, origin and body
/// checks of `options`. The rest of `options` (bearer tokens, the session
/// cap's 503, CORS, OAuth metadata, `DELETE`'s 204) is [`router`]'s: mount
/// this only behind your own layers for those.
pub fn service(
    server: McpServer,
    options: &HttpOptions,
) -> StreamableHttpService<McpServer, McpSessions> {
    let sessions = Arc::new(sessions_of(options));
    service_until(server, options, sessions, false, CancellationToken::new())
}

fn sessions_of(options: &HttpOptions) -> McpSessions {
    McpSessions::new(SessionLimits {
        idle_timeout: options.idle_timeout,
        max_sessions: options.max_sessions,
        sse_retry: SSE_RETRY,
        max_session_bytes: options.max_session_bytes,
    })
}

/// [`service`] on `sessions`, whose sessions and streams end when `stop`
/// is cancelled; `cors` when a CORS layer in front grants
/// [`cors_origins`](HttpOptions::cors_origins).
fn service_until(
    server: McpServer,
    options: &HttpOptions,
    sessions: Arc<McpSessions>,
    cors: bool,
    stop: CancellationToken,
) -> StreamableHttpService<McpServer, McpSessions> {
    let mut allowed_origins = options.allowed_origins.clone();
    if !cors {
        // No CORS layer in front: the origins it would grant stay out.
    } else if options.cors_origins.iter().any(|origin| origin == "*") {
        // Every origin may call: rmcp's origin check steps aside.
        allowed_origins.clear();
    } else if !allowed_origins.is_empty() {
        allowed_origins.extend(options.cors_origins.iter().cloned());
    }
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_allowed_origins(allowed_origins)
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_legacy_session_mode(!options.stateless)
        .with_json_response(options.stateless)
        // Priming events are the sessions' to send, by protocol version.
        .with_sse_retry(None);
    let server = if options.stateless {
        server.stateless()
    } else {
        server
    };
    StreamableHttpService::new(move || Ok(server.clone()), sessions, config)
}

/// An axum router serving `server` at `path` (`"/mcp"`; not `"/"`, which
/// axum cannot nest) with everything `options` asks: the bearer token and
/// each session bound to the credential that opened it, the session cap,
/// CORS, and the OAuth protected-resource metadata. Merge it into your own
/// router.
pub fn router(server: McpServer, path: &str, options: &HttpOptions) -> axum::Router {
    router_until(server, path, options, CancellationToken::new())
}

pub(super) fn router_until(
    server: McpServer,
    path: &str,
    options: &HttpOptions,
    stop: CancellationToken,
) -> axum::Router {
    let sessions = Arc::new(sessions_of(options));
    let cors_layer = cors(&options.cors_origins);
    let service = service_until(
        server,
        options,
        sessions.clone(),
        cors_layer.is_some(),
        stop,
    );
    let guard = Arc::new(Guard {
        options: options.clone(),
        sessions,
        owners: SessionOwners::default(),
    });
    use axum::middleware::from_fn_with_state as layer;
    // The last added runs first: the guard's layers, outermost last.
    let mut router = axum::Router::new()
        .nest_service(path, service)
        .layer(layer(guard.clone(), guard::admit_session))
        .layer(layer(guard.clone(), guard::limit_in_flight))
        .layer(layer(guard.clone(), guard::check_session))
        .layer(layer(guard.clone(), guard::read_body))
        .layer(layer(guard, guard::authenticate));
    // The metadata is public: it tells a client without a token where to
    // get one.
    if let Some(resource) = &options.protected_resource {
        let (well_known, _) = resource.metadata_location();
        let document = resource.document();
        // Braces are axum's path syntax: a literal one is doubled.
        let route = well_known.replace('{', "{{").replace('}', "}}");
        router = router.route(
            &route,
            axum::routing::get(move || {
                std::future::ready(json_response(StatusCode::OK, &document))
            }),
        );
    }
    match cors_layer {
        Some(cors) => router.layer(cors),
        None => router,
    }
}

/// The CORS layer letting `origins` in, or `None` for none.
fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(
            origins
                .iter()
                .filter_map(|origin| HeaderValue::from_str(origin).ok()),
        )
    };
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([Method::GET, Method::POST, Method::DELETE])
            // MCP's headers grow with its versions (`Mcp-Method`,
            // `Mcp-Param-*`): a listed origin may send what it asks to.
            .allow_headers(tower_http::cors::AllowHeaders::mirror_request())
            .expose_headers([
                header::HeaderName::from_static("mcp-session-id"),
                header::WWW_AUTHENTICATE,
            ]),
    )
}

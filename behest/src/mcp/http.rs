//! MCP over streamable HTTP: a [`McpServer`] as rmcp's
//! `StreamableHttpService`, mounted in axum.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use rmcp::model::ProtocolVersion;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use super::sessions::SessionLimits;
pub use super::sessions::{McpSessions, McpSessionsError, SessionTransport};
use super::{McpServeError, McpServer};
use crate::runtime::ToolRuntime;

/// rustls needs a crypto provider for `https://` URLs; ring is the one
/// compiled in. An application that installed its own keeps it.
pub(crate) fn install_crypto_provider() {
    let _installed = rustls::crypto::ring::default_provider().install_default();
}

/// Who a request's credential names, as [`router`]'s guard found it: in
/// the request's extensions when the endpoint is guarded.
#[derive(Clone, Debug)]
pub(crate) struct CallerIdentity(pub(crate) String);

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
    /// answer); a client cancels with `notifications/cancelled`. Stateless,
    /// that notification has no session to find the call by and is
    /// ignored: closing the request's connection is the way to cancel.
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
    /// Who a bearer token names (a token's subject), or `None` to refuse
    /// it, run by [`router`] after the token and the check. A session is
    /// bound to the identity that opened it, so a client whose token
    /// rotates (an OAuth refresh) keeps its session; without this, the
    /// token itself is the identity. Set with
    /// [`bearer_identity`](Self::bearer_identity).
    pub bearer_identity: Option<BearerIdentity>,
    /// How long a session may sit idle (no call in flight, no stream open,
    /// no request) before it ends; its client then gets 404 and starts a
    /// new one. A call never counts as idle, however long it runs, nor
    /// does a client holding its notification stream open. Default 30
    /// minutes; `None`: sessions end only by `DELETE` or shutdown.
    pub idle_timeout: Option<Duration>,
    /// The most sessions open at once (each holds a worker); an
    /// `initialize` past it gets 503 with `Retry-After`. Default 1024.
    pub max_sessions: usize,
    /// The most sessions one identity holds at once (at least one), so that
    /// one credential opening sessions in a loop cannot take the places of
    /// everyone else's. Past it, an `initialize` of that identity ends the
    /// identity's longest-idle sessions to make room, and gets 429 with
    /// `Retry-After` when all of them are busy. It applies where tokens
    /// name identities ([`bearer_check`](Self::bearer_check) or
    /// [`bearer_identity`](Self::bearer_identity)): one static
    /// [`bearer_token`](Self::bearer_token) shared by every client, or no
    /// token, names none. Default 64.
    pub max_sessions_per_identity: usize,
    /// The most requests one identity has in flight at once (at least
    /// one), a call counted until its answer's stream ends (a call of
    /// protocol 2026-07-28 waiting between rounds for its client's answers
    /// has no request open: at most 32 of those wait per caller): past it, 429 with `Retry-After`, so that one credential cannot
    /// take every worker. Where tokens name identities, as
    /// [`max_sessions_per_identity`](Self::max_sessions_per_identity).
    /// Default 256.
    pub max_in_flight_per_identity: usize,
    /// The most bytes of events one session keeps for clients that resume
    /// a stream (`Last-Event-ID`). Past it, answers already read go first,
    /// then the oldest progress and log notifications of calls still
    /// running, then the oldest answers nobody has read (a client resuming
    /// for one gets a stream that ends with nothing); an answer being sent
    /// is never
    /// cut short (the runtime's output limit bounds it). With
    /// [`max_sessions`](Self::max_sessions) this bounds what sessions hold.
    /// Default 8 MiB.
    pub max_session_bytes: usize,
    /// How long a client may take to send a request's headers, from when
    /// its connection opens or its last response ends: a connection that
    /// sends none in time (silent, stalled mid-header, or idle between
    /// requests) is closed. Default 10 s; `None` only behind a proxy that
    /// bounds it. Applied by [`serve_http`] and [`serve_server`] (HTTP/1.1,
    /// which every MCP client speaks).
    pub header_read_timeout: Option<Duration>,
    /// How long a client may take to send a request's body: past it, 408.
    /// Default 30 s. Applied by [`router`].
    pub body_read_timeout: Option<Duration>,
    /// The most connections served at once by [`serve_http`] and
    /// [`serve_server`] (at least one): one past it is closed at once, and
    /// silent, stalled or idle connections end after
    /// [`header_read_timeout`](Self::header_read_timeout), so they cannot
    /// hold every place. Default 1024.
    pub max_connections: usize,
    /// The authorization server that issues this endpoint's tokens, for
    /// clients that discover it by OAuth (RFC 9728). Set with
    /// [`protected_resource`](Self::protected_resource).
    pub protected_resource: Option<ProtectedResource>,
    /// Browser origins allowed to call the endpoint across origins (CORS):
    /// `"*"` or full origins (`"https://app.example.com"`). Default empty:
    /// no CORS headers, so browsers keep pages of other origins out. Each
    /// is also let past [`allowed_origins`](Self::allowed_origins).
    pub cors_origins: Vec<String>,
}

/// What [`router`] publishes as OAuth 2.0 protected-resource metadata
/// (RFC 9728), at `/.well-known/oauth-protected-resource` followed by the
/// endpoint's path, and names in every 401's `WWW-Authenticate`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProtectedResource {
    /// The endpoint's own URL as clients reach it
    /// (`https://mcp.example.com/mcp`): the tokens' audience.
    pub resource: String,
    /// The authorization servers' issuer URLs.
    pub authorization_servers: Vec<String>,
    /// The scopes a token may carry; empty: not published.
    pub scopes_supported: Vec<String>,
}

impl ProtectedResource {
    /// `resource` guarded by tokens from `authorization_server`.
    pub fn new(resource: impl Into<String>, authorization_server: impl Into<String>) -> Self {
        Self {
            resource: resource.into(),
            authorization_servers: vec![authorization_server.into()],
            scopes_supported: Vec::new(),
        }
    }

    /// The scopes a token may carry.
    #[must_use]
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes_supported = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// The metadata document's path and its full URL: the resource's
    /// origin, `/.well-known/oauth-protected-resource`, then the
    /// resource's path (RFC 9728, section 3.1).
    fn metadata_location(&self) -> (String, String) {
        let after_scheme = self.resource.find("://").map_or(0, |at| at + 3);
        let path_at = self.resource[after_scheme..]
            .find('/')
            .map_or(self.resource.len(), |at| after_scheme + at);
        let (origin, path) = self.resource.split_at(path_at);
        let path = path.trim_end_matches('/');
        let well_known = format!("/.well-known/oauth-protected-resource{path}");
        let url = format!("{origin}{well_known}");
        (well_known, url)
    }

    fn document(&self) -> serde_json::Value {
        let mut document = serde_json::json!({
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !self.scopes_supported.is_empty() {
            document["scopes_supported"] = serde_json::json!(self.scopes_supported);
        }
        document
    }
}

/// A check of a request's bearer token: whether it may pass.
pub type BearerCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// Who a bearer token names, or `None` when it is refused.
pub type BearerIdentity = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

impl HttpOptions {
    /// Publishes `resource` (RFC 9728) and names it in every 401, so an
    /// OAuth-aware client finds the authorization server by itself.
    #[must_use]
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.protected_resource = Some(resource);
        self
    }

    /// Lets browser pages of `origins` call the endpoint (see
    /// [`cors_origins`](Self::cors_origins)).
    #[must_use]
    pub fn cors(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.cors_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Lets through only requests whose bearer token `identify` names
    /// someone, and binds each session to that identity rather than to the
    /// token (see [`bearer_identity`](Self::bearer_identity)).
    #[must_use]
    pub fn bearer_identity(
        mut self,
        identify: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.bearer_identity = Some(Arc::new(identify));
        self
    }

    /// Lets through only requests whose bearer token `check` accepts.
    #[must_use]
    pub fn bearer_check(mut self, check: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.bearer_check = Some(Arc::new(check));
        self
    }

    /// Whether any bearer token is asked for.
    fn is_guarded(&self) -> bool {
        self.bearer_token.is_some() || self.bearer_check.is_some() || self.bearer_identity.is_some()
    }

    /// Who a request carrying `presented` (its bearer token, if any) is,
    /// or `None` when it may not pass. Unguarded, everyone is `""`.
    /// Whether tokens name identities of their own (a check or a mapping
    /// of tokens), as the per-identity session cap needs.
    fn names_identities(&self) -> bool {
        self.bearer_check.is_some() || self.bearer_identity.is_some()
    }

    fn identity(&self, presented: Option<&str>) -> Option<String> {
        if !self.is_guarded() {
            return Some(String::new());
        }
        let presented = presented?;
        let admitted = self
            .bearer_token
            .as_deref()
            .is_none_or(|token| same_secret(presented, token))
            && self
                .bearer_check
                .as_ref()
                .is_none_or(|check| check(presented));
        if !admitted {
            return None;
        }
        match &self.bearer_identity {
            Some(identify) => identify(presented),
            None => Some(presented.to_owned()),
        }
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
            .field(
                "bearer_identity",
                &self.bearer_identity.as_ref().map(|_| ".."),
            )
            .field("idle_timeout", &self.idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("protected_resource", &self.protected_resource)
            .field("cors_origins", &self.cors_origins)
            .field("max_sessions_per_identity", &self.max_sessions_per_identity)
            .field(
                "max_in_flight_per_identity",
                &self.max_in_flight_per_identity,
            )
            .field("header_read_timeout", &self.header_read_timeout)
            .field("body_read_timeout", &self.body_read_timeout)
            .field("max_connections", &self.max_connections)
            .field("max_session_bytes", &self.max_session_bytes)
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
            bearer_identity: None,
            idle_timeout: Some(Duration::from_secs(30 * 60)),
            max_sessions: 1024,
            max_sessions_per_identity: 64,
            max_in_flight_per_identity: 256,
            header_read_timeout: Some(Duration::from_secs(10)),
            body_read_timeout: Some(Duration::from_secs(30)),
            max_connections: 1024,
            max_session_bytes: 8 * 1024 * 1024,
            protected_resource: None,
            cors_origins: Vec::new(),
        }
    }
}

/// How long a client waits before reconnecting a broken stream, as the
/// priming events tell it.
const SSE_RETRY: Duration = Duration::from_secs(3);

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
        server.without_logging()
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

fn router_until(
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
    let mut router =
        axum::Router::new()
            .nest_service(path, service)
            .layer(axum::middleware::from_fn(
                move |request: axum::extract::Request, next: axum::middleware::Next| {
                    guard.clone().pass(request, next)
                },
            ));
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

/// What [`router`] checks of each request before rmcp sees it.
struct Guard {
    options: HttpOptions,
    sessions: Arc<McpSessions>,
    owners: SessionOwners,
}

impl Guard {
    async fn pass(
        self: Arc<Self>,
        request: axum::extract::Request,
        next: axum::middleware::Next,
    ) -> Response {
        let presented = bearer_of(request.headers());
        let Some(identity) = self.options.identity(presented.as_deref()) else {
            return self.unauthorized(presented.is_some());
        };
        let guarded = self.options.is_guarded();
        let session = session_id(request.headers());
        let method = request.method().clone();
        let mut request = request;
        // A POST's body, read here once: to refuse a new session past the
        // cap, and to tell what was wrong with a body rmcp cannot read.
        let mut body = None;
        if method == Method::POST {
            let (parts, sent) = request.into_parts();
            let reading = axum::body::to_bytes(sent, self.options.max_body_bytes);
            let read = match self.options.body_read_timeout {
                Some(limit) => match tokio::time::timeout(limit, reading).await {
                    Ok(read) => read,
                    Err(_elapsed) => return StatusCode::REQUEST_TIMEOUT.into_response(),
                },
                None => reading.await,
            };
            let bytes = match read {
                Ok(bytes) => bytes,
                Err(error) => {
                    let too_large = error
                        .into_inner()
                        .downcast_ref::<http_body_util::LengthLimitError>()
                        .is_some();
                    // Over the limit, or a body that broke off.
                    let status = if too_large {
                        StatusCode::PAYLOAD_TOO_LARGE
                    } else {
                        StatusCode::BAD_REQUEST
                    };
                    return status.into_response();
                }
            };
            request =
                axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
            body = Some(bytes);
        }
        if guarded {
            // For what binds to who made it beyond a session: a call of
            // protocol 2026-07-28 waiting for its client's answers.
            request
                .extensions_mut()
                .insert(CallerIdentity(identity.clone()));
        }
        if let Some(session) = &session {
            // A session answers only the identity that opened it: another
            // is told it does not exist, and changes nothing (the spec's
            // security notes). An ended session does not exist either.
            let owned = !guarded || self.owners.belongs(session, &identity);
            if !owned || (method == Method::DELETE && !self.sessions.contains(session)) {
                return StatusCode::NOT_FOUND.into_response();
            }
            // In use: not the longest idle while its request is on its way.
            self.sessions.touch(session);
        }
        // Counted until the answer's body ends: requests on sessions, and
        // those of protocol 2026-07-28, which has none.
        let mut in_flight = None;
        let sessionless = request
            .headers()
            .get("mcp-protocol-version")
            .and_then(|version| version.to_str().ok())
            .is_some_and(|version| version >= ProtocolVersion::NO_INITIALIZE.as_str());
        if (session.is_some() || sessionless)
            && method == Method::POST
            && self.options.names_identities()
        {
            match self
                .owners
                .in_flight(&identity, self.options.max_in_flight_per_identity)
            {
                Some(slot) => in_flight = Some(slot),
                None => {
                    let limit = self.options.max_in_flight_per_identity.max(1);
                    let message = format!(
                        "this credential has its limit of {limit} requests in flight; retry when one has its answer"
                    );
                    let mut refused =
                        json_rpc_error(StatusCode::TOO_MANY_REQUESTS, -32000, &message);
                    refused
                        .headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                    return refused;
                }
            }
        }
        // Held until the answer: a session this request opens counts
        // against its identity while it is being opened.
        let mut _opening = None;
        if session.is_none()
            && !self.options.stateless
            && body.as_deref().is_some_and(is_initialize)
        {
            // Only a new session is refused; other requests without one
            // (of protocols that need none) pass.
            if self.options.names_identities() {
                match self.make_room(&identity).await {
                    Ok(opening) => _opening = Some(opening),
                    Err(refused) => return refused,
                }
            }
            if self.sessions.is_full() {
                return self.full();
            }
        }
        let mut response = next.run(request).await;
        if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
            if let Some(body) = &body {
                return unreadable_message(response, body).await;
            }
        }
        if response.status() == StatusCode::INTERNAL_SERVER_ERROR {
            match &session {
                // The session ended (idle) between rmcp's look and its use.
                Some(session) if !self.sessions.contains(session) => {
                    return StatusCode::NOT_FOUND.into_response();
                }
                // The cap was reached by a request racing this one (an
                // `initialize`: a request of 2026-07-28 opens no session).
                None if !sessionless && self.sessions.is_full() => return self.full(),
                _ => {}
            }
        }
        match (session_id(response.headers()), &session) {
            (Some(opened), None) if guarded => {
                self.owners.open(opened, &identity, &self.sessions);
            }
            (_, Some(ended)) if method == Method::DELETE && response.status().is_success() => {
                self.owners.end(ended);
                // rmcp says 202; a DELETE is done, not accepted for later.
                *response.status_mut() = StatusCode::NO_CONTENT;
            }
            _ => {}
        }
        match in_flight {
            Some(slot) => {
                use http_body_util::BodyExt;
                let (parts, body) = response.into_parts();
                let body = body.map_frame(move |frame| {
                    // The slot goes with the body: when its stream ends.
                    let _held = &slot;
                    frame
                });
                Response::from_parts(parts, axum::body::Body::new(body))
            }
            None => response,
        }
    }

    /// 401, naming the metadata of an OAuth-guarded endpoint, and saying
    /// whether a token was there but refused (RFC 6750).
    fn unauthorized(&self, presented: bool) -> Response {
        let mut challenge = "Bearer".to_owned();
        let mut separator = " ";
        if let Some(resource) = &self.options.protected_resource {
            let url = resource.metadata_location().1;
            challenge.push_str(&format!("{separator}resource_metadata=\"{url}\""));
            separator = ", ";
        }
        if presented {
            challenge.push_str(&format!("{separator}error=\"invalid_token\""));
        }
        let mut refused = StatusCode::UNAUTHORIZED.into_response();
        if let Ok(challenge) = HeaderValue::from_str(&challenge) {
            refused
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, challenge);
        }
        refused
    }

    /// Makes room for one more session of `identity` under its cap, by
    /// ending its longest-idle sessions; `Err` (429) when they are all
    /// busy. `Ok` holds a place for the session being opened until it is
    /// dropped, so that `initialize`s of one identity at once count each
    /// other.
    async fn make_room(&self, identity: &str) -> Result<Opening, Response> {
        let cap = self.options.max_sessions_per_identity.max(1);
        let opening = self.owners.begin_opening(identity);
        let owned = self.owners.owned_by(identity, &self.sessions);
        let held = owned.len() + opening.pending();
        if held < cap {
            return Ok(opening);
        }
        let mut idle: Vec<(tokio::time::Instant, String)> = owned
            .into_iter()
            .filter_map(|session| Some((self.sessions.idle_since(&session)?, session)))
            .collect();
        idle.sort();
        let mut over = held + 1 - cap;
        for (seen, session) in idle {
            if over == 0 {
                break;
            }
            // Ended only if still idle since then: a request may have
            // come for it meanwhile.
            if self.sessions.end_if_idle(&session, seen).await {
                tracing::debug!(
                    session,
                    "an idle MCP session ended to make room for its identity's new one"
                );
                self.owners.end(&session);
                over -= 1;
            }
        }
        if over == 0 {
            return Ok(opening);
        }
        let message = format!(
            "this credential holds its limit of {cap} sessions, all busy; end one (DELETE) or retry later"
        );
        let mut response = json_rpc_error(StatusCode::TOO_MANY_REQUESTS, -32000, &message);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        Err(response)
    }

    /// 503 for an `initialize` past the session cap, as a JSON-RPC error
    /// the client can show.
    fn full(&self) -> Response {
        let message = McpSessionsError::Full(self.options.max_sessions).to_string();
        let mut response = json_rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, &message);
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        response
    }
}

/// What rmcp's answer to a body it cannot read (415, and a line of text)
/// becomes: JSON-RPC and MCP answer 400 with an error object, -32700 for
/// text that is not JSON and -32600 for JSON that is not a JSON-RPC
/// message. A 415 for another reason (the body's content type) stays.
async fn unreadable_message(response: Response, body: &[u8]) -> Response {
    const UNREADABLE: &str = "fail to deserialize request body";
    let (parts, said) = response.into_parts();
    let said = axum::body::to_bytes(said, 64 * 1024)
        .await
        .unwrap_or_default();
    let said = String::from_utf8_lossy(&said);
    if !said.starts_with(UNREADABLE) {
        return Response::from_parts(parts, axum::body::Body::from(said.into_owned()));
    }
    let (code, message) = match serde_json::from_slice::<serde_json::Value>(body) {
        Err(error) => (-32700, format!("Parse error: the body is not JSON: {error}")),
        Ok(_) => (
            -32600,
            "Invalid Request: the body is JSON but not a JSON-RPC 2.0 request, notification or response (an object with \"jsonrpc\": \"2.0\" and a \"method\", or a \"result\" or \"error\" with an \"id\")".to_owned(),
        ),
    };
    json_rpc_error(StatusCode::BAD_REQUEST, code, &message)
}

/// A JSON-RPC error response with `status`, for a request whose id is not
/// known (`null`).
fn json_rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": code, "message": message},
    });
    json_response(status, &error)
}

/// `body` as a JSON response with `status`.
fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Whether a JSON-RPC body is an `initialize` request (or a batch with
/// one).
fn is_initialize(body: &[u8]) -> bool {
    let is_one = |message: &serde_json::Value| message["method"] == "initialize";
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(serde_json::Value::Array(batch)) => batch.iter().any(is_one),
        Ok(message) => is_one(&message),
        Err(_) => false,
    }
}

/// The bearer token of a request's `Authorization`, if any.
fn bearer_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, presented)| presented.trim().to_owned())
}

/// The `Mcp-Session-Id` of a request or response.
fn session_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("mcp-session-id")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// Which identity opened each session, so that no other can use it. Kept
/// as digests: the map holds no token.
#[derive(Default)]
struct SessionOwners {
    owners: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// Sessions being opened, by identity digest.
    opening: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
    /// Requests in flight on sessions, by identity digest.
    in_flight: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
}

/// A count by identity digest, one of it held until dropped.
struct Counted {
    digest: u64,
    counts: Arc<std::sync::Mutex<std::collections::HashMap<u64, usize>>>,
}

/// A session being opened for an identity, counted until dropped.
struct Opening(Counted);

impl Opening {
    /// How many sessions of the identity are being opened, others than
    /// this one.
    fn pending(&self) -> usize {
        crate::sync::lock(&self.0.counts)
            .get(&self.0.digest)
            .map_or(0, |count| count - 1)
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        let mut counts = crate::sync::lock(&self.counts);
        if let Some(count) = counts.get_mut(&self.digest) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.digest);
            }
        }
    }
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

    /// Records `session`'s owner, forgetting sessions that ended on their
    /// own (idle) since the last one opened.
    fn open(&self, session: String, identity: &str, open: &McpSessions) {
        let mut owners = crate::sync::lock(&self.owners);
        owners.retain(|session, _| open.contains(session));
        owners.insert(session, Self::digest(identity));
    }

    /// One more request of `identity` in flight, or `None` at `limit`.
    fn in_flight(&self, identity: &str, limit: usize) -> Option<Counted> {
        let digest = Self::digest(identity);
        let mut counts = crate::sync::lock(&self.in_flight);
        let count = counts.entry(digest).or_default();
        if *count >= limit.max(1) {
            return None;
        }
        *count += 1;
        Some(Counted {
            digest,
            counts: self.in_flight.clone(),
        })
    }

    /// Counts a session of `identity` as being opened.
    fn begin_opening(&self, identity: &str) -> Opening {
        let digest = Self::digest(identity);
        *crate::sync::lock(&self.opening).entry(digest).or_default() += 1;
        Opening(Counted {
            digest,
            counts: self.opening.clone(),
        })
    }

    /// The open sessions `identity` opened.
    fn owned_by(&self, identity: &str, open: &McpSessions) -> Vec<String> {
        let digest = Self::digest(identity);
        crate::sync::lock(&self.owners)
            .iter()
            .filter(|(session, owner)| **owner == digest && open.contains(session))
            .map(|(session, _)| session.clone())
            .collect()
    }

    /// Whether `session` may be used by `identity`: it was opened by it,
    /// or it is not one this server opened (rmcp answers for those).
    fn belongs(&self, session: &str, identity: &str) -> bool {
        crate::sync::lock(&self.owners)
            .get(session)
            .is_none_or(|owner| *owner == Self::digest(identity))
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
    serve_server(McpServer::new(runtime)?, addr, options).await
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
/// completes. Then no connection is taken, every session ends, and calls
/// still running are cancelled (their tools see their tokens); the
/// function returns once the connections have closed, or 10 s later with
/// those left cut.
pub async fn serve_http_until(
    runtime: ToolRuntime,
    listener: tokio::net::TcpListener,
    options: &HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), McpServeError> {
    serve_server_until(McpServer::new(runtime)?, listener, options, shutdown).await
}

/// [`serve_http`] of a server set up as one likes (its name, instructions
/// and logging, as [`McpServer::serve_stdio`] serves it), at
/// `http://{addr}/mcp`, until the process ends.
pub async fn serve_server(
    server: McpServer,
    addr: SocketAddr,
    options: &HttpOptions,
) -> Result<(), McpServeError> {
    let listener = listen(addr).await?;
    serve_server_until(server, listener, options, std::future::pending()).await
}

/// [`serve_http_until`] of a server set up as one likes: `server` at `/mcp`
/// on `listener` until `shutdown` completes.
pub async fn serve_server_until(
    server: McpServer,
    listener: tokio::net::TcpListener,
    options: &HttpOptions,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), McpServeError> {
    // Open sessions' streams would hold the graceful shutdown for ever:
    // they end with it.
    let stop = CancellationToken::new();
    let app = router_until(server, "/mcp", options, stop.clone());
    let connections = Arc::new(tokio::sync::Semaphore::new(options.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let builder = connection_builder(options);
    let mut tasks = tokio::task::JoinSet::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, remote) = tokio::select! {
            () = &mut shutdown => break,
            // Connections that ended are reaped as they end.
            Some(_) = tasks.join_next(), if !tasks.is_empty() => continue,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                // One connection's trouble: the next is taken at once.
                Err(error) if matches!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionAborted
                        | std::io::ErrorKind::ConnectionReset
                        | std::io::ErrorKind::ConnectionRefused
                ) => continue,
                Err(error) => {
                    // Out of file descriptors, say: the listener stays
                    // good; a pause keeps a lasting shortage from spinning.
                    tracing::warn!("accepting an MCP connection failed: {error}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = connections.clone().try_acquire_owned() else {
            tracing::debug!(%remote, "an MCP connection past max_connections was closed");
            continue;
        };
        let connection = builder.serve_connection(
            hyper_util::rt::TokioIo::new(stream),
            hyper_util::service::TowerToHyperService::new(app.clone()),
        );
        let connection = graceful.watch(connection);
        tasks.spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%remote, "an MCP connection ended: {error}");
            }
            drop(permit);
        });
    }
    // New connections are refused, not left in the backlog.
    drop(listener);
    stop.cancel();
    // A client that stops reading would hold its connection's last write
    // for ever: the drain is bounded, then what is left is cut.
    if tokio::time::timeout(SHUTDOWN_GRACE, graceful.shutdown())
        .await
        .is_err()
    {
        tasks.abort_all();
    }
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// How long [`serve_server_until`] waits for connections to end once it
/// shuts down, before it cuts them.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How each connection of [`serve_server_until`] is served: HTTP/1.1, its
/// header timer started as the connection opens (so one that sends
/// nothing is closed too) and again after each response (so an idle one
/// is). HTTP/2 would first read the connection's opening bytes with no
/// timeout at all.
fn connection_builder(options: &HttpOptions) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(options.header_read_timeout);
    builder
}

async fn listen(addr: SocketAddr) -> Result<tokio::net::TcpListener, McpServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|error| McpServeError::new(format!("cannot listen on {addr}: {error}")))
}

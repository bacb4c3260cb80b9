//! How the MCP HTTP endpoint is guarded and set up ([`HttpOptions`]), what
//! it publishes for OAuth ([`ProtectedResource`]), and the small pieces the
//! router and its guard share.

use std::sync::Arc;
use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

/// How long a client waits before reconnecting a broken stream, as the
/// priming events tell it.
pub(super) const SSE_RETRY: Duration = Duration::from_secs(3);

/// Who a request's credential names, as [`router`](crate::mcp::http::router)'s guard found it: in
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
    /// checked by [`router`](crate::mcp::http::router). For other schemes, mount [`service`](crate::mcp::http::service) behind
    /// your own axum middleware.
    pub bearer_token: Option<String>,
    /// A check of the bearer token a request carries (several tokens, a
    /// signed token, a lookup), run by [`router`](crate::mcp::http::router) besides
    /// [`bearer_token`](Self::bearer_token): a request passes when it
    /// carries a token both accept. Set with
    /// [`bearer_check`](Self::bearer_check).
    pub bearer_check: Option<BearerCheck>,
    /// Who a bearer token names (a token's subject), or `None` to refuse
    /// it, run by [`router`](crate::mcp::http::router) after the token and the check. A session is
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
    /// bounds it. Applied by [`serve`](crate::mcp::http::serve) (HTTP/1.1, which every MCP client
    /// speaks).
    pub header_read_timeout: Option<Duration>,
    /// How long a client may take to send a request's body: past it, 408.
    /// Default 30 s. Applied by [`router`](crate::mcp::http::router).
    pub body_read_timeout: Option<Duration>,
    /// The most connections served at once by [`serve`](crate::mcp::http::serve) (at least one):
    /// one past it is closed at once, and
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

/// What [`router`](crate::mcp::http::router) publishes as OAuth 2.0 protected-resource metadata
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
    pub(super) fn metadata_location(&self) -> (String, String) {
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

    pub(super) fn document(&self) -> serde_json::Value {
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
    pub(super) fn is_guarded(&self) -> bool {
        self.bearer_token.is_some() || self.bearer_check.is_some() || self.bearer_identity.is_some()
    }

    /// Whether tokens name identities of their own (a check or a mapping
    /// of tokens), as the per-identity session cap needs.
    pub(super) fn names_identities(&self) -> bool {
        self.bearer_check.is_some() || self.bearer_identity.is_some()
    }

    /// Who a request carrying `presented` (its bearer token, if any) is,
    /// or `None` when it may not pass. Unguarded, everyone is `""`.
    pub(super) fn identity(&self, presented: Option<&str>) -> Option<String> {
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

/// `body` as a JSON response with `status`.
pub(super) fn json_response(status: StatusCode, body: &serde_json::Value) -> Response {
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
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

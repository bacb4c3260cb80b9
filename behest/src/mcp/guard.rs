//! What [`router`](super::http::router) checks of each request before rmcp
//! sees it, as a stack of small layers, outermost first:
//!
//! 1. [`authenticate`]: the bearer token names an identity, or 401;
//! 2. [`read_body`]: a POST's body read once, within its size and time
//!    limits (413, 408, 400); rmcp's 415 for a body it cannot read becomes
//!    JSON-RPC's parse error;
//! 3. [`check_session`]: a session answers only the identity that opened
//!    it (404 for any other, and for one that ended); its end is recorded,
//!    and a `DELETE` answers 204;
//! 4. [`limit_in_flight`]: an identity's requests in flight, up to its
//!    limit (429);
//! 5. [`admit_session`]: a new session, within the identity's cap (its
//!    longest-idle sessions ended to make room, else 429) and the server's
//!    (503), recorded as its identity's.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use rmcp::model::ProtocolVersion;

use super::options::{json_response, CallerIdentity, HttpOptions};
use super::owners::{Opening, SessionOwners};
use super::sessions::{McpSessions, McpSessionsError};

/// What the layers share: the endpoint's options, its sessions, and who
/// owns them.
pub(super) struct Guard {
    pub(super) options: HttpOptions,
    pub(super) sessions: Arc<McpSessions>,
    pub(super) owners: SessionOwners,
}

/// The guard's state, as each layer gets it.
pub(super) type Guarded = State<Arc<Guard>>;

/// Who the request's credential names (the same for every request of an
/// unguarded endpoint), for the layers inside [`authenticate`].
#[derive(Clone)]
struct Identity(String);

/// A POST's body, as [`read_body`] read it.
#[derive(Clone)]
struct ReadBody(Bytes);

/// Layer 1: The bearer token names an identity, or the request is refused 401.
pub(super) async fn authenticate(
    State(guard): Guarded,
    mut request: Request,
    next: Next,
) -> Response {
    let presented = bearer_of(request.headers());
    let Some(identity) = guard.options.identity(presented.as_deref()) else {
        return guard.unauthorized(presented.is_some());
    };
    if guard.options.is_guarded() {
        // For what binds to who made it beyond a session: a call of
        // protocol 2026-07-28 waiting for its client's answers.
        request
            .extensions_mut()
            .insert(CallerIdentity(identity.clone()));
    }
    request.extensions_mut().insert(Identity(identity));
    next.run(request).await
}

/// Layer 2: A POST's body, read here once within its limits: to refuse a new
/// session past the cap, and to tell what was wrong with a body rmcp cannot
/// read.
pub(super) async fn read_body(State(guard): Guarded, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, sent) = request.into_parts();
    let reading = axum::body::to_bytes(sent, guard.options.max_body_bytes);
    let read = match guard.options.body_read_timeout {
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
    let mut request = Request::from_parts(parts, axum::body::Body::from(bytes.clone()));
    request.extensions_mut().insert(ReadBody(bytes.clone()));
    let response = next.run(request).await;
    if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE {
        return unreadable_message(response, &bytes).await;
    }
    response
}

/// Layer 3: A session answers only the identity that opened it: another is told
/// it does not exist, and changes nothing (the spec's security notes); an
/// ended session does not exist either. A session ended here is
/// forgotten.
pub(super) async fn check_session(State(guard): Guarded, request: Request, next: Next) -> Response {
    let identity = identity_of(&request);
    let guarded = guard.options.is_guarded();
    let session = session_id(request.headers());
    let method = request.method().clone();
    if let Some(session) = &session {
        let owned = !guarded || guard.owners.belongs(session, &identity);
        if !owned || (method == Method::DELETE && !guard.sessions.contains(session)) {
            return StatusCode::NOT_FOUND.into_response();
        }
        // In use: not the longest idle while its request is on its way.
        guard.sessions.touch(session);
    }
    let mut response = next.run(request).await;
    match &session {
        // The session ended (idle) between rmcp's look and its use.
        Some(session)
            if response.status() == StatusCode::INTERNAL_SERVER_ERROR
                && !guard.sessions.contains(session) =>
        {
            return StatusCode::NOT_FOUND.into_response();
        }
        Some(ended) if method == Method::DELETE && response.status().is_success() => {
            guard.owners.end(ended);
            // rmcp says 202; a DELETE is done, not accepted for later.
            *response.status_mut() = StatusCode::NO_CONTENT;
        }
        _ => {}
    }
    response
}

/// Layer 4: An identity's requests in flight (on sessions, and those of protocol
/// 2026-07-28, which has none), counted until the answer's body ends, up to
/// its limit.
pub(super) async fn limit_in_flight(
    State(guard): Guarded,
    request: Request,
    next: Next,
) -> Response {
    let counted = request.method() == Method::POST
        && guard.options.names_identities()
        && (session_id(request.headers()).is_some() || sessionless(request.headers()));
    if !counted {
        return next.run(request).await;
    }
    let identity = identity_of(&request);
    let limit = guard.options.max_in_flight_per_identity;
    let Some(slot) = guard.owners.in_flight(&identity, limit) else {
        let message = format!(
            "this credential has its limit of {} requests in flight; retry when one has its answer",
            limit.max(1)
        );
        let mut refused = json_rpc_error(StatusCode::TOO_MANY_REQUESTS, -32000, &message);
        refused
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return refused;
    };
    use http_body_util::BodyExt;
    let (parts, body) = next.run(request).await.into_parts();
    let body = body.map_frame(move |frame| {
        // The slot goes with the body: when its stream ends.
        let _held = &slot;
        frame
    });
    Response::from_parts(parts, axum::body::Body::new(body))
}

/// Layer 5: A request that opens a session (an `initialize` without one) is let
/// in within the identity's cap and the server's; other requests without a
/// session (of protocols that need none) pass.
pub(super) async fn admit_session(
    State(guard): Guarded,
    mut request: Request,
    next: Next,
) -> Response {
    // The last layer: what the layers passed along stays here, not in
    // rmcp's copy of the request (a call's context keeps it while it runs).
    let body = request.extensions_mut().remove::<ReadBody>();
    let identity = request
        .extensions_mut()
        .remove::<Identity>()
        .map(|identity| identity.0)
        .unwrap_or_default();
    let no_session = session_id(request.headers()).is_none();
    let sessionless = sessionless(request.headers());
    let opens =
        no_session && !guard.options.stateless && body.is_some_and(|body| is_initialize(&body.0));
    // Held until the answer: a session this request opens counts against
    // its identity while it is being opened.
    let mut _opening = None;
    if opens {
        if guard.options.names_identities() {
            match guard.make_room(&identity).await {
                Ok(opening) => _opening = Some(opening),
                Err(refused) => return refused,
            }
        }
        if guard.sessions.is_full() {
            return guard.full();
        }
    }
    let response = next.run(request).await;
    // The session opened is its identity's before the place held for it
    // while it opened goes: a request racing this one counts one or the
    // other.
    if no_session && guard.options.is_guarded() {
        if let Some(opened) = session_id(response.headers()) {
            guard.owners.open(opened, &identity, &guard.sessions);
        }
    }
    // The cap was reached by a request racing this one (an `initialize`: a
    // request of 2026-07-28 opens no session).
    if response.status() == StatusCode::INTERNAL_SERVER_ERROR
        && no_session
        && !sessionless
        && guard.sessions.is_full()
    {
        return guard.full();
    }
    response
}

impl Guard {
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

/// The identity [`authenticate`] found.
fn identity_of(request: &Request) -> String {
    request
        .extensions()
        .get::<Identity>()
        .map(|identity| identity.0.clone())
        .unwrap_or_default()
}

/// Whether a request is of a protocol that has no sessions (2026-07-28 on).
fn sessionless(headers: &HeaderMap) -> bool {
    headers
        .get("mcp-protocol-version")
        .and_then(|version| version.to_str().ok())
        .is_some_and(|version| version >= ProtocolVersion::NO_INITIALIZE.as_str())
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

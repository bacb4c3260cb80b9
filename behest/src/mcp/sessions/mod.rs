//! The HTTP sessions behind [`router`](super::http::router): rmcp's
//! `LocalSessionManager` runs each session's worker; this manager adds what
//! real clients need of it.
//!
//! - **Idle expiry that waits for work.** rmcp's own timer counts only the
//!   session's events, so a silent ten-minute call or a client holding its
//!   notification stream open was cut at five. Here a session is idle only
//!   with no call in flight and no stream open, and ends after
//!   [`idle_timeout`](super::http::HttpOptions::idle_timeout) of that.
//! - **A cap on sessions**: each `initialize` holds a worker.
//! - **Priming events by version.** An event with an id and empty data
//!   lets a 2025-11-25 client resume; clients on older versions fail to
//!   parse it, so they never get one.
//! - **Answers kept for resumption.** rmcp drops a request's stream the
//!   moment its answer is sent, delivered or not. Each request's events are
//!   copied into a [`StreamLog`] here, which a client resuming with
//!   `Last-Event-ID` reads from; an answer nobody has read is kept until it
//!   is read or the session ends.
//! - **A byte budget for what a session keeps.** The logs of one session
//!   hold at most [`max_session_bytes`](super::http::HttpOptions::max_session_bytes)
//!   of events: past it, answers already read go first, then the oldest
//!   notifications of calls still running, then the oldest answers nobody
//!   has read. rmcp's own copies of finished requests are not kept, since
//!   these logs serve every resumption.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage, ServerResult};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use tokio::time::Instant;

use crate::sync::lock;

mod session;
mod stream_log;

pub use session::SessionTransport;
use session::{expire, Session, StreamGuard};
use stream_log::{defines_priming, request_of};

/// How many events one request's log keeps: past that its oldest (progress)
/// go, never its answer, which comes last.
const LOG_EVENTS: usize = 1024;
/// How long a log whose answer was handed to a client stays for a client
/// whose connection broke as the answer went out.
const DELIVERED_GRACE: Duration = Duration::from_secs(10);
/// How often a session's logs are swept of those past their grace.
const SWEEP_EVERY: Duration = Duration::from_secs(1);
/// How many answered logs nobody has read one session keeps; past that the
/// oldest goes, with a warning.
const UNREAD_ANSWERS: usize = 1024;

/// The limits of [`McpSessions`], from [`HttpOptions`](super::http::HttpOptions).
#[derive(Clone, Debug)]
pub(crate) struct SessionLimits {
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) max_sessions: usize,
    pub(crate) sse_retry: Duration,
    pub(crate) max_session_bytes: usize,
}

/// behest's session manager for MCP over streamable HTTP (see the module
/// docs of [`http`](super::http)): rmcp's sessions with idle expiry that
/// never cuts a call in flight, a cap on their number, priming events only
/// for clients whose protocol defines them, and answers kept until a
/// resuming client reads them.
pub struct McpSessions {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for McpSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpSessions")
            .field("open", &self.len())
            .field("limits", &self.shared.limits)
            .finish()
    }
}

struct Shared {
    inner: LocalSessionManager,
    sessions: Mutex<HashMap<SessionId, Arc<Session>>>,
    limits: SessionLimits,
}

/// Why a session could not be made or used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpSessionsError {
    /// [`max_sessions`](super::http::HttpOptions::max_sessions) are open.
    #[error("the server holds its limit of {0} sessions; end one (DELETE) or retry later")]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Session(#[from] LocalSessionManagerError),
}

impl McpSessions {
    pub(crate) fn new(limits: SessionLimits) -> Self {
        let mut inner = LocalSessionManager::default();
        // Expiry is this manager's; the worker's timer would cut calls.
        let mut config = SessionConfig::default();
        config.keep_alive = None;
        config.sse_retry = Some(limits.sse_retry);
        // A finished request's events are in this manager's logs, under
        // their byte budget; rmcp's copy would be a second, unbounded one.
        config.completed_cache_ttl = Duration::ZERO;
        inner.session_config = config;
        Self {
            shared: Arc::new(Shared {
                inner,
                sessions: Mutex::default(),
                limits,
            }),
        }
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        lock(&self.shared.sessions).len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a new session would pass the cap.
    pub(crate) fn is_full(&self) -> bool {
        self.len() >= self.shared.limits.max_sessions
    }

    /// Whether `id` names an open session.
    pub(crate) fn contains(&self, id: &str) -> bool {
        lock(&self.shared.sessions).contains_key(id)
    }

    /// When session `id` was last busy or seen, if it is idle now (no call
    /// in flight, no stream open); `None` while it is busy, or ended.
    pub(crate) fn idle_since(&self, id: &str) -> Option<Instant> {
        let session = lock(&self.shared.sessions).get(id).cloned()?;
        let activity = lock(&session.activity);
        (!activity.is_busy()).then_some(activity.last_seen)
    }

    /// Counts session `id` as seen now.
    pub(crate) fn touch(&self, id: &str) {
        if let Some(session) = lock(&self.shared.sessions).get(id).cloned() {
            session.touch();
        }
    }

    /// Ends session `id`, as its client's `DELETE` would, if it has been
    /// idle since `seen` (what [`idle_since`](Self::idle_since) said):
    /// whether it ended.
    pub(crate) async fn end_if_idle(&self, id: &str, seen: Instant) -> bool {
        {
            let mut sessions = lock(&self.shared.sessions);
            let Some(session) = sessions.get(id).cloned() else {
                return false;
            };
            let activity = lock(&session.activity);
            if activity.is_busy() || activity.last_seen != seen {
                return false;
            }
            // Gone from the map while still idle: no request finds it now.
            sessions.remove(id);
            session.ended.cancel();
        }
        if let Err(error) = self.shared.inner.close_session(&SessionId::from(id)).await {
            tracing::debug!("ending MCP session {id}: {error}");
        }
        true
    }

    /// The session `id`, with a guard counting a stream of it as open.
    fn stream_of(&self, id: &SessionId) -> Result<(Arc<Session>, StreamGuard), McpSessionsError> {
        let session = self
            .session(id)
            .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
        let guard = session.stream_guard();
        Ok((session, guard))
    }

    fn session(&self, id: &SessionId) -> Option<Arc<Session>> {
        let session = lock(&self.shared.sessions).get(id).cloned();
        if let Some(session) = &session {
            session.touch();
        }
        session
    }
}

impl Shared {
    /// Ends `id`: forgotten here, closed in rmcp.
    async fn end(&self, id: &SessionId) -> Result<(), LocalSessionManagerError> {
        if let Some(session) = lock(&self.sessions).remove(id) {
            session.ended.cancel();
        }
        self.inner.close_session(id).await
    }
}

impl SessionManager for McpSessions {
    type Error = McpSessionsError;
    type Transport = SessionTransport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let max = self.shared.limits.max_sessions;
        if self.is_full() {
            return Err(McpSessionsError::Full(max));
        }
        let (id, inner) = self.shared.inner.create_session().await?;
        let session = Arc::new(Session::new(self.shared.limits.max_session_bytes));
        let admitted = {
            let mut sessions = lock(&self.shared.sessions);
            let admitted = sessions.len() < max;
            if admitted {
                sessions.insert(id.clone(), session.clone());
            }
            admitted
        };
        if !admitted {
            let _ = self.shared.inner.close_session(&id).await;
            return Err(McpSessionsError::Full(max));
        }
        tokio::spawn(expire(
            Arc::downgrade(&self.shared),
            id.clone(),
            session.clone(),
            self.shared.limits.idle_timeout,
        ));
        Ok((id, SessionTransport { inner, session }))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        let answer = self.shared.inner.initialize_session(id, message).await?;
        if let (Some(session), ServerJsonRpcMessage::Response(response)) =
            (self.session(id), &answer)
        {
            if let ServerResult::InitializeResult(result) = &response.result {
                let primes = defines_priming(&result.protocol_version);
                session.primes.store(primes, Ordering::Relaxed);
            }
        }
        Ok(answer)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.session(id).is_some())
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        Ok(self.shared.end(id).await?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (session, guard) = self.stream_of(id)?;
        let mut events = Box::pin(self.shared.inner.create_stream(id, message).await?);
        // The first event (the priming one) names the request's stream.
        let Some(first) = events.next().await else {
            return Ok(futures::stream::empty().left_stream());
        };
        let log = session.new_log();
        if let Some(request) = first.event_id.as_deref().and_then(request_of) {
            session.keep_log(request, log.clone());
        }
        session.push(&log, first);
        let pump = log.clone();
        let budget = session.clone();
        tokio::spawn(async move {
            while let Some(event) = events.next().await {
                budget.push(&pump, event);
            }
            pump.end();
        });
        let primes = session.primes.load(Ordering::Relaxed);
        Ok(log.reader(0, guard, primes).right_stream())
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.session(id);
        Ok(self.shared.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (session, guard) = self.stream_of(id)?;
        let events = self.shared.inner.create_standalone_stream(id).await?;
        let priming = session
            .primes
            .load(Ordering::Relaxed)
            .then(|| ServerSseMessage::priming("0", self.shared.limits.sse_retry));
        Ok(futures::stream::iter(priming)
            .chain(events)
            .map(move |event| guard.holding(event)))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let (session, guard) = self.stream_of(id)?;
        let primes = session.primes.load(Ordering::Relaxed);
        let log = request_of(&last_event_id).and_then(|request| session.log(request));
        if let Some(log) = log {
            let position = log.position_after(&last_event_id);
            return Ok(log.reader(position, guard, primes).left_stream());
        }
        let events = self.shared.inner.resume(id, last_event_id).await?;
        Ok(events
            .filter(move |event| std::future::ready(primes || event.message.is_some()))
            .map(move |event| guard.holding(event))
            .right_stream())
    }

    async fn restore_session(
        &self,
        _id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        // Sessions live in this process only.
        Ok(RestoreOutcome::NotSupported)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::RequestId;

    use super::stream_log::StreamLog;

    use super::*;

    fn event(index: usize, message: serde_json::Value) -> ServerSseMessage {
        let message: ServerJsonRpcMessage = serde_json::from_value(message).unwrap();
        ServerSseMessage::new(format!("{index}/0"), message)
    }

    /// A full log drops its oldest notifications, never the request to the
    /// client nor the answer, and a reader resumed after an event gets what
    /// followed it.
    #[tokio::test]
    async fn a_full_log_keeps_requests_and_answers_and_resumes_after_an_event() {
        let log = Arc::new(StreamLog::new(Arc::default()));
        let progress = |n: usize| {
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": n}})
        };
        log.push(event(0, progress(0)));
        log.push(event(
            1,
            serde_json::json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
        ));
        for n in 2..3 * LOG_EVENTS {
            log.push(event(n, progress(n)));
        }
        let last = 3 * LOG_EVENTS;
        log.push(event(
            last,
            serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        ));
        log.end();
        let kept: Vec<String> = {
            let state = lock(&log.state);
            assert_eq!(state.events.len(), LOG_EVENTS);
            state
                .events
                .iter()
                .map(|kept| kept.event.event_id.clone().unwrap())
                .collect()
        };
        assert_eq!(kept[0], "1/0", "the request to the client stays");
        assert_eq!(kept.last().unwrap(), &format!("{last}/0"));
        // Resumed after the request: the newest progress kept, then the answer.
        let (position, next) = log.read(log.position_after("1/0")).unwrap();
        assert_eq!(next.event_id.as_deref(), Some(kept[1].as_str()));
        assert!(position > 1);
        // Resumed after a notification since dropped: what followed it, not
        // the request the client already had.
        let (_, next) = log.read(log.position_after("5/0")).unwrap();
        assert_eq!(next.event_id.as_deref(), Some(kept[1].as_str()));
        // Read to the end: the answer, then the end; then it is delivered.
        let (at, answer) = log.read(last).unwrap();
        assert_eq!(at, last);
        assert_eq!(answer.event_id, Some(format!("{last}/0")));
        assert!(log.is_unread_answer());
        assert!(log.read(last + 1).unwrap_err());
        assert!(!log.is_unread_answer());
    }

    /// A session idle for a timeout too long to add to a clock never
    /// expires, and does not panic.
    #[test]
    fn an_idle_timeout_too_long_to_add_is_no_deadline() {
        let session = Session::new(usize::MAX);
        assert_eq!(session.idle_deadline(Duration::MAX), None);
        assert!(session.idle_deadline(Duration::from_secs(1)).is_some());
    }

    /// Two requests with one id: the session stays busy until both are
    /// answered.
    #[test]
    fn a_reused_request_id_keeps_the_session_busy_until_both_are_answered() {
        let session = Session::new(usize::MAX);
        let id = RequestId::Number(3);
        for _ in 0..2 {
            session.update(|activity| *activity.calls.entry(id.clone()).or_default() += 1);
        }
        session.update(|activity| activity.settle(&id));
        assert_eq!(session.idle_deadline(Duration::from_secs(1)), None);
        session.update(|activity| activity.settle(&id));
        assert!(session.idle_deadline(Duration::from_secs(1)).is_some());
    }

    fn answer(request: u64, bytes: usize) -> ServerSseMessage {
        let message: ServerJsonRpcMessage = serde_json::from_value(serde_json::json!({
            "jsonrpc": "2.0", "id": request,
            "result": {"content": [{"type": "text", "text": "x".repeat(bytes)}]}
        }))
        .unwrap();
        ServerSseMessage::new(format!("0/{request}"), message)
    }

    /// Keeps for session `session` one ended log of request `request`
    /// holding an answer of about `bytes`.
    fn answered(session: &Session, request: u64, bytes: usize) -> Arc<StreamLog> {
        let log = session.new_log();
        session.keep_log(request, log.clone());
        session.push(&log, answer(request, bytes));
        log.end();
        log
    }

    /// A session past its byte budget drops the answers already read
    /// first, then the notifications of calls still running, then the
    /// oldest unread answers, and never holds more than its budget once no
    /// stream reads what it dropped.
    #[test]
    fn a_session_past_its_budget_sheds_read_answers_then_the_oldest_unread() {
        let session = Session::new(10_000);
        let read = answered(&session, 1, 3_000);
        // Read to its end: delivered.
        assert!(read.read(0).is_ok());
        assert!(read.read(1).unwrap_err());
        drop(read);
        answered(&session, 2, 3_000);
        answered(&session, 3, 3_000);
        assert!(session.log(1).is_some(), "within the budget nothing goes");
        answered(&session, 4, 3_000);
        assert!(session.log(1).is_none(), "the answer read goes first");
        assert!(session.log(2).is_some());
        answered(&session, 5, 3_000);
        assert!(session.log(2).is_none(), "then the oldest unread");
        assert!(session.log(3).is_some() && session.log(5).is_some());
        assert!(session.kept.load(Ordering::Relaxed) <= 10_000);

        // A running call's notifications go before anything it answers.
        let running = session.new_log();
        session.keep_log(6, running.clone());
        let progress = |n: usize| {
            event(
                n,
                serde_json::json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "y".repeat(1_000)}}),
            )
        };
        for n in 0..8 {
            session.push(&running, progress(n));
        }
        assert!(session.kept.load(Ordering::Relaxed) <= 10_000);
        let kept: Vec<u64> = {
            let mut kept: Vec<u64> = lock(&session.logs).by_request.keys().copied().collect();
            kept.sort_unstable();
            kept
        };
        assert_eq!(kept, [3, 4, 5, 6], "no answer went for a notification");
        assert!(running.bytes() < 3_000, "its oldest notifications went");
        // An answer let go while a stream still reads it stops counting at
        // once, so one more answer costs no other.
        let held = session.log(3).unwrap();
        answered(&session, 7, 3_000);
        assert!(session.log(3).is_none());
        assert!(session.kept.load(Ordering::Relaxed) <= 10_000);
        assert!(session.log(4).is_some() && session.log(5).is_some());
        // Everything dropped is uncounted.
        lock(&session.logs).by_request.clear();
        drop(running);
        drop(held);
        assert_eq!(session.kept.load(Ordering::Relaxed), 0);
    }
}

//! One session: its activity (calls in flight, streams open), its logs,
//! its idle expiry, and the transport its worker speaks through.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{ClientJsonRpcMessage, ClientNotification, RequestId, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionWorker;
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use rmcp::transport::{Transport, WorkerTransport};
use rmcp::RoleServer;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::sync::lock;

use super::stream_log::StreamLog;
use super::{Shared, SWEEP_EVERY, UNREAD_ANSWERS};

/// One session's state beside rmcp's worker.
pub(super) struct Session {
    pub(super) activity: Mutex<Activity>,
    /// Woken when the session stops being busy.
    pub(super) quiet: Notify,
    /// Cancelled when the session ends.
    pub(super) ended: CancellationToken,
    /// Whether the client's protocol defines priming events.
    pub(super) primes: AtomicBool,
    pub(super) logs: Mutex<Logs>,
    /// The bytes of events its logs hold, shared with each log.
    pub(super) kept: Arc<AtomicUsize>,
    /// The most bytes its logs may hold.
    pub(super) budget: usize,
}

/// A session's request logs, by rmcp's HTTP request id.
pub(super) struct Logs {
    pub(super) by_request: HashMap<u64, Arc<StreamLog>>,
    pub(super) swept: Instant,
}

pub(super) struct Activity {
    /// Client requests the server has not answered, by id (a client may
    /// reuse one while the first is running).
    pub(super) calls: HashMap<RequestId, usize>,
    /// Streams a client holds open.
    pub(super) streams: usize,
    pub(super) last_seen: Instant,
}

impl Session {
    pub(super) fn new(budget: usize) -> Self {
        Self {
            activity: Mutex::new(Activity {
                calls: HashMap::new(),
                streams: 0,
                last_seen: Instant::now(),
            }),
            quiet: Notify::new(),
            ended: CancellationToken::new(),
            primes: AtomicBool::new(false),
            logs: Mutex::new(Logs {
                by_request: HashMap::new(),
                swept: Instant::now(),
            }),
            kept: Arc::default(),
            budget,
        }
    }

    /// A new log counted against this session's budget.
    pub(super) fn new_log(&self) -> Arc<StreamLog> {
        Arc::new(StreamLog::new(self.kept.clone()))
    }

    /// Adds `event` to `log`, then sheds what the budget cannot hold.
    pub(super) fn push(&self, log: &StreamLog, event: ServerSseMessage) {
        log.push(event);
        if self.kept.load(Ordering::Relaxed) > self.budget {
            self.shed();
        }
    }

    /// Brings the bytes kept back under the budget: answers already read
    /// go first, then the oldest notifications of calls still running,
    /// then the oldest unread answers. A log dropped here is freed
    /// once the stream reading it (if any) ends.
    pub(super) fn shed(&self) {
        let mut logs = lock(&self.logs);
        let mut over = self
            .kept
            .load(Ordering::Relaxed)
            .saturating_sub(self.budget);
        if over == 0 {
            return;
        }
        let mut order: Vec<(u8, u64)> = logs
            .by_request
            .iter()
            .map(|(request, log)| (log.shedding_class(), *request))
            .collect();
        order.sort_unstable();
        let mut unread_dropped = 0usize;
        for (class, request) in order {
            if over == 0 {
                break;
            }
            if class == 1 {
                if let Some(log) = logs.by_request.get(&request) {
                    over = over.saturating_sub(log.shed_notifications(over));
                }
            } else if let Some(log) = logs.by_request.remove(&request) {
                over = over.saturating_sub(log.detach());
                unread_dropped += usize::from(class == 2);
            }
        }
        if unread_dropped > 0 {
            tracing::warn!(
                "an MCP session passed its max_session_bytes of {}; {unread_dropped} answers no client has read were dropped",
                self.budget
            );
        }
    }

    pub(super) fn touch(&self) {
        lock(&self.activity).last_seen = Instant::now();
    }

    /// Changes the activity; wakes the expiry watch if it became idle.
    pub(super) fn update(&self, change: impl FnOnce(&mut Activity)) {
        let mut activity = lock(&self.activity);
        let was_busy = activity.is_busy();
        change(&mut activity);
        activity.last_seen = Instant::now();
        if was_busy && !activity.is_busy() {
            self.quiet.notify_one();
        }
    }

    /// When the session will have idled `idle`, or `None` while busy.
    pub(super) fn idle_deadline(&self, idle: Duration) -> Option<Instant> {
        let activity = lock(&self.activity);
        // A timeout too long to add is no timeout.
        (!activity.is_busy())
            .then(|| activity.last_seen.checked_add(idle))
            .flatten()
    }

    /// A guard counting an open stream until dropped.
    pub(super) fn stream_guard(self: &Arc<Self>) -> StreamGuard {
        self.update(|activity| activity.streams += 1);
        StreamGuard(self.clone())
    }

    /// Keeps `log` for resumption, dropping what no client can want.
    pub(super) fn keep_log(&self, request: u64, log: Arc<StreamLog>) {
        let mut logs = lock(&self.logs);
        let now = Instant::now();
        if now.saturating_duration_since(logs.swept) >= SWEEP_EVERY {
            logs.swept = now;
            logs.by_request.retain(|_, log| {
                let keep = !log.expired(now);
                if !keep {
                    log.detach();
                }
                keep
            });
            let mut unread: Vec<u64> = logs
                .by_request
                .iter()
                .filter(|(_, log)| log.is_unread_answer())
                .map(|(request, _)| *request)
                .collect();
            if unread.len() > UNREAD_ANSWERS {
                unread.sort_unstable();
                let excess = unread.len() - UNREAD_ANSWERS;
                tracing::warn!(
                    "an MCP session holds {} answers no client has read; the oldest {excess} are dropped",
                    unread.len()
                );
                for request in &unread[..excess] {
                    if let Some(log) = logs.by_request.remove(request) {
                        log.detach();
                    }
                }
            }
        }
        logs.by_request.insert(request, log);
    }

    pub(super) fn log(&self, request: u64) -> Option<Arc<StreamLog>> {
        lock(&self.logs).by_request.get(&request).cloned()
    }
}

impl Activity {
    /// One request `id` answered or cancelled.
    pub(super) fn settle(&mut self, id: &RequestId) {
        if let Some(count) = self.calls.get_mut(id) {
            *count -= 1;
            if *count == 0 {
                self.calls.remove(id);
            }
        }
    }

    pub(super) fn is_busy(&self) -> bool {
        !self.calls.is_empty() || self.streams > 0
    }
}

/// Counts one open stream of a session while alive.
pub(super) struct StreamGuard(Arc<Session>);

impl StreamGuard {
    /// `event`, passed through by a stream that holds this guard.
    pub(super) fn holding(&self, event: ServerSseMessage) -> ServerSseMessage {
        event
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0
            .update(|activity| activity.streams = activity.streams.saturating_sub(1));
    }
}

/// Ends the session once it has idled `idle`; forgets it when it ends
/// otherwise.
pub(super) async fn expire(
    shared: Weak<Shared>,
    id: SessionId,
    session: Arc<Session>,
    idle: Option<Duration>,
) {
    loop {
        let deadline = idle.and_then(|idle| session.idle_deadline(idle));
        tokio::select! {
            () = session.ended.cancelled() => break,
            () = session.quiet.notified() => {}
            () = sleep_until(deadline) => {
                let idle = idle.unwrap_or(Duration::MAX);
                if session.idle_deadline(idle).is_some_and(|at| at <= Instant::now()) {
                    tracing::debug!(session = %id, "an idle MCP session ended");
                    if let Some(shared) = shared.upgrade() {
                        let _ = shared.end(&id).await;
                    }
                    return;
                }
            }
        }
    }
    if let Some(shared) = shared.upgrade() {
        lock(&shared.sessions).remove(&id);
    }
}

pub(super) async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// rmcp's session transport, watched for the requests in flight.
pub struct SessionTransport {
    pub(super) inner: WorkerTransport<LocalSessionWorker>,
    pub(super) session: Arc<Session>,
}

impl Drop for SessionTransport {
    fn drop(&mut self) {
        self.session.ended.cancel();
    }
}

impl Transport<RoleServer> for SessionTransport {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            ServerJsonRpcMessage::Response(response) => Some(response.id.clone()),
            ServerJsonRpcMessage::Error(error) => error.id.clone(),
            _ => None,
        };
        if let Some(id) = answered {
            self.session.update(|activity| {
                activity.settle(&id);
            });
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let message = self.inner.receive().await?;
        match &message {
            ClientJsonRpcMessage::Request(request) => {
                let id = request.id.clone();
                self.session.update(|activity| {
                    *activity.calls.entry(id).or_default() += 1;
                });
            }
            // A cancelled request may never be answered.
            ClientJsonRpcMessage::Notification(notification) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                {
                    if let Some(id) = &cancelled.params.request_id {
                        self.session.update(|activity| {
                            activity.settle(id);
                        });
                    }
                }
            }
            _ => {}
        }
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.session.ended.cancel();
        self.inner.close().await
    }
}

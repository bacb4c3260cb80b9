//! Logging to the client: the `tracing` events a tool emits while it runs
//! go to the client that called it as `notifications/message`, at or above
//! the level the client chose: with `logging/setLevel` for the connection,
//! or (protocol 2026-07-28) in each request's `_meta`, for that request.
//!
//! MCP's logging is deprecated by the newest protocol, not by the versions
//! behest serves: the deprecation warnings of rmcp's types are silenced here.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// How many log messages may wait for a slow client; past that new ones
/// are dropped, so a tool logging in a loop cannot grow the server.
const LOG_BACKLOG: usize = 1024;

tokio::task_local! {
    /// The log of the connection whose call is running on this task.
    static CALL_LOG: Arc<ClientLog>;
}

/// How long the answer to a request of protocol 2026-07-28 waits for its
/// log messages to go out first.
const FLUSH_FOR: std::time::Duration = std::time::Duration::from_secs(5);

/// Nothing is sent: the level of a request that named none.
const SILENT: u8 = u8::MAX;

/// One connection's log (or one call's, under protocol 2026-07-28): the
/// level its client chose, and the way to it.
pub(crate) struct ClientLog {
    /// The least severe level sent, as [`rank`].
    least: AtomicU8,
    to_client: Mutex<Option<Relay>>,
}

/// The task that sends a log's messages to one client, in order.
struct Relay {
    sender: mpsc::Sender<LoggingMessageNotificationParam>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    fn to(peer: Peer<RoleServer>) -> Self {
        let (sender, mut messages) = mpsc::channel(LOG_BACKLOG);
        let task = tokio::spawn(async move {
            while let Some(message) = messages.recv().await {
                if peer.notify_logging_message(message).await.is_err() {
                    break;
                }
            }
        });
        Self { sender, task }
    }
}

impl Default for ClientLog {
    fn default() -> Self {
        Self {
            least: AtomicU8::new(rank(LoggingLevel::Info)),
            to_client: Mutex::new(None),
        }
    }
}

impl ClientLog {
    /// Starts sending to `peer`, once: whether this was the first time.
    pub(crate) fn connect(&self, peer: Peer<RoleServer>) -> bool {
        let mut to_client = crate::sync::lock(&self.to_client);
        let first = to_client.is_none();
        if first {
            *to_client = Some(Relay::to(peer));
        }
        first
    }

    /// A log for one request of protocol 2026-07-28, sent to `peer` at
    /// `level` and above; nothing at all without a level, as the protocol
    /// says of a request that names none.
    pub(crate) fn for_request(peer: Peer<RoleServer>, level: Option<LoggingLevel>) -> Arc<Self> {
        let log = Arc::new(Self::default());
        log.retarget(peer, level);
        log
    }

    /// Sends what comes from now on to `peer` at `level` (the next round
    /// of a call under protocol 2026-07-28).
    pub(crate) fn retarget(&self, peer: Peer<RoleServer>, level: Option<LoggingLevel>) {
        self.least
            .store(level.map_or(SILENT, rank), Ordering::Relaxed);
        *crate::sync::lock(&self.to_client) = level.is_some().then(|| Relay::to(peer));
    }

    /// Sends what was logged so far before the answer that ends a request
    /// goes out (its stream ends with it), then stops sending. A client
    /// that stops reading holds the answer back at most [`FLUSH_FOR`].
    pub(crate) async fn flush(&self) {
        let relay = crate::sync::lock(&self.to_client).take();
        if let Some(Relay { sender, mut task }) = relay {
            drop(sender);
            if tokio::time::timeout(FLUSH_FOR, &mut task).await.is_err() {
                task.abort();
            }
        }
    }

    /// Sends messages at `level` and above from now on.
    pub(crate) fn set_level(&self, level: LoggingLevel) {
        self.least.store(rank(level), Ordering::Relaxed);
    }

    /// Runs `call` with this log as the one its events go to.
    pub(crate) async fn scope<F: std::future::Future>(self: &Arc<Self>, call: F) -> F::Output {
        CALL_LOG.scope(self.clone(), call).await
    }

    fn send(&self, event: &tracing::Event<'_>) {
        let level = level_of(*event.metadata().level());
        if rank(level) < self.least.load(Ordering::Relaxed) {
            return;
        }
        let Some(sender) = crate::sync::lock(&self.to_client)
            .as_ref()
            .map(|relay| relay.sender.clone())
        else {
            return;
        };
        let mut fields = Fields::default();
        event.record(&mut fields);
        let data = match (fields.message, fields.others.is_empty()) {
            (Some(message), true) => Value::String(message),
            (message, _) => {
                let mut data = fields.others;
                if let Some(message) = message {
                    data.insert("message".to_owned(), Value::String(message));
                }
                Value::Object(data)
            }
        };
        let mut message = LoggingMessageNotificationParam::new(level, data);
        message.logger = Some(event.metadata().target().to_owned());
        // Full: dropped rather than waited for.
        let _ = sender.try_send(message);
    }
}

/// MCP's levels from least to most severe.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn level_of(level: tracing::Level) -> LoggingLevel {
    match level {
        tracing::Level::ERROR => LoggingLevel::Error,
        tracing::Level::WARN => LoggingLevel::Warning,
        tracing::Level::INFO => LoggingLevel::Info,
        _ => LoggingLevel::Debug,
    }
}

/// An event's fields: its message, and the rest as JSON.
#[derive(Default)]
struct Fields {
    message: Option<String>,
    others: Map<String, Value>,
}

impl tracing::field::Visit for Fields {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }

    fn record_bool(&mut self, field: &tracing::field::Field, value: bool) {
        self.put(field, Value::Bool(value));
    }

    fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
        self.put(field, Value::from(value));
    }

    fn record_u64(&mut self, field: &tracing::field::Field, value: u64) {
        self.put(field, Value::from(value));
    }

    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        self.put(field, Value::from(value));
    }

    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
}

impl Fields {
    fn put(&mut self, field: &tracing::field::Field, value: Value) {
        match (field.name(), value) {
            ("message", Value::String(message)) => self.message = Some(message),
            (name, value) => {
                self.others.insert(name.to_owned(), value);
            }
        }
    }
}

/// A `tracing` layer that sends the events of each MCP tool call to the
/// client that made it (`notifications/message`), at or above the level
/// the client set with `logging/setLevel` (`info` until it does). Add it
/// to your subscriber; events outside MCP calls pass it by. Only the events
/// your subscriber lets through reach it, and only those emitted on the
/// call's own task (not from tasks the tool spawns). That includes the
/// events of libraries the tool uses: a client that asks for `debug` gets
/// theirs too, so give the layer a filter of its own by target when those
/// should stay in the server (`McpLogLayer.with_filter(..)`). Over HTTP the
/// messages travel on the client's notification stream (`GET`), which the
/// SDKs open; stateless HTTP offers no logging. Under protocol 2026-07-28
/// each request names its own level (none: no messages), and the messages
/// travel on that request's stream, before its answer.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
///
/// let subscriber = tracing_subscriber::registry().with(behest::mcp::McpLogLayer);
/// # let _ = subscriber;
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct McpLogLayer;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for McpLogLayer {
    fn on_event(
        &self,
        event: &tracing::Event<'_>,
        _context: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let _ = CALL_LOG.try_with(|log| log.send(event));
    }
}

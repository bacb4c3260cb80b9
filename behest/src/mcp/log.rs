//! Logging to the client: the `tracing` events a tool emits while it runs
//! go to the client that called it as `notifications/message`, at or above
//! the level the client chose with `logging/setLevel`.
//!
//! MCP's logging is deprecated by the newest protocol, not by the versions
//! behest serves: the deprecation warnings of rmcp's types are silenced here.
#![allow(deprecated)]

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};

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

/// One connection's log: the level its client chose, and the way to it.
pub(crate) struct ClientLog {
    /// The least severe level sent, as [`rank`].
    least: AtomicU8,
    to_client: OnceLock<mpsc::Sender<LoggingMessageNotificationParam>>,
}

impl Default for ClientLog {
    fn default() -> Self {
        Self {
            least: AtomicU8::new(rank(LoggingLevel::Info)),
            to_client: OnceLock::new(),
        }
    }
}

impl ClientLog {
    /// Starts sending to `peer`, once: whether this was the first time.
    pub(crate) fn connect(&self, peer: Peer<RoleServer>) -> bool {
        let (sender, mut messages) = mpsc::channel(LOG_BACKLOG);
        let first = self.to_client.set(sender).is_ok();
        if first {
            tokio::spawn(async move {
                while let Some(message) = messages.recv().await {
                    if peer.notify_logging_message(message).await.is_err() {
                        break;
                    }
                }
            });
        }
        first
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
        let Some(to_client) = self.to_client.get() else {
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
        let _ = to_client.try_send(message);
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
/// SDKs open; stateless HTTP offers no logging.
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

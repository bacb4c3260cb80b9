//! The log of one request's events, kept for a client that resumes its
//! stream, within the session's byte budget.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::{Stream, StreamExt};
use rmcp::model::{ProtocolVersion, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::sync::lock;

use super::{DELIVERED_GRACE, LOG_EVENTS};

/// One request's events as rmcp sent them, for whoever reads them: the
/// client's first stream, or the stream it resumes with `Last-Event-ID`.
pub(super) struct StreamLog {
    pub(super) state: Mutex<LogState>,
    /// How many events were ever pushed; readers wait on it.
    pub(super) pushed: watch::Sender<usize>,
    /// The session's count of bytes kept, which this log's events add to.
    pub(super) kept: Arc<AtomicUsize>,
}

/// One event a log keeps.
pub(super) struct Kept {
    /// Its position among all the log's events.
    pub(super) position: usize,
    /// Its size as sent.
    pub(super) bytes: usize,
    pub(super) event: ServerSseMessage,
}

impl Kept {
    pub(super) fn is_notification(&self) -> bool {
        !matches!(
            self.event.message.as_deref(),
            Some(ServerJsonRpcMessage::Request(_) | ServerJsonRpcMessage::Response(_))
        )
    }
}

pub(super) struct LogState {
    /// The events kept, in the order pushed.
    pub(super) events: VecDeque<Kept>,
    /// The sum of their `bytes`.
    pub(super) bytes: usize,
    /// Whether its session no longer keeps it (a stream may still read
    /// it): its bytes are no longer counted against the session's budget.
    pub(super) detached: bool,
    /// How many events were pushed.
    pub(super) pushed: usize,
    pub(super) ended: bool,
    /// When a reader handed out the last event.
    pub(super) delivered: Option<Instant>,
}

impl StreamLog {
    pub(super) fn new(kept: Arc<AtomicUsize>) -> Self {
        Self {
            state: Mutex::new(LogState {
                events: VecDeque::new(),
                bytes: 0,
                detached: false,
                pushed: 0,
                ended: false,
                delivered: None,
            }),
            pushed: watch::Sender::new(0),
            kept,
        }
    }

    /// Adds `event`; a full log first drops its oldest notification (a
    /// progress or log message), never a request to the client or an
    /// answer, unless it holds nothing else.
    pub(super) fn push(&self, event: ServerSseMessage) {
        let bytes = event_bytes(&event);
        let mut state = lock(&self.state);
        if state.events.len() >= LOG_EVENTS {
            let notification = state.events.iter().position(Kept::is_notification);
            self.remove(&mut state, notification.unwrap_or(0));
        }
        let position = state.pushed;
        state.events.push_back(Kept {
            position,
            bytes,
            event,
        });
        state.bytes += bytes;
        if !state.detached {
            self.kept.fetch_add(bytes, Ordering::Relaxed);
        }
        state.pushed += 1;
        let pushed = state.pushed;
        drop(state);
        self.pushed.send_replace(pushed);
    }

    /// Drops the event at `index`, uncounting its bytes.
    pub(super) fn remove(&self, state: &mut LogState, index: usize) -> usize {
        let Some(dropped) = state.events.remove(index) else {
            return 0;
        };
        state.bytes -= dropped.bytes;
        if !state.detached {
            self.kept.fetch_sub(dropped.bytes, Ordering::Relaxed);
        }
        dropped.bytes
    }

    /// The bytes of the events it keeps.
    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        lock(&self.state).bytes
    }

    /// No longer counts its bytes against the session's budget, as its
    /// session has let it go (a stream reading it frees it when it ends):
    /// the bytes it counted until now.
    pub(super) fn detach(&self) -> usize {
        let mut state = lock(&self.state);
        if state.detached {
            return 0;
        }
        state.detached = true;
        self.kept.fetch_sub(state.bytes, Ordering::Relaxed);
        state.bytes
    }

    /// In which order [`Session::shed`] drops it: 0 read to its end, 1 a
    /// call still running (only its notifications go), 2 an answer nobody
    /// has read.
    pub(super) fn shedding_class(&self) -> u8 {
        let state = lock(&self.state);
        match (state.ended, state.delivered) {
            (_, Some(_)) => 0,
            (false, None) => 1,
            (true, None) => 2,
        }
    }

    /// Drops its oldest notifications until `wanted` bytes are freed or
    /// none is left: the bytes freed.
    pub(super) fn shed_notifications(&self, wanted: usize) -> usize {
        let mut state = lock(&self.state);
        let mut freed = 0;
        while freed < wanted {
            let Some(index) = state.events.iter().position(Kept::is_notification) else {
                break;
            };
            freed += self.remove(&mut state, index);
        }
        freed
    }

    pub(super) fn end(&self) {
        lock(&self.state).ended = true;
        self.pushed.send_modify(|_| {});
    }

    pub(super) fn is_unread_answer(&self) -> bool {
        let state = lock(&self.state);
        state.ended && state.delivered.is_none()
    }

    pub(super) fn expired(&self, now: Instant) -> bool {
        lock(&self.state)
            .delivered
            .is_some_and(|at| now.saturating_duration_since(at) >= DELIVERED_GRACE)
    }

    /// The position just after the event `event_id`. rmcp numbers a
    /// request's events from 0 in the order pushed (`index/request`), so
    /// its index is its position, whether it is still kept or not.
    pub(super) fn position_after(&self, event_id: &str) -> usize {
        event_id
            .split_once('/')
            .and_then(|(index, _)| index.parse::<usize>().ok())
            .map_or(0, |index| index.saturating_add(1))
    }

    /// The first event kept at `position` or after, with its position, or
    /// whether the log has ended. A reader past the end of an ended log
    /// has handed out everything: the log is delivered.
    pub(super) fn read(&self, position: usize) -> Result<(usize, ServerSseMessage), bool> {
        let mut state = lock(&self.state);
        let at = state
            .events
            .partition_point(|kept| kept.position < position);
        match state.events.get(at) {
            Some(kept) => Ok((kept.position, kept.event.clone())),
            None => {
                if state.ended && state.delivered.is_none() {
                    state.delivered = Some(Instant::now());
                }
                Err(state.ended)
            }
        }
    }

    /// The events from `position` on, as they come, until the last;
    /// `guard` (the session's count of its open streams) is held as long
    /// as the stream lives.
    pub(super) fn reader<G: Send + Sync + 'static>(
        self: Arc<Self>,
        position: usize,
        guard: G,
        primes: bool,
    ) -> impl Stream<Item = ServerSseMessage> + Send + Sync + 'static {
        let pushed = self.pushed.subscribe();
        futures::stream::unfold(
            (self, position, pushed, guard),
            |(log, position, mut pushed, guard)| async move {
                loop {
                    match log.read(position) {
                        Ok((at, event)) => return Some((event, (log, at + 1, pushed, guard))),
                        Err(true) => return None,
                        Err(false) => {
                            if pushed.changed().await.is_err() {
                                return None;
                            }
                        }
                    }
                }
            },
        )
        .filter(move |event| std::future::ready(primes || event.message.is_some()))
    }
}

impl Drop for StreamLog {
    fn drop(&mut self) {
        let state = self
            .state
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !state.detached {
            self.kept.fetch_sub(state.bytes, Ordering::Relaxed);
        }
    }
}

/// The size of `event` as sent: its message's JSON and its id.
pub(super) fn event_bytes(event: &ServerSseMessage) -> usize {
    /// Counts what is written, keeping none of it.
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    if let Some(message) = &event.message {
        // Writing to a counter fails only if the message cannot be
        // serialized, and then it is never sent either.
        let _ = serde_json::to_writer(&mut count, message.as_ref());
    }
    count.0 + event.event_id.as_ref().map_or(0, String::len)
}

/// The HTTP request id in rmcp's event id `index/request`.
pub(super) fn request_of(event_id: &str) -> Option<u64> {
    event_id.split_once('/')?.1.parse().ok()
}

/// Whether a client on `version` parses priming events (2025-11-25 on).
pub(super) fn defines_priming(version: &ProtocolVersion) -> bool {
    *version >= ProtocolVersion::V_2025_11_25
}

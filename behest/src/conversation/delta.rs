//! A model's turn as it streams in.

use std::fmt;
use std::sync::Arc;

/// A piece of the model's turn as it streams in, before the whole message.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ModelDelta {
    /// More of the answer's text.
    Text(String),
    /// More of the model's visible reasoning (thinking text, a summary).
    Reasoning(String),
    /// More of a tool call: the call at `index` of the turn, its id and name
    /// when this piece carries them, and a fragment of its arguments' JSON.
    ToolCall {
        /// The call's position in the turn.
        index: usize,
        /// The call's id, on the piece that carries it.
        id: Option<String>,
        /// The tool's name, on the piece that carries it.
        name: Option<String>,
        /// A fragment of the arguments' JSON text.
        arguments: String,
    },
    /// The pieces shown so far are void: the stream failed and the turn is
    /// asked for again, from its start.
    Restart,
    /// A request of the turn failed and is asked again after `wait_ms`
    /// (the client's `RetryPolicy` allowing, with the `models` feature):
    /// told for a viewer, changing nothing shown.
    Retry {
        /// Which retry this is, from 1.
        attempt: u32,
        /// How long the client waits before it.
        wait_ms: u64,
        /// Why the request failed.
        error: String,
    },
    /// A model of a [`FallbackModel`](crate::model::FallbackModel) failed
    /// (or gave a turn to fall back on) and the next one is asked.
    Fallback {
        /// The model that failed.
        from: String,
        /// The model asked next.
        to: String,
        /// Why.
        error: String,
    },
}

/// Where a streaming model sends its [`ModelDelta`]s while a turn streams.
#[derive(Clone)]
pub struct DeltaSink {
    send: Arc<dyn Fn(ModelDelta) + Send + Sync>,
}

impl DeltaSink {
    /// A sink that calls `send` with each delta.
    pub fn new(send: impl Fn(ModelDelta) + Send + Sync + 'static) -> Self {
        Self {
            send: Arc::new(send),
        }
    }

    /// A sink that drops every delta.
    pub fn ignore() -> Self {
        Self::new(|_| {})
    }

    /// Sends one delta.
    pub fn send(&self, delta: ModelDelta) {
        (self.send)(delta);
    }
}

impl fmt::Debug for DeltaSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DeltaSink")
    }
}

//! Model clients over HTTP: OpenAI Chat Completions (and any
//! OpenAI-compatible server), OpenAI Responses, Anthropic Messages and
//! Gemini, each a [`Model`](crate::Model) a run can drive.
//!
//! Each client writes its request with [`behest::providers`](crate::providers)
//! and reads the answer with the same module's parser or stream assembler:
//! one place per format. Turns stream by default (server-sent events, read
//! as they arrive); a run shows the pieces as
//! [`EventKind::ModelDelta`](crate::EventKind::ModelDelta) events, and the
//! assembled message is the one the whole response would give.
//!
//! Failures are [`ModelError`](crate::ModelError)s with the HTTP status, the
//! provider's error type and request id and whether a retry may help.
//! Requests that fail before an answer starts are retried with backoff
//! ([`RetryPolicy`]); a stream that breaks off is not. Dropping the future
//! (cancelling the run) aborts the request.
//!
//! Each client sits behind its cargo feature: `openai`, `anthropic`,
//! `gemini`, or `models` for all.

mod config;
mod http;
mod tools;

#[cfg(feature = "anthropic")]
pub mod anthropic;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "openai")]
pub mod openai;

pub(crate) use config::{config_methods, Config};
pub use config::{ApiKey, RetryPolicy, ToolChoice};

//! Runs streamed to chat front ends: the AI SDK's UI message stream
//! (`useChat`) and AG-UI (CopilotKit, `@ag-ui/client`), served by axum
//! ([`ChatUi`]). The encoders ([`ai_sdk::UiMessageStream`],
//! [`ag_ui::AgUiStream`]) turn a run's events into either protocol for a
//! server of your own. See the [chat front ends chapter](crate::docs::chat_ui).
//!
//! [`RunViewer`] serves a page that shows recorded and live runs.

pub mod ag_ui;
pub mod ai_sdk;
mod input;
mod parts;
mod serve;
mod viewer;

pub use input::UiInputError;
pub use serve::{sse_frames, ChatUi};
pub use viewer::RunViewer;

//! The guide: one chapter a module, each example a compiled doctest.
//!
//! Start with [`tool_macro`] (tools from functions) and [`runs`] (a model
//! and its tools in a loop); [`guarantees`] says what the runtime promises
//! about every call.

#[doc = include_str!("tool_by_hand.md")]
pub mod tool_by_hand {}

#[doc = include_str!("tool_macro.md")]
pub mod tool_macro {}

#[doc = include_str!("tools_macro.md")]
pub mod tools_macro {}

#[doc = include_str!("external_tools.md")]
pub mod external_tools {}

#[doc = include_str!("spec_files.md")]
pub mod spec_files {}

#[doc = include_str!("runs.md")]
pub mod runs {}

#[doc = include_str!("agents.md")]
pub mod agents {}

#[doc = include_str!("agent_trees.md")]
pub mod agent_trees {}

#[doc = include_str!("pausing.md")]
pub mod pausing {}

#[doc = include_str!("sessions.md")]
pub mod sessions {}

#[doc = include_str!("limits.md")]
pub mod limits {}

#[doc = include_str!("fallback.md")]
pub mod fallback {}

#[doc = include_str!("guardrails.md")]
pub mod guardrails {}

#[doc = include_str!("context.md")]
pub mod context {}

#[doc = include_str!("streamed_output.md")]
pub mod streamed_output {}

#[cfg(feature = "models")]
#[cfg_attr(docsrs, doc(cfg(feature = "models")))]
#[doc = include_str!("models.md")]
pub mod models {}

#[cfg(feature = "mcp")]
#[cfg_attr(docsrs, doc(cfg(feature = "mcp")))]
#[doc = include_str!("mcp.md")]
pub mod mcp {}

#[cfg(feature = "ui")]
#[cfg_attr(docsrs, doc(cfg(feature = "ui")))]
#[doc = include_str!("chat_ui.md")]
pub mod chat_ui {}

#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
#[doc = include_str!("telemetry.md")]
pub mod telemetry {}

#[doc = include_str!("providers.md")]
pub mod providers {}

#[doc = include_str!("guarantees.md")]
pub mod guarantees {}

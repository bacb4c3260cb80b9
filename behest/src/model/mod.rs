//! The model contract, a twin of [`tool`](mod@crate::tool): what a run asks a
//! model ([`ModelRequest`], [`ModelSettings`]), what it answers or how it
//! fails ([`ModelError`]), the [`Model`] trait every client implements, the
//! models that wrap models ([`FallbackModel`], [`Recorder`],
//! [`ScriptedModel`]) and what tokens cost ([`Price`], [`Prices`]).
//!
//! It names only the layers beneath it (the conversation, the tool
//! contract): model clients (`models`) build on it without knowing runs.

mod contract;
mod fallback;
mod prices;
mod record;
mod scripted;

pub use contract::{Model, ModelError, ModelRequest, ModelSettings, ReasoningEffort};
pub use fallback::{Failure, FallbackModel};
pub use prices::{CachedInput, Price, Prices, PRICES_AS_OF};
pub use record::{RecordedTurn, Recorder, Recording};
pub use scripted::{ScriptedModel, ScriptedTurn};

/// The old name of [`ScriptedTurn`].
#[doc(hidden)]
pub type Turn = ScriptedTurn;

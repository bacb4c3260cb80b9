//! Durable behest runs on [Restate](https://restate.dev): an [`Agent`]'s
//! runs as the Restate workflow `DurableAgent`, one instance per run id.
//! Every model turn and tool call is a journal entry, so a run survives
//! the death of its process: played again, it asks the model nothing it
//! already answered and runs no completed tool twice (a call that was
//! running when the process died runs again: mark tools safe to repeat
//! `idempotent`). External calls and approvals are durable promises with
//! durable deadlines: the run waits without a process for as long as they
//! take.
//!
//! [`Agent`]: behest::Agent

mod client;
mod steps;
mod wire;
mod workflow;

pub use client::{DurableClient, DurableClientError};
pub use wire::{Answer, Approval, DurableOutcome, Pending, Status};
pub use workflow::{serve, DurableAgent};

/// restate-sdk, at the version this crate builds on.
pub use restate_sdk;

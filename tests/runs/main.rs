//! Runs of an agent: the loop, its steps, every call of it answered, and the
//! run-level features (agents as tools, handoffs, guardrails, fallback models,
//! limits, context, streamed output).

#[path = "../tracing_support/mod.rs"]
mod tracing_support;

mod agents;
mod answers;
mod runs;
mod steps;

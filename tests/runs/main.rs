//! Runs of an agent: the loop, its steps, every call of it answered, and the
//! run-level features (agents as tools, handoffs, guardrails, fallback models,
//! limits, context, streamed output).

#[path = "../support/tracing.rs"]
mod tracing_support;

mod accounting;
mod agents_as_tools;
mod answers;
mod books;
mod context;
mod fallback;
mod guardrails;
mod handoffs;
mod limits;
mod partial_output;
mod prepared_tools;
mod resume;
mod runs;
mod spans;
mod steps;
mod tool_search;
mod tree;

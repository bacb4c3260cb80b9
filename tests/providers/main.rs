//! The provider formats: tools exported for each, their recorded traffic read
//! back, messages converted both ways, their rules, and Chat stream chunks.

#[path = "../support/python.rs"]
mod python;
#[path = "../support/representative.rs"]
mod representative;

mod chat_chunks;
mod exports;
mod fixtures;
mod messages;
mod rules;

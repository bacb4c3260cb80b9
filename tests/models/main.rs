//! The model clients against local servers that answer as the providers do:
//! requests, retries, streams and errors.
#![cfg(feature = "models")]

#[path = "../support/eventstream.rs"]
mod eventstream;
#[path = "../support/models.rs"]
mod models_support;
#[path = "../support/python.rs"]
mod python;
#[path = "../support/tracing.rs"]
mod tracing_support;

mod aimock;
mod azure;
mod bedrock;
mod clients;
mod compat_servers;
mod sdk_bodies;
mod services;
mod streams;
mod tool_search;
mod vertex;

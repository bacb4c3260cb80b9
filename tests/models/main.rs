//! The model clients against local servers that answer as the providers do:
//! requests, retries, streams and errors.
#![cfg(feature = "models")]

#[path = "../models_support/mod.rs"]
mod models_support;
#[path = "../tracing_support/mod.rs"]
mod tracing_support;

mod clients;
mod services;
mod streams;

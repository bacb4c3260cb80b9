//! The tool runtime: one call from the model's arguments to one result, its
//! typed routes, limits, concurrency, registry, bad and hostile input, and
//! what never leaks.

#[cfg(feature = "models")]
#[path = "../support/models.rs"]
#[allow(dead_code)]
mod models_support;
#[path = "../support/tools.rs"]
mod support;
#[path = "../support/tracing.rs"]
mod tracing_support;

mod bad_calls;
mod call_cases;
mod calls;
mod concurrency;
mod hostile_input;
mod leaks;
mod registry;
mod typed_routes;

//! The `#[tool]`, `#[tools]` and `#[external_tool]` macros: the arguments,
//! schemas and properties they generate, their options, hygiene and a renamed
//! crate.

#[path = "../support/representative.rs"]
mod representative;
#[path = "../support/tools.rs"]
mod support;

mod arguments;
mod crate_alias;
mod hygiene;
mod properties;
mod schemas;
mod tools;

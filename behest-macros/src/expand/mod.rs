//! Code generation. Expansion never validates: `crate::internals::ast` parses and
//! checks a tool function into its model, and `function.rs` generates from it.

pub mod data;
mod derives;
pub mod external_tool;
pub mod function;
pub mod literal;
pub mod mcp;
pub mod spec;
pub mod tool;
pub mod tools;

use proc_macro2::Span;

/// A span at `location` with the hygiene of generated code, so generated
/// locals stay invisible to the user while errors point at the user's token.
pub fn at(location: Span) -> Span {
    Span::mixed_site().located_at(location)
}

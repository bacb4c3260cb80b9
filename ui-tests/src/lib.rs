//! The compile-time diagnostics of behest's macros: `tests/ui.rs` builds
//! each case under `tests/ui` with trybuild and compares its errors with
//! the `.stderr` snapshot next to it. Nothing to use here.

//! Procedural macros of behest.

//! JSON Schema: the official test suite through the validator, spec files
//! checked at build time, and spec files round-tripped.

mod json_schema_suite;
mod spec_files;
mod spec_round_trip;

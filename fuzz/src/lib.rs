//! The checks the fuzz targets run, one module per target. The main
//! workspace's `tests/fuzz_corpus.rs` runs the same modules over the
//! committed corpus, so CI guards what fuzzing found without cargo-fuzz.

pub mod checks;

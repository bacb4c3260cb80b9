//! The fuzz targets' committed corpus (`fuzz/corpus/<target>/`: the inputs
//! that once broke something, and inputs the fuzzer found interesting)
//! replayed through the same checks the targets run, so that a regression
//! fails `cargo test` without cargo-fuzz. `fuzz/run.sh` runs the fuzzers.

use std::path::Path;

#[path = "../fuzz/src/checks/mod.rs"]
mod checks;

/// Every file of the target's corpus through `check`; the count, so that
/// a missing corpus does not pass as an empty one.
fn replay(target: &str, check: fn(&[u8])) -> usize {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{}: {error}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in &entries {
        let data = std::fs::read(path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{target}: {} fails", path.display());
    }
    assert!(!entries.is_empty(), "{target}: no corpus");
    entries.len()
}

#[test]
fn call_pipeline() {
    println!(
        "{} inputs",
        replay("call_pipeline", checks::call_pipeline::check)
    );
}

#[test]
fn schemas() {
    println!("{} inputs", replay("schemas", checks::schemas::check));
}

#[test]
fn providers() {
    println!("{} inputs", replay("providers", checks::providers::check));
}

#[test]
#[cfg(feature = "models")]
fn sse() {
    println!("{} inputs", replay("sse", checks::sse::check));
}

#[test]
#[cfg(feature = "models")]
fn eventstream() {
    println!(
        "{} inputs",
        replay("eventstream", checks::eventstream::check)
    );
}

#[test]
#[cfg(feature = "mcp")]
fn mcp_messages() {
    println!(
        "{} inputs",
        replay("mcp_messages", checks::mcp_messages::check)
    );
}

#[test]
fn partial_json() {
    println!(
        "{} inputs",
        replay("partial_json", checks::partial_json::check)
    );
}

#[test]
fn session_rows() {
    println!(
        "{} inputs",
        replay("session_rows", checks::session_rows::check)
    );
}

#[test]
fn stream_mutants() {
    println!(
        "{} inputs",
        replay("stream_mutants", checks::stream_mutants::check)
    );
}

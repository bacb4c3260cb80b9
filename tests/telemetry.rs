//! behest's telemetry, judged by a checker nobody here wrote: a run
//! exported over OTLP (tests/telemetry/send.rs) is received by
//! tests/telemetry/test_semconv.py, whose span checks are PyPI's
//! `pytest-genai-semconv`. `.ci/test-all` installs it
//! (`BEHEST_SEMCONV_PYTHON`); without it the test says "skipped".
#![cfg(feature = "otel")]

use std::path::{Path, PathBuf};

#[test]
fn exported_telemetry_follows_the_genai_conventions() {
    let Some(python) = std::env::var_os("BEHEST_SEMCONV_PYTHON").map(PathBuf::from) else {
        eprintln!("skipped: BEHEST_SEMCONV_PYTHON names no Python with pytest-genai-semconv (.ci/run installs it)");
        return;
    };
    let checks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/telemetry");
    let output = std::process::Command::new(python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .current_dir(&checks)
        .env(
            "BEHEST_OTEL_SENDER",
            env!("CARGO_BIN_EXE_behest-otel-test-sender"),
        )
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.contains("5 passed"), "{printed}");
}

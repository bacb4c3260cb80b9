//! Turns on the tests that read the shared data folder (JSON-Schema-Test-Suite,
//! provider fixtures) when `BEHEST_SHARED_DIR` names it; without it they are
//! reported as ignored ("skipped"), so `cargo test` passes on any clone.
//! Likewise for the tests that run third-party validators and peers in
//! `BEHEST_PYTHON` (google-genai, the official MCP SDK).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(behest_shared)");
    println!("cargo::rustc-check-cfg=cfg(behest_python)");
    println!("cargo::rerun-if-env-changed=BEHEST_PYTHON");
    // A Python with the third-party packages (`.ci/run` installs them).
    if std::env::var_os("BEHEST_PYTHON").is_some_and(|python| !python.is_empty()) {
        println!("cargo::rustc-cfg=behest_python");
    }
    println!("cargo::rerun-if-env-changed=BEHEST_SHARED_DIR");
    if std::env::var_os("BEHEST_SHARED_DIR").is_some_and(|dir| !dir.is_empty()) {
        println!("cargo::rustc-cfg=behest_shared");
    }
}

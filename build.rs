//! Turns on the tests that run third-party validators and peers when they
//! are there: `BEHEST_PYTHON` (google-genai, the official MCP SDK,
//! botocore's SigV4 signer, google-auth, the openai and anthropic SDKs),
//! `BEHEST_FASTMCP_PYTHON` (FastMCP 4, whose MCP SDK is another major
//! version, so it has a Python of its own), `BEHEST_INSPECTOR` and
//! `BEHEST_AIMOCK` (aimock's `llmock` script, run with `node`); without
//! them those tests are reported as ignored ("skipped"), so `cargo test`
//! passes on any clone.
//!
//! It also writes the struct + spec file pairs of `tests/schemas/spec_round_trip.rs`
//! from the object schemas of the vendored JSON-Schema-Test-Suite
//! (`tests/data`).

#[path = "tests/spec_round_trip/generate.rs"]
mod spec_round_trip;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(behest_python_mcp)");
    println!("cargo::rustc-check-cfg=cfg(behest_python_genai)");
    println!("cargo::rustc-check-cfg=cfg(behest_python_botocore)");
    println!("cargo::rustc-check-cfg=cfg(behest_python_google_auth)");
    println!("cargo::rustc-check-cfg=cfg(behest_python_sdks)");
    println!("cargo::rerun-if-env-changed=BEHEST_PYTHON");
    // A Python with the third-party packages (`.ci/run` installs them):
    // each group of tests runs when its package imports.
    if let Some(python) = std::env::var_os("BEHEST_PYTHON").filter(|python| !python.is_empty()) {
        // Asked again when the packages wanted or installed change.
        println!("cargo::rerun-if-changed=.ci/python-requirements.txt");
        let site = std::process::Command::new(&python)
            .args([
                "-c",
                "import sysconfig; print(sysconfig.get_paths()['purelib'])",
            ])
            .output()
            .ok()
            .filter(|output| output.status.success())
            .and_then(|output| String::from_utf8(output.stdout).ok());
        if let Some(site) = site
            .map(|site| site.trim().to_owned())
            .filter(|site| std::path::Path::new(site).exists())
        {
            println!("cargo::rerun-if-changed={site}");
        }
        for (module, cfg) in [
            ("mcp", "behest_python_mcp"),
            ("google.genai", "behest_python_genai"),
            ("botocore", "behest_python_botocore"),
            ("google.auth", "behest_python_google_auth"),
            ("openai, anthropic", "behest_python_sdks"),
        ] {
            let imports = std::process::Command::new(&python)
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|output| output.status.success());
            if imports {
                println!("cargo::rustc-cfg={cfg}");
            } else {
                println!(
                    "cargo::warning=BEHEST_PYTHON cannot import `{module}`: its tests are skipped"
                );
            }
        }
    }
    println!("cargo::rustc-check-cfg=cfg(behest_fastmcp)");
    println!("cargo::rerun-if-env-changed=BEHEST_FASTMCP_PYTHON");
    if let Some(python) =
        std::env::var_os("BEHEST_FASTMCP_PYTHON").filter(|python| !python.is_empty())
    {
        let imports = std::process::Command::new(&python)
            .args(["-c", "import fastmcp"])
            .output()
            .is_ok_and(|output| output.status.success());
        if imports {
            println!("cargo::rustc-cfg=behest_fastmcp");
        } else {
            println!("cargo::warning=BEHEST_FASTMCP_PYTHON cannot import `fastmcp`: its tests are skipped");
        }
    }
    // The MCP Inspector's CLI (npm), another client nobody here wrote.
    println!("cargo::rustc-check-cfg=cfg(behest_inspector)");
    println!("cargo::rerun-if-env-changed=BEHEST_INSPECTOR");
    if std::env::var_os("BEHEST_INSPECTOR")
        .is_some_and(|path| std::path::Path::new(&path).is_file())
    {
        println!("cargo::rustc-cfg=behest_inspector");
    }
    // aimock (npm), the model providers' stand-in nobody here wrote: its
    // `llmock` command's script.
    println!("cargo::rustc-check-cfg=cfg(behest_aimock)");
    println!("cargo::rerun-if-env-changed=BEHEST_AIMOCK");
    if std::env::var_os("BEHEST_AIMOCK").is_some_and(|path| std::path::Path::new(&path).is_file()) {
        println!("cargo::rustc-cfg=behest_aimock");
    }
    // The vendored JSON-Schema-Test-Suite (tests/data/README.md).
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let suite = std::path::PathBuf::from(manifest).join("tests/data/json-schema-test-suite");
    println!("cargo::rerun-if-changed=tests/data/json-schema-test-suite");
    let suite = Some(suite);
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    spec_round_trip::generate(suite.as_deref(), &out);
}

//! Compile time of spec files: a crate of 100 `#[external_tool(schema =
//! "..")]` structs against the same crate with 100 plain `#[external_tool]`
//! structs, each built clean (the crate only; its dependencies are built
//! once beforehand) and after a touch, three times; medians and ratios.
//!
//! Run: `cargo bench --bench spec_compile_time` (it builds scratch crates
//! under `target/compile-bench`, a few minutes).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const TOOLS: usize = 100;
const RUNS: usize = 3;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bench = root.join("target/compile-bench");
    let target = bench.join("target");
    let plain = scratch(&bench, root, "plain", false);
    let files = scratch(&bench, root, "files", true);
    // Dependencies once, so that "clean" measures the crate alone.
    for krate in [&plain, &files] {
        build(krate, &target);
    }
    let mut rows = Vec::new();
    for (label, krate) in [("plain", &plain), ("files", &files)] {
        let name = format!("scratch_{label}");
        let mut clean = Vec::new();
        let mut touched = Vec::new();
        for _ in 0..RUNS {
            let status = Command::new(env!("CARGO"))
                .args(["clean", "-p", &name])
                .env("CARGO_TARGET_DIR", &target)
                .current_dir(krate)
                .status()
                .unwrap();
            assert!(status.success());
            clean.push(build(krate, &target));
            let main = krate.join("src/main.rs");
            let text = std::fs::read_to_string(&main).unwrap();
            std::fs::write(&main, text).unwrap();
            touched.push(build(krate, &target));
        }
        rows.push((label, median(clean), median(touched)));
    }
    println!("{TOOLS} external tools, median of {RUNS} builds (debug):");
    for (label, clean, touched) in &rows {
        println!("  {label:<6} clean {clean:>8.2?}   after touch {touched:>8.2?}");
    }
    let (_, plain_clean, plain_touch) = rows[0];
    let (_, files_clean, files_touch) = rows[1];
    println!(
        "  ratio  clean {:.2}x   after touch {:.2}x",
        files_clean.as_secs_f64() / plain_clean.as_secs_f64(),
        files_touch.as_secs_f64() / plain_touch.as_secs_f64()
    );
}

/// A crate of `TOOLS` external tools, with spec files or without.
fn scratch(bench: &Path, root: &Path, label: &str, with_files: bool) -> PathBuf {
    let dir = bench.join(label);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("schemas")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"scratch_{label}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\nbehest = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("behest")
        ),
    )
    .unwrap();
    let mut main = String::new();
    for n in 0..TOOLS {
        if with_files {
            std::fs::write(
                dir.join(format!("schemas/tool_{n}.json")),
                format!(
                    "{{\"type\": \"object\", \"properties\": {{\"query\": {{\"type\": \"string\", \"minLength\": 1}}, \"limit\": {{\"type\": \"integer\", \"minimum\": {n}}}, \"exact\": {{\"type\": \"boolean\"}}}}, \"required\": [\"query\"]}}"
                ),
            )
            .unwrap();
            main.push_str(&format!(
                "/// Tool {n}.\n#[behest::external_tool(schema = \"schemas/tool_{n}.json\")]\npub struct Tool{n} {{\n    pub query: String,\n    pub limit: Option<u32>,\n    pub exact: Option<bool>,\n}}\n\n"
            ));
        } else {
            main.push_str(&format!(
                "/// Tool {n}.\n#[behest::external_tool]\npub struct Tool{n} {{\n    pub query: String,\n    pub limit: Option<u32>,\n    pub exact: Option<bool>,\n}}\n\n"
            ));
        }
    }
    main.push_str("fn main() {\n");
    for n in 0..TOOLS {
        main.push_str(&format!("    let _ = Tool{n}::external_tool();\n"));
    }
    main.push_str("}\n");
    std::fs::write(dir.join("src/main.rs"), main).unwrap();
    dir
}

fn build(krate: &Path, target: &Path) -> Duration {
    let started = Instant::now();
    let output = Command::new(env!("CARGO"))
        .args(["build", "-q"])
        .env("CARGO_TARGET_DIR", target)
        .current_dir(krate)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    started.elapsed()
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

//! Compile-time checks of the macros: each failing case is one diagnostic,
//! compared with its `.stderr` snapshot; the `pass` cases must compile.
//!
//! The spec-file cases (`spec_*`) name their JSON files relative to the
//! crate trybuild builds, `target/tests/trybuild/behest-ui-tests`: four
//! levels below the workspace's root. With `CARGO_TARGET_DIR` elsewhere
//! they cannot be found, and those cases are skipped.

#[test]
fn macro_diagnostics() {
    let cases = trybuild::TestCases::new();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = root.parent().expect("ui-tests sits in the workspace");
    let target_is_local = std::env::var_os("CARGO_TARGET_DIR")
        .is_none_or(|dir| std::path::Path::new(&dir) == workspace.join("target"));
    for folder in ["fail", "pass"] {
        let mut names: Vec<String> = std::fs::read_dir(root.join("tests/ui").join(folder))
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.ends_with(".rs"))
            .collect();
        names.sort();
        for name in names {
            // Relative, as trybuild shows paths in the snapshots.
            let path = format!("tests/ui/{folder}/{name}");
            if name.starts_with("spec_") && !target_is_local {
                println!("skipped: {path} (CARGO_TARGET_DIR is not ./target)");
            } else if folder == "fail" {
                cases.compile_fail(path);
            } else {
                cases.pass(path);
            }
        }
    }
}

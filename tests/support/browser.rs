//! Node with the front ends' packages, headless Chromium, and the examples
//! they are pointed at, for the tests of pages and chat streams. Each says
//! why a test is skipped when its part is absent.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Node and the folder the front ends' packages are installed in
/// (`BEHEST_UI_PACKAGES`, `BEHEST_NODE`), or why the test is skipped.
pub fn packages() -> Result<(PathBuf, PathBuf), String> {
    let dir = std::env::var_os("BEHEST_UI_PACKAGES")
        .map(PathBuf::from)
        .filter(|dir| dir.join("node_modules").is_dir())
        .ok_or("skipped: BEHEST_UI_PACKAGES does not name the front ends' packages (.ci/run installs them)")?;
    let node = std::env::var_os("BEHEST_NODE")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("node"));
    let runs = std::process::Command::new(&node)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !runs {
        return Err(format!("skipped: {} does not run here", node.display()));
    }
    Ok((node, dir))
}

/// Headless Chromium (`BEHEST_CHROMIUM`, else Debian's), or why the test
/// is skipped.
pub fn chromium() -> Result<PathBuf, String> {
    let path = std::env::var_os("BEHEST_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if path.exists() {
        Ok(path)
    } else {
        Err(format!(
            "skipped: no Chromium at {} (.ci/run installs Debian's chromium)",
            path.display()
        ))
    }
}

/// Runs one of `tests/ui`'s scripts beside the packages (so that its
/// imports resolve there) and reads the JSON it prints last.
pub async fn run_script(node: &Path, dir: &Path, script: &str, args: &[&str]) -> Value {
    let source = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/ui")
        .join(script);
    let copy = dir.join(script);
    std::fs::copy(&source, &copy).unwrap();
    let output = tokio::process::Command::new(node)
        .arg(&copy)
        .args(args)
        .current_dir(dir)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{script} failed: {}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|error| panic!("{script} printed no JSON ({error}): {stdout}"))
}

/// An example's binary, built beside this test by `cargo test`.
pub fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join(name);
    path.exists().then_some(path)
}

/// Starts an example that prints `listening on URL` first, and gives the
/// child (killed when dropped) and the URL.
pub async fn start_example(binary: &Path, args: &[&str]) -> (tokio::process::Child, String) {
    use tokio::io::AsyncBufReadExt;
    let mut child = tokio::process::Command::new(binary)
        .args(args)
        .env("PORT", "0")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines
        .next_line()
        .await
        .unwrap()
        .expect("it says where it listens");
    let url = first.strip_prefix("listening on ").unwrap().to_owned();
    (child, url)
}

/// Where the tests keep their screenshots.
pub fn screenshots() -> PathBuf {
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    shots
}

/// The lines the page logged as errors, and the requests it made beyond
/// `url`'s server: both must be empty.
pub fn page_faults(out: &Value, url: &str) -> Vec<String> {
    let mut faults: Vec<String> = out["console"]
        .as_array()
        .unwrap()
        .iter()
        .map(|line| line.as_str().unwrap().to_owned())
        .filter(|line| line.starts_with("error") || line.starts_with("pageerror"))
        .collect();
    faults.extend(
        out["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|request| request.as_str().unwrap().to_owned())
            .filter(|request| !request.starts_with(url))
            .map(|request| format!("the page reached beyond its server: {request}")),
    );
    faults
}

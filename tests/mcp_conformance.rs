//! The MCP conformance kit (`@modelcontextprotocol/conformance`, the
//! protocol's own test suite) against `examples/mcp_conformance_server.rs`
//! (every active server scenario of the newest stable kit and of the
//! newest prerelease, at each protocol version the kit tests that behest
//! serves) and `examples/mcp_conformance_client.rs` (the client scenarios
//! that need no authorization), with no expected failures; and the
//! scenarios any server must pass against `examples/mcp_server.rs`. The kits and a Node to run them are
//! installed by `.ci/test-all` (`BEHEST_NODE`, `BEHEST_CONFORMANCE`,
//! `BEHEST_CONFORMANCE_NEXT`); without them the tests say "skipped".
#![cfg(feature = "mcp")]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The example `name`'s binary, built beside this test by `cargo test`.
fn example(name: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let path = exe.parent()?.parent()?.join("examples").join(name);
    path.exists().then_some(path)
}

/// The example, serving on a free port; killed when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(binary: &PathBuf) -> Server {
    let mut child = Command::new(binary)
        .arg("0")
        .stdout(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .expect("the example says where it serves");
    let url = first
        .trim()
        .strip_prefix("serving MCP at ")
        .unwrap_or_else(|| panic!("the example said {first:?}"))
        .to_owned();
    Server { child, url }
}

/// Node, the kit named by `kit_variable` and the example `name`, or why
/// the test is skipped.
fn kit(kit_variable: &str, name: &str) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let from = |variable: &str| {
        std::env::var_os(variable)
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .ok_or_else(|| {
                format!("skipped: {variable} does not name a file (.ci/run installs it)")
            })
    };
    let binary = example(name).ok_or_else(|| {
        format!("skipped: the {name} example is not built (cargo test builds it)")
    })?;
    let node = from("BEHEST_NODE")?;
    // A Node built for another machine is there but does not run.
    let runs = Command::new(&node)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !runs {
        return Err(format!("skipped: {} does not run here", node.display()));
    }
    Ok((node, from(kit_variable)?, binary))
}

/// Runs the kit's server `suite` (`active`, or `all`: the pending
/// scenarios too) at each of `versions`, each against a server of its
/// own; every scenario must pass, and at least `least` of them run at
/// each version.
fn passes(kit_variable: &str, suite: &str, versions: &[(&str, usize)]) {
    let (node, kit, binary) = match kit(kit_variable, "mcp_conformance_server") {
        Ok(found) => found,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    for (version, least) in versions {
        let server = start(&binary);
        let scratch = scratch_dir(&format!("{kit_variable}-server-{version}"));
        let (success, printed) = run_kit(
            &node,
            &kit,
            &[
                "server",
                "--url",
                &server.url,
                "--suite",
                suite,
                "--spec-version",
                version,
            ],
            &scratch,
        );
        let summary = printed
            .split("=== SUMMARY ===")
            .nth(1)
            .unwrap_or_else(|| panic!("{version}: the kit printed no summary:\n{printed}"));
        eprintln!("{kit_variable} at {version}:{summary}");
        let passed = summary.lines().filter(|line| line.starts_with('✓')).count();
        let failed: Vec<&str> = summary
            .lines()
            .filter(|line| line.starts_with('✗'))
            .collect();
        assert!(
            success && failed.is_empty(),
            "{version}: failing scenarios {failed:?}\n{printed}"
        );
        assert!(
            passed >= *least,
            "{version}: {passed} scenarios ran, at least {least} expected:\n{summary}"
        );
        let _ = std::fs::remove_dir_all(&scratch);
    }
}

/// Runs the kit with `args` in `scratch` (it writes nothing, but may
/// look for a home): whether it passed, and what it printed.
fn run_kit(node: &Path, kit: &Path, args: &[&str], scratch: &Path) -> (bool, String) {
    let output = Command::new(node)
        .arg(kit)
        .args(args)
        .current_dir(scratch)
        .output()
        .expect("the kit runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

/// Asserts that the kit's run of one scenario, said as `what`, passed
/// every check: it succeeded, and its `Passed:` line counts no failure.
fn every_check_passed(what: &str, success: bool, printed: &str) {
    let passed = printed
        .lines()
        .find(|line| line.starts_with("Passed: "))
        .unwrap_or_else(|| panic!("{what}: the kit printed no result:\n{printed}"));
    eprintln!("{what}: {passed}");
    assert!(
        success && passed.contains(" 0 failed"),
        "{what}: {passed}\n{printed}"
    );
}

/// A folder of the test's own for the kit to run in.
fn scratch_dir(version: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "behest-conformance-{}-{version}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Kit 0.1.16: all its server scenarios, the pending ones included: 32 at
/// 2025-11-25, 26 at 2025-06-18.
#[test]
fn the_stable_kit_passes_every_server_scenario() {
    passes(
        "BEHEST_CONFORMANCE",
        "all",
        &[("2025-06-18", 26), ("2025-11-25", 32)],
    );
}

/// Kit 0.2.0-alpha.12, which checks every message against the protocol's
/// schema too: its active scenarios at each version, 2026-07-28 included.
#[test]
fn the_prerelease_kit_passes_every_active_server_scenario() {
    passes(
        "BEHEST_CONFORMANCE_NEXT",
        "active",
        &[("2025-06-18", 26), ("2025-11-25", 31), ("2026-07-28", 10)],
    );
}

/// Kit 0.2.0-alpha.12's tasks extension (`io.modelcontextprotocol/tasks`,
/// over protocol 2026-07-28): every scenario the kit lists for it, each
/// against the server's task tools; at least the ten it has now.
#[test]
fn the_prerelease_kit_passes_the_tasks_extension() {
    let (node, kit, binary) = match kit("BEHEST_CONFORMANCE_NEXT", "mcp_conformance_server") {
        Ok(found) => found,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    let scratch = scratch_dir("tasks");
    let (listed, printed) = run_kit(&node, &kit, &["list", "--server"], &scratch);
    assert!(listed, "the kit lists its scenarios:\n{printed}");
    let scenarios: Vec<&str> = printed
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter(|line| line.starts_with("tasks-") && line.ends_with("[extension]"))
        .filter_map(|line| line.split_whitespace().next())
        .collect();
    assert!(
        scenarios.len() >= 10,
        "the kit's tasks scenarios: {scenarios:?}"
    );
    let server = start(&binary);
    for scenario in scenarios {
        let (success, printed) = run_kit(
            &node,
            &kit,
            &["server", "--url", &server.url, "--scenario", scenario],
            &scratch,
        );
        every_check_passed(&format!("tasks {scenario}"), success, &printed);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// The names `list` prints for the kit's scenarios (`--server` or
/// `--client`) at `version`, extensions and drafts left out.
fn listed(node: &Path, kit: &Path, side: &str, version: &str, scratch: &Path) -> Vec<String> {
    let (listed, printed) = run_kit(
        node,
        kit,
        &["list", side, "--spec-version", version],
        scratch,
    );
    assert!(listed, "the kit lists its scenarios:\n{printed}");
    printed
        .lines()
        .filter_map(|line| line.trim().strip_prefix("- "))
        .filter(|line| !line.contains("[extension]") && !line.contains("[draft]"))
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Runs the kit named by `kit_variable` in client mode for every client
/// scenario it lists at protocol `version` (authorization included),
/// against `examples/mcp_conformance_client.rs`, asking for that version:
/// every check must pass, and at least `least` scenarios run.
fn client_passes(kit_variable: &str, version: &str, least: usize) {
    let (node, kit, binary) = match kit(kit_variable, "mcp_conformance_client") {
        Ok(found) => found,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    let scratch = scratch_dir(&format!("{kit_variable}-client-{version}"));
    let scenarios = listed(&node, &kit, "--client", version, &scratch);
    assert!(
        scenarios.len() >= least,
        "{kit_variable} at {version}: {} client scenarios listed, at least {least} expected: {scenarios:?}",
        scenarios.len()
    );
    let command = binary.to_string_lossy();
    for scenario in &scenarios {
        let (success, printed) = run_kit(
            &node,
            &kit,
            &[
                "client",
                "--scenario",
                scenario,
                "--spec-version",
                version,
                "--command",
                &command,
            ],
            &scratch,
        );
        every_check_passed(
            &format!("{kit_variable} client {scenario} at {version}"),
            success,
            &printed,
        );
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

/// Kit 0.1.16: its 18 client scenarios at 2025-11-25, the 14 of
/// authorization (OAuth with `McpOAuth`) included.
#[test]
fn the_stable_kit_passes_every_client_scenario() {
    client_passes("BEHEST_CONFORMANCE", "2025-11-25", 18);
}

/// Kit 0.2.0-alpha.12: every client scenario it lists at 2025-11-25 and
/// at 2026-07-28 (the client speaking 2026-07-28 there, as the kit asks
/// through `MCP_CONFORMANCE_PROTOCOL_VERSION`), and the two of 2025-03-26
/// (authorization servers of that version's discovery).
#[test]
fn the_prerelease_kit_passes_every_client_scenario() {
    client_passes("BEHEST_CONFORMANCE_NEXT", "2025-03-26", 2);
    client_passes("BEHEST_CONFORMANCE_NEXT", "2025-11-25", 19);
    client_passes("BEHEST_CONFORMANCE_NEXT", "2026-07-28", 33);
}

/// The kit's scenarios that ask nothing of a server's own tools, against
/// the quickstart's server (`examples/mcp_server.rs --http`): what any
/// behest server answers, it answers as the kit wants.
#[test]
fn the_example_server_passes_the_scenarios_any_server_must() {
    let (node, kit, binary) = match kit("BEHEST_CONFORMANCE_NEXT", "mcp_server") {
        Ok(found) => found,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    let mut child = Command::new(&binary)
        .args(["--http", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut url = None;
    let mut line = String::new();
    while url.is_none() && stderr.read_line(&mut line).is_ok_and(|read| read > 0) {
        url = line
            .trim()
            .strip_prefix("serving MCP at ")
            .map(str::to_owned);
        line.clear();
    }
    // Its log goes on: read, so that a full pipe never holds it up.
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let server = Server {
        child,
        url: url.expect("the example says where it serves"),
    };
    let scratch = scratch_dir("example");
    for scenario in [
        "server-initialize",
        "ping",
        "logging-set-level",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ] {
        let (success, printed) = run_kit(
            &node,
            &kit,
            &["server", "--url", &server.url, "--scenario", scenario],
            &scratch,
        );
        every_check_passed(&format!("mcp_server {scenario}"), success, &printed);
    }
    let _ = std::fs::remove_dir_all(&scratch);
}

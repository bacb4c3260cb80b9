//! The MCP conformance kit (`@modelcontextprotocol/conformance`, the
//! protocol's own test suite), the newest stable kit and the newest
//! prerelease, with no expected failures:
//! - against `examples/mcp_conformance_server.rs`: every server scenario
//!   of each protocol version the kit tests that behest serves (the
//!   pending ones too), and the tasks extension;
//! - against `examples/mcp_conformance_client.rs`: every client scenario
//!   of each version, authorization included;
//! - against the quickstart's `examples/mcp_server.rs`: the scenarios any
//!   server must pass.
//!
//! The counts go into the MCP chapter's table (`behest/src/docs/mcp.md`,
//! between its `conformance` markers), which the test checks: run it with
//! `BEHEST_BLESS=1` to write the table anew. The kits and a Node to run
//! them are installed by `.ci/test-all` (`BEHEST_NODE`,
//! `BEHEST_CONFORMANCE`, `BEHEST_CONFORMANCE_NEXT`); without them the test
//! says "skipped".
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

/// An example server on a free port; killed when dropped.
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

impl Server {
    /// The conformance server, which names its URL on its first line.
    fn fixtures(binary: &Path) -> Self {
        // `protocol_error_job` panics on purpose: its message is enough.
        let mut child = Command::new(binary)
            .arg("0")
            .env("RUST_BACKTRACE", "0")
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
        Self { child, url }
    }

    /// The quickstart's server over HTTP, which names its URL in its log.
    fn quickstart(binary: &Path) -> Self {
        let mut child = Command::new(binary)
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
        Self {
            child,
            url: url.expect("the example says where it serves"),
        }
    }
}

/// A kit: Node, the kit's script and its version.
struct Kit {
    node: PathBuf,
    script: PathBuf,
    version: String,
    scratch: PathBuf,
}

/// The binaries and kits, or why the test is skipped.
fn found() -> Result<(Kit, Kit), String> {
    let from = |variable: &str| {
        std::env::var_os(variable)
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .ok_or_else(|| {
                format!("skipped: {variable} does not name a file (.ci/run installs it)")
            })
    };
    for name in [
        "mcp_conformance_server",
        "mcp_conformance_client",
        "mcp_server",
    ] {
        example(name).ok_or_else(|| {
            format!("skipped: the {name} example is not built (cargo test builds it)")
        })?;
    }
    let node = from("BEHEST_NODE")?;
    // A Node built for another machine is there but does not run.
    let runs = Command::new(&node)
        .arg("--version")
        .output()
        .is_ok_and(|output| output.status.success());
    if !runs {
        return Err(format!("skipped: {} does not run here", node.display()));
    }
    let kit = |variable: &str| -> Result<Kit, String> {
        let script = from(variable)?;
        let scratch = std::env::temp_dir().join(format!(
            "behest-conformance-{}-{variable}",
            std::process::id()
        ));
        std::fs::create_dir_all(&scratch).unwrap();
        let mut kit = Kit {
            node: node.clone(),
            script,
            version: String::new(),
            scratch,
        };
        let (ran, printed) = kit.run(&["--version"]);
        assert!(ran, "{variable} tells its version: {printed}");
        kit.version = printed.trim().to_owned();
        Ok(kit)
    };
    Ok((kit("BEHEST_CONFORMANCE")?, kit("BEHEST_CONFORMANCE_NEXT")?))
}

impl Drop for Kit {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.scratch);
    }
}

/// One row of the chapter's table: what ran, and what the kit counted.
struct Row {
    kit: String,
    what: String,
    version: String,
    scenarios: usize,
    passed: usize,
    failed: usize,
}

impl Kit {
    /// Runs the kit with `args` in a folder of its own: whether it
    /// passed, and what it printed.
    fn run(&self, args: &[&str]) -> (bool, String) {
        let output = Command::new(&self.node)
            .arg(&self.script)
            .args(args)
            .current_dir(&self.scratch)
            .output()
            .expect("the kit runs");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.success(), printed)
    }

    /// The scenarios `list` names (`--server` or `--client`) at `version`
    /// (every version without one), extensions and drafts left out unless
    /// `extension` names the extension's prefix.
    fn listed(&self, side: &str, version: Option<&str>, extension: Option<&str>) -> Vec<String> {
        let mut args = vec!["list", side];
        args.extend(
            version
                .map(|version| ["--spec-version", version])
                .into_iter()
                .flatten(),
        );
        let (listed, printed) = self.run(&args);
        assert!(listed, "the kit lists its scenarios:\n{printed}");
        printed
            .lines()
            .filter_map(|line| line.trim().strip_prefix("- "))
            .filter(|line| match extension {
                Some(prefix) => line.starts_with(prefix) && line.ends_with("[extension]"),
                None => !line.contains("[extension]") && !line.contains("[draft]"),
            })
            .filter_map(|line| line.split_whitespace().next())
            .map(str::to_owned)
            .collect()
    }

    /// Runs the server `suite` at `version` against `url`: every scenario
    /// must pass, and at least `least` run.
    fn server_suite(&self, url: &str, suite: &str, version: &str, least: usize) -> Row {
        let (success, printed) = self.run(&[
            "server",
            "--url",
            url,
            "--suite",
            suite,
            "--spec-version",
            version,
        ]);
        let summary = printed
            .split("=== SUMMARY ===")
            .nth(1)
            .unwrap_or_else(|| panic!("{version}: the kit printed no summary:\n{printed}"));
        let failing: Vec<&str> = summary
            .lines()
            .filter(|line| line.starts_with('✗'))
            .collect();
        assert!(
            success && failing.is_empty(),
            "{} at {version}: failing scenarios {failing:?}\n{printed}",
            self.version
        );
        let scenarios = summary.lines().filter(|line| line.starts_with('✓')).count();
        assert!(
            scenarios >= least,
            "{version}: {scenarios} scenarios ran, at least {least} expected:\n{summary}"
        );
        let (passed, failed) = total(summary);
        Row {
            kit: self.version.clone(),
            what: format!("server, {suite} scenarios"),
            version: version.to_owned(),
            scenarios,
            passed,
            failed,
        }
    }

    /// Runs each of `scenarios` alone with `args` before `--scenario`
    /// (a server's URL, or a client's command and version): each must
    /// pass every check.
    fn each(&self, what: &str, version: &str, args: &[&str], scenarios: &[String]) -> Row {
        let (mut passed, mut failed) = (0, 0);
        for scenario in scenarios {
            let mut all = args.to_vec();
            all.extend(["--scenario", scenario]);
            let (success, printed) = self.run(&all);
            let line = printed
                .lines()
                .find(|line| line.starts_with("Passed: "))
                .unwrap_or_else(|| panic!("{scenario}: the kit printed no result:\n{printed}"));
            let checks = (|| {
                let (counted, rest) = line.strip_prefix("Passed: ")?.split_once('/')?;
                let failing = rest.split_once(", ")?.1.split_whitespace().next()?;
                Some((
                    counted.parse::<usize>().ok()?,
                    failing.parse::<usize>().ok()?,
                ))
            })()
            .unwrap_or_else(|| panic!("{scenario}: unreadable result {line:?}"));
            assert!(
                success && checks.1 == 0,
                "{} {what} {scenario} at {version}: {line}\n{printed}",
                self.version
            );
            passed += checks.0;
            failed += checks.1;
        }
        Row {
            kit: self.version.clone(),
            what: what.to_owned(),
            version: version.to_owned(),
            scenarios: scenarios.len(),
            passed,
            failed,
        }
    }

    /// Every client scenario listed at `version`, against the client
    /// example: at least `least`.
    fn client_suite(&self, client: &Path, version: &str, least: usize) -> Row {
        let scenarios = self.listed("--client", Some(version), None);
        assert!(
            scenarios.len() >= least,
            "{} at {version}: {} client scenarios, at least {least} expected: {scenarios:?}",
            self.version,
            scenarios.len()
        );
        let command = client.to_string_lossy();
        let args = ["client", "--spec-version", version, "--command", &command];
        self.each("client, every scenario", version, &args, &scenarios)
    }
}

/// The checks a kit's summary counts in all: passed and failed.
fn total(summary: &str) -> (usize, usize) {
    let line = summary
        .lines()
        .find_map(|line| line.strip_prefix("Total: "))
        .unwrap_or_else(|| panic!("no total in {summary}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|number| number.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

/// The rows as the chapter's table.
fn table(rows: &[Row]) -> String {
    let mut table = String::from(
        "| Kit | What runs | Spec version | Scenarios | Checks |\n|---|---|---|---|---|\n",
    );
    for row in rows {
        table.push_str(&format!(
            "| {} | {} | {} | {} | {} passed, {} failed |\n",
            row.kit, row.what, row.version, row.scenarios, row.passed, row.failed
        ));
    }
    table
}

const BEGIN: &str = "<!-- conformance: written by tests/mcp_conformance.rs -->\n";
const END: &str = "<!-- conformance: end -->";

/// Both kits, every suite, every version behest serves; the chapter's
/// table says what they counted.
#[test]
fn the_kits_pass_and_the_chapter_tells_their_counts() {
    let (stable, next) = match found() {
        Ok(found) => found,
        Err(skipped) => {
            eprintln!("{skipped}");
            return;
        }
    };
    let fixtures = example("mcp_conformance_server").unwrap();
    let client = example("mcp_conformance_client").unwrap();
    let mut rows = Vec::new();
    // Each version against a server of its own.
    for (kit, suite, versions) in [
        (
            &stable,
            "all",
            &[("2025-06-18", 26), ("2025-11-25", 32)][..],
        ),
        (
            &next,
            "active",
            &[
                ("2025-03-26", 1),
                ("2025-06-18", 26),
                ("2025-11-25", 31),
                ("2026-07-28", 20),
            ][..],
        ),
        // The scenarios the prerelease holds back as pending.
        (
            &next,
            "pending",
            &[("2025-11-25", 2), ("2026-07-28", 3)][..],
        ),
    ] {
        for (version, least) in versions {
            let server = Server::fixtures(&fixtures);
            rows.push(kit.server_suite(&server.url, suite, version, *least));
        }
    }
    // The tasks extension, over 2026-07-28.
    let tasks = next.listed("--server", None, Some("tasks-"));
    assert!(tasks.len() >= 10, "the kit's tasks scenarios: {tasks:?}");
    let server = Server::fixtures(&fixtures);
    let args = ["server", "--url", server.url.as_str()];
    rows.push(next.each("server, tasks extension", "2026-07-28", &args, &tasks));
    drop(server);
    // The client, at each version it speaks.
    for (kit, versions) in [
        (&stable, &[("2025-06-18", 5), ("2025-11-25", 18)][..]),
        (
            &next,
            &[
                ("2025-03-26", 2),
                ("2025-06-18", 5),
                ("2025-11-25", 19),
                ("2026-07-28", 33),
            ][..],
        ),
    ] {
        for (version, least) in versions {
            rows.push(kit.client_suite(&client, version, *least));
        }
    }
    // The quickstart's server: the scenarios that ask nothing of a
    // server's own tools.
    let quickstart = Server::quickstart(&example("mcp_server").unwrap());
    let generic: Vec<String> = [
        "server-initialize",
        "ping",
        "logging-set-level",
        "tools-list",
        "server-sse-multiple-streams",
        "dns-rebinding-protection",
    ]
    .map(str::to_owned)
    .to_vec();
    let args = [
        "server",
        "--url",
        quickstart.url.as_str(),
        "--spec-version",
        "2025-11-25",
    ];
    let what = "`mcp_server` example, any server's scenarios";
    rows.push(next.each(what, "2025-11-25", &args, &generic));

    let table = table(&rows);
    eprintln!("{table}");
    let chapter = Path::new(env!("CARGO_MANIFEST_DIR")).join("behest/src/docs/mcp.md");
    let text = std::fs::read_to_string(&chapter).unwrap();
    let start = text
        .find(BEGIN)
        .expect("the chapter has the table's markers")
        + BEGIN.len();
    let end = start + text[start..].find(END).expect("the table's end marker");
    if std::env::var_os("BEHEST_BLESS").is_some() {
        let written = format!("{}{table}{}", &text[..start], &text[end..]);
        std::fs::write(&chapter, written).unwrap();
    } else {
        assert_eq!(
            text[start..end],
            table,
            "the chapter's table is not what the kits counted: run this test with BEHEST_BLESS=1"
        );
    }
}

//! Starting a `restate-server` on free ports of 127.0.0.1, for the tests
//! and the bench, and the scratch folders they keep their data in.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// A TCP port of 127.0.0.1 that is free now and that no earlier call in
/// this process has given out.
///
/// The port is taken outside the kernel's range of ephemeral ports: a port
/// asked of the kernel (bind to port 0) comes from that range, where the
/// next outgoing connection of any test may take it before the server
/// meant for it binds, and the server then fails with "address in use".
/// Each process starts at a place in the range of its own (its id,
/// scattered), so that two test processes at once rarely try the same
/// ports.
pub fn free_port() -> u16 {
    static NEXT: Mutex<Option<u16>> = Mutex::new(None);
    static RANGE: OnceLock<(u16, u16)> = OnceLock::new();
    let &(first, end) = RANGE.get_or_init(listening_range);
    let span = end - first;
    let mut next = NEXT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut port = next.unwrap_or_else(|| {
        // Knuth's multiplicative hash: neighbouring ids land far apart.
        let scattered = u64::from(std::process::id()).wrapping_mul(2_654_435_761);
        first + (scattered % u64::from(span)) as u16
    });
    for _ in 0..span {
        let candidate = port;
        port = if port + 1 >= end { first } else { port + 1 };
        if std::net::TcpListener::bind(("127.0.0.1", candidate)).is_ok() {
            *next = Some(port);
            return candidate;
        }
    }
    panic!("no free port of 127.0.0.1 in {first}..{end}");
}

/// The ports [`free_port`] gives out, `first..end`: from 10 000 up to the
/// first ephemeral port (Linux's `ip_local_port_range`, 32 768 to 60 999
/// by default), or above the last one where the range starts too low to
/// leave room below it. Where it leaves room on neither side, 10 000 to
/// 30 000, which the kernel may hand out too.
fn listening_range() -> (u16, u16) {
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| {
            let mut bounds = text.split_whitespace().map(str::parse::<u16>);
            Some((bounds.next()?.ok()?, bounds.next()?.ok()?))
        })
        .unwrap_or((32_768, 60_999));
    match ephemeral {
        (low, _) if low > 20_000 => (10_000, low),
        (_, high) if high < 55_000 => (high + 1, u16::MAX),
        _ => (10_000, 30_000),
    }
}

/// A folder of the caller's own in the temporary folder, emptied when made
/// and removed with the handle: a server's data takes a few hundred
/// megabytes, and a test suite that left them behind would fill the disk.
pub struct Scratch(PathBuf);

impl Scratch {
    /// The folder `behest-restate-<process>-<name>`, empty.
    pub fn new(name: &str) -> Self {
        let dir =
            std::env::temp_dir().join(format!("behest-restate-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a scratch folder");
        Self(dir)
    }
}

impl Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running `restate-server`: its ports, and its process and data folder,
/// which end with the handle.
pub struct Server {
    process: Child,
    /// Dropped after [`Server::drop`] has killed the process and waited
    /// (up to 5 s) for it to end.
    data: Scratch,
    /// The port of its ingress, where services are called.
    pub ingress: u16,
    /// The port of its admin API, where deployments are registered.
    pub admin: u16,
}

/// An HTTP client (its TLS needs a crypto provider, even for plain HTTP).
pub fn http() -> reqwest::Client {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Waits for `check` to give a value, for at most 60 s: a guard against a
/// hang, not a measure of speed.
pub async fn until<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "gave up waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// How many times in all a server is started, each time on other ports,
/// before its failures are reported.
const STARTS: usize = 3;

/// How long a server may take to answer its health checks: a guard
/// against a hang, not a measure of speed.
const READY_WITHIN: Duration = Duration::from_secs(60);

/// How long one health check may wait for its answer.
const CHECK_WITHIN: Duration = Duration::from_secs(2);

/// Starts the `restate-server` at `binary`, keeping its data in a scratch
/// folder named for `name`, on free ports, and waits until its admin API
/// and its ingress answer their health checks.
///
/// A server that exits while it starts (another process took one of its
/// ports first), or that answers neither way within a minute, is started
/// again on other ports, up to three times in all. Panics, with the end of
/// what each server wrote to its standard error, when none comes up.
pub async fn start_server(binary: &OsStr, name: &str) -> Server {
    let mut failures = Vec::new();
    for _ in 0..STARTS {
        let mut server = spawn(binary, name);
        match server.ready().await {
            Ok(()) => return server,
            Err(failure) => failures.push(failure),
        }
    }
    panic!(
        "restate-server did not start in {STARTS} tries:\n{}",
        failures.join("\n")
    );
}

/// Starts the server's process; [`Server::ready`] tells whether it came up.
fn spawn(binary: &OsStr, name: &str) -> Server {
    let data = Scratch::new(&format!("{name}-server"));
    let (ingress, admin, node) = (free_port(), free_port(), free_port());
    let process = launch(
        binary,
        &data,
        &[],
        &[
            ("RESTATE_LISTEN_MODE", "tcp".to_owned()),
            (
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{ingress}"),
            ),
            ("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}")),
            ("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}")),
            (
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://127.0.0.1:{node}"),
            ),
        ],
    );
    Server {
        process,
        data,
        ingress,
        admin,
    }
}

/// Starts a cluster of three `restate-server` nodes on free ports, as
/// Restate documents a cluster: every node runs every role (metadata
/// server, admin, worker, log server), the log and partitions replicated
/// on two nodes (`default-replication = 2`), so that the cluster goes on
/// when one node dies. The first node provisions the cluster. Waits until
/// every node answers its health checks.
pub async fn start_cluster(binary: &OsStr, name: &str) -> Vec<Server> {
    let ports: Vec<(u16, u16, u16)> = (0..3)
        .map(|_| (free_port(), free_port(), free_port()))
        .collect();
    let metadata: Vec<String> = ports
        .iter()
        .map(|(_, _, node)| format!("\"http://127.0.0.1:{node}\""))
        .collect();
    let mut nodes: Vec<Server> = ports
        .iter()
        .enumerate()
        .map(|(at, &(ingress, admin, node))| {
            let data = Scratch::new(&format!("{name}-node-{}", at + 1));
            let config = format!(
                "node-name = \"n{n}\"\n\
                 cluster-name = \"{name}\"\n\
                 auto-provision = {provision}\n\
                 default-replication = 2\n\
                 listen-mode = \"tcp\"\n\
                 bind-address = \"127.0.0.1:{node}\"\n\
                 advertised-address = \"http://127.0.0.1:{node}\"\n\
                 [metadata-client]\n\
                 addresses = [{metadata}]\n\
                 [admin]\n\
                 bind-address = \"127.0.0.1:{admin}\"\n\
                 [ingress]\n\
                 bind-address = \"127.0.0.1:{ingress}\"\n",
                n = at + 1,
                provision = at == 0,
                metadata = metadata.join(", "),
            );
            std::fs::write(data.join("restate.toml"), config).expect("the node's configuration");
            let config = data.join("restate.toml");
            let process = launch(
                binary,
                &data,
                &["--config-file".as_ref(), config.as_os_str()],
                &[],
            );
            Server {
                process,
                data,
                ingress,
                admin,
            }
        })
        .collect();
    for node in &mut nodes {
        if let Err(failure) = node.ready().await {
            panic!("a node of the cluster did not start: {failure}");
        }
    }
    nodes
}

/// Starts `restate-server` with `args` and `envs`, its data in `data`
/// and its error output in a file there. Its caches are sized for a test
/// machine several servers share (RocksDB alone takes 2 GiB by default),
/// its telemetry is off, and its errors read plainly.
fn launch(binary: &OsStr, data: &Scratch, args: &[&OsStr], envs: &[(&str, String)]) -> Child {
    let stderr = std::fs::File::create(data.join(STDERR)).expect("a file for its error output");
    Command::new(binary)
        .arg("--no-logo")
        .args(args)
        .env("RESTATE_BASE_DIR", &**data)
        .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "128 MiB")
        .env("RESTATE_LOG_DISABLE_ANSI_CODES", "true")
        // Reports nothing to Restate's telemetry.
        .env("RESTATE_DISABLE_TELEMETRY", "true")
        .envs(envs.iter().map(|(name, value)| (*name, value.as_str())))
        .stdout(Stdio::null())
        .stderr(stderr)
        .kill_on_drop(true)
        .spawn()
        .expect("restate-server starts")
}

/// The file in a server's data folder that holds its standard error.
const STDERR: &str = "stderr.log";

/// How many of its last lines of error output a failure shows.
const TAIL_LINES: usize = 20;

impl Server {
    /// Tells the server of the service on 127.0.0.1 at `port`, trying
    /// again until the service answers the server's discovery.
    pub async fn register(&self, port: u16) {
        let http = http();
        let url = format!("http://127.0.0.1:{}/deployments", self.admin);
        let body = serde_json::json!({"uri": format!("http://127.0.0.1:{port}")});
        until("the deployment to register", || async {
            let answer = http.post(&url).json(&body).send().await.ok()?;
            answer.status().is_success().then_some(())
        })
        .await;
    }

    /// Rows of a query of Restate's introspection tables.
    pub async fn query(&self, sql: &str) -> serde_json::Value {
        let url = format!("http://127.0.0.1:{}/query", self.admin);
        http()
            .post(&url)
            .header("accept", "application/json")
            .json(&serde_json::json!({ "query": sql }))
            .send()
            .await
            .expect("the admin API answers")
            .json()
            .await
            .expect("rows of JSON")
    }

    /// The bytes the server keeps for the run of `service` keyed `key`:
    /// the journal of its `run` invocation and its state, as Restate's
    /// introspection tables count them.
    pub async fn journal_bytes(&self, service: &str, key: &str) -> u64 {
        let key = key.replace('\'', "''");
        let mut total = 0;
        for sql in [
            format!(
                "SELECT SUM(j.raw_length) AS bytes FROM sys_journal j JOIN sys_invocation i ON j.id = i.id WHERE i.target_service_name = '{service}' AND i.target_service_key = '{key}' AND i.target_handler_name = 'run'"
            ),
            format!(
                "SELECT SUM(value_length) AS bytes FROM state WHERE service_name = '{service}' AND service_key = '{key}'"
            ),
        ] {
            let answer = self.query(&sql).await;
            total += answer["rows"][0]["bytes"].as_u64().unwrap_or(0);
        }
        total
    }

    /// Waits until the server answers its health checks. `Err` says why
    /// not: it exited first, or it neither answered nor exited within
    /// [`READY_WITHIN`].
    async fn ready(&mut self) -> Result<(), String> {
        let http = http();
        let checks = [
            format!("http://127.0.0.1:{}/health", self.admin),
            format!("http://127.0.0.1:{}/restate/health", self.ingress),
        ];
        let deadline = Instant::now() + READY_WITHIN;
        loop {
            let mut up = true;
            for url in &checks {
                // Whatever holds the port may never answer.
                let answer = http.get(url).timeout(CHECK_WITHIN).send().await;
                up &= answer.is_ok_and(|answer| answer.status().is_success());
            }
            // Looked at after the checks too: a server that exits because
            // its port was taken leaves the checks to whatever took it.
            if let Ok(Some(status)) = self.process.try_wait() {
                return Err(format!("it exited ({status}):\n{}", self.stderr_tail()));
            }
            if up {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "it did not answer its health checks within {READY_WITHIN:?}:\n{}",
                    self.stderr_tail()
                ));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last [`TAIL_LINES`] lines the server wrote to its standard error.
    fn stderr_tail(&self) -> String {
        let written = std::fs::read_to_string(self.data.join(STDERR)).unwrap_or_default();
        let lines: Vec<&str> = written.lines().collect();
        lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
    }
}

impl Server {
    /// Kills the node, as a machine's death does.
    pub async fn kill(&mut self) {
        let _ = self.process.kill().await;
    }
}

impl Drop for Server {
    /// Kills the server and waits (a little) for it to end, so that it
    /// writes nothing into its folder while the folder is removed after.
    fn drop(&mut self) {
        let _ = self.process.start_kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        while matches!(self.process.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

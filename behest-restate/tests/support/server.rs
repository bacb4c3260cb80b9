//! Starting a `restate-server` on free ports of 127.0.0.1, for the tests
//! and the bench, and the scratch folders they keep their data in.

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};

/// A free TCP port of 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
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
    _data: Scratch,
    /// The port of its ingress, where services are called.
    pub ingress: u16,
    /// The port of its admin API, where deployments are registered.
    pub admin: u16,
}

/// Starts the `restate-server` at `binary`, keeping its data in a scratch
/// folder named for `name`, on free ports.
pub fn spawn_server(binary: &OsStr, name: &str) -> Server {
    let data = Scratch::new(&format!("{name}-server"));
    let (ingress, admin, node) = (free_port(), free_port(), free_port());
    let process = Command::new(binary)
        .arg("--no-logo")
        .env("RESTATE_BASE_DIR", &*data)
        // Its caches are sized for production (2 GiB for RocksDB alone);
        // several servers share the test machine.
        .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "128 MiB")
        .env("RESTATE_LISTEN_MODE", "tcp")
        .env(
            "RESTATE_INGRESS__BIND_ADDRESS",
            format!("127.0.0.1:{ingress}"),
        )
        .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
        .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{node}"))
        .env(
            "RESTATE_ADVERTISED_ADDRESS",
            format!("http://127.0.0.1:{node}"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("restate-server starts");
    Server {
        process,
        _data: data,
        ingress,
        admin,
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

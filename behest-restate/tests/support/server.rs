//! Starting a `restate-server` on free ports of 127.0.0.1, for the tests
//! and the bench.

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;

use tokio::process::{Child, Command};

/// A free TCP port of 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free port")
}

/// The `restate-server` at `binary`, keeping its data in `dir`, on free
/// ports; its ingress and admin ports. The process ends with the handle.
pub fn spawn_server(binary: &OsStr, dir: &Path) -> (Child, u16, u16) {
    let (ingress, admin, node) = (free_port(), free_port(), free_port());
    let server = Command::new(binary)
        .arg("--no-logo")
        .env("RESTATE_BASE_DIR", dir)
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
    (server, ingress, admin)
}

//! Arbitrary bytes as the lines a client writes to a behest MCP server
//! (after a valid `initialize`), over an in-memory pipe: the server answers
//! or refuses what it can read, never panics, and ends when the client
//! closes its side.

use std::sync::OnceLock;
use std::time::Duration;

use behest::mcp::McpServer;
use behest::{ToolRegistry, ToolRuntime};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Echo the text.
#[behest::tool]
fn echo(text: String) -> String {
    text
}

fn runtime() -> &'static ToolRuntime {
    static RUNTIME: OnceLock<ToolRuntime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        ToolRuntime::new(ToolRegistry::new().with(Echo).expect("the tool registers"))
    })
}

const INITIALIZE: &str = concat!(
    r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#,
    "\n",
    r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    "\n"
);

pub fn check(data: &[u8]) {
    let server = McpServer::new(runtime().clone()).expect("the tools export");
    super::block_on(async move {
        let (client, server_side) = tokio::io::duplex(1 << 20);
        let serving = tokio::spawn(server.serve_on(server_side));
        let (mut reading, mut writing) = tokio::io::split(client);
        let drain = tokio::spawn(async move {
            let mut answers = Vec::new();
            let _ = reading.read_to_end(&mut answers).await;
            answers
        });
        let written = async {
            writing.write_all(INITIALIZE.as_bytes()).await?;
            writing.write_all(data).await?;
            writing.write_all(b"\n").await?;
            writing.shutdown().await
        };
        let _ = written.await;
        drop(writing);
        let ended = tokio::time::timeout(Duration::from_secs(10), serving)
            .await
            .expect("the server ends when the client closes");
        ended.expect("the server does not panic").ok();
        let answers = drain.await.expect("the reader does not panic");
        // The session started: `initialize` was answered.
        let text = String::from_utf8_lossy(&answers);
        assert!(
            text.lines()
                .next()
                .is_some_and(|line| line.contains(r#""id":0"#) && line.contains("result")),
            "initialize was not answered: {text}"
        );
    });
}

//! A behest runtime as an MCP server: two tools, every call validated
//! against its schema before it runs.
//!
//! - `cargo run --example mcp_server --features mcp` serves over stdio, for
//!   a client that starts it (Claude Desktop, the MCP Inspector, an SDK's
//!   stdio client);
//! - `cargo run --example mcp_server --features mcp -- --http 127.0.0.1:8000`
//!   serves streamable HTTP at `http://127.0.0.1:8000/mcp`.
//!
//! With `--http`, the endpoint checks the `Host` header against DNS
//! rebinding and caps request bodies; set `BEHEST_MCP_TOKEN` to require
//! `Authorization: Bearer <token>` too.

use behest::mcp::http::{router, HttpOptions};
use behest::mcp::McpServer;
use behest::prelude::*;

/// Count the words of a text.
#[tool(read_only)]
fn word_count(
    /// The text to count.
    text: String,
) -> usize {
    text.split_whitespace().count()
}

/// Tell where a tool's long work stands while it runs.
#[tool]
async fn countdown(
    /// Seconds to count down from (at most 10).
    seconds: u32,
    #[ctx] cx: ToolContext,
) -> String {
    let seconds = seconds.clamp(1, 10);
    for left in (0..seconds).rev() {
        tokio::select! {
            () = cx.cancellation().cancelled() => return format!("stopped at {left}"),
            () = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
        }
        let done = f64::from(seconds - left);
        cx.report_progress(Progress::new(done, Some(f64::from(seconds))));
    }
    "liftoff".to_owned()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new().with(WordCount)?.with(Countdown)?;
    let server = McpServer::new(ToolRuntime::new(registry))?
        .named("behest-example", env!("CARGO_PKG_VERSION"))
        .instructions("Count words, or count down.");
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, addr] if flag == "--http" => {
            let mut options = HttpOptions::default();
            options.bearer_token = std::env::var("BEHEST_MCP_TOKEN").ok();
            let listener = tokio::net::TcpListener::bind(addr.as_str()).await?;
            eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
            axum::serve(listener, router(server, "/mcp", &options)).await?;
        }
        [] => server.serve_stdio().await?,
        _ => eprintln!("usage: mcp_server [--http ADDR]"),
    }
    Ok(())
}

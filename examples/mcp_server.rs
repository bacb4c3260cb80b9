//! The quickstart's tools as an MCP server: every call validated against
//! its schema before it runs.
//!
//! - `cargo run --example mcp_server --features mcp` serves over stdio, for
//!   a client that starts it (Claude Desktop, the MCP Inspector, an SDK's
//!   stdio client);
//! - `cargo run --example mcp_server --features mcp -- --http 8000`
//!   serves streamable HTTP at `http://127.0.0.1:8000/mcp`, reachable from
//!   this machine only.
//!
//! With `--http`, the endpoint checks the `Host` and `Origin` headers
//! against DNS rebinding and caps request bodies; set `BEHEST_MCP_TOKEN`
//! to require `Authorization: Bearer <token>` too.
//!
//! A desktop client starts it from its configuration, for Claude Desktop
//! `claude_desktop_config.json` (build it first with `cargo build
//! --example mcp_server --features mcp`):
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "behest-example": {
//!       "command": "/path/to/behest/target/debug/examples/mcp_server"
//!     }
//!   }
//! }
//! ```

use behest::mcp::http::{serve_http_local, HttpOptions};
use behest::mcp::McpServer;
use behest::prelude::*;

/// Get the current weather for a city.
#[tool(read_only)]
async fn get_weather(
    /// City name, e.g. "Paris".
    city: String,
) -> String {
    format!("Sunny and 21 °C in {city}.")
}

/// Convert an amount of euros to US dollars.
#[tool]
fn euros_to_dollars(amount: f64) -> f64 {
    (amount * 1.08 * 100.0).round() / 100.0
}

/// Count down, telling the client where it stands as it goes.
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
    let registry = ToolRegistry::new()
        .with(GetWeather)?
        .with(EurosToDollars)?
        .with(Countdown)?;
    let runtime = ToolRuntime::new(registry);
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, port] if flag == "--http" => {
            let port: u16 = port.parse()?;
            let mut options = HttpOptions::default();
            options.bearer_token = std::env::var("BEHEST_MCP_TOKEN").ok();
            eprintln!("serving MCP at http://127.0.0.1:{port}/mcp");
            serve_http_local(runtime, port, &options).await?;
        }
        [] => {
            McpServer::new(runtime)?
                .named("behest-example", env!("CARGO_PKG_VERSION"))
                .instructions("Weather, euros to dollars, and a countdown.")
                .serve_stdio()
                .await?;
        }
        _ => {
            eprintln!("usage: mcp_server [--http PORT]");
            std::process::exit(2);
        }
    }
    Ok(())
}

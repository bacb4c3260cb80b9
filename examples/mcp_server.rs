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
//! `book_table` asks the user a question through the client (elicitation)
//! before it books, and the tools' `tracing` events reach the client as log
//! messages (`McpLogLayer`); clients that show neither still get answers.
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

use behest::mcp::http::{serve, HttpOptions};
use behest::mcp::{Elicitation, McpCaller, McpLogLayer, McpServer};
use behest::prelude::*;
use tracing_subscriber::layer::{Layer, SubscriberExt};

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

/// The guest's details, asked of the user.
#[behest::data(input)]
struct Guest {
    /// The name the table is booked under.
    name: String,
    /// How many people.
    people: u32,
}

/// Book a table at a restaurant, asking the user for the guest's details.
#[tool]
async fn book_table(
    /// The restaurant.
    restaurant: String,
    #[ctx] cx: ToolContext,
) -> Result<String, ToolError> {
    tracing::info!(%restaurant, "booking a table");
    let caller = cx
        .extension::<McpCaller>()
        .ok_or_else(|| ToolError::execution("book_table needs an MCP client to ask"))?;
    match caller
        .elicit::<Guest>(format!("Who is the table at {restaurant} for?"))
        .await?
    {
        Elicitation::Accepted(guest) => Ok(format!(
            "Booked {restaurant} for {} under {}.",
            guest.people, guest.name
        )),
        _ => Ok("Nothing booked: the user did not answer.".to_owned()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new()
        .with(GetWeather)?
        .with(EurosToDollars)?
        .with(Countdown)?
        .with(BookTable)?;
    // Tool calls' log events go to their MCP client (at the level it
    // sets); this process's own log to stderr (stdout is the protocol's
    // over stdio) at `info`, rmcp's at `warn`: its `trace` lines carry
    // every message, what users answer included.
    let own_log = tracing_subscriber::filter::Targets::new()
        .with_default(tracing::Level::INFO)
        .with_target("rmcp", tracing::Level::WARN);
    let subscriber = tracing_subscriber::registry().with(McpLogLayer).with(
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_filter(own_log),
    );
    tracing::subscriber::set_global_default(subscriber)?;
    // One server, whichever transport: the same name and instructions.
    let server = McpServer::new(ToolRuntime::new(registry))?
        .named("behest-example", env!("CARGO_PKG_VERSION"))
        .instructions("Weather, euros to dollars, and a countdown.");
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [flag, port] if flag == "--http" => {
            let port: u16 = port.parse()?;
            let mut options = HttpOptions::default();
            options.bearer_token = std::env::var("BEHEST_MCP_TOKEN").ok();
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
            // Port 0 takes a free one: this line names it.
            eprintln!("serving MCP at http://{}/mcp", listener.local_addr()?);
            serve(listener, server).options(&options).await?;
        }
        [] => server.serve_stdio().await?,
        _ => {
            eprintln!("usage: mcp_server [--http PORT]");
            std::process::exit(2);
        }
    }
    Ok(())
}

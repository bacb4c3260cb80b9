//! The MCP server the official Python SDK's client talks to in
//! `tests/mcp/server.rs`: a behest runtime over stdio, or over streamable HTTP
//! with `--http ADDR [--idle-ms N]` (it prints the address it listens on).

use std::time::Duration;

use behest::mcp::http::{router, HttpOptions};
use behest::mcp::{Elicitation, McpCaller, McpServer};
use behest::{tool, Progress, ToolContext, ToolRegistry, ToolRuntime};

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// The weather somewhere.
#[behest::data(output)]
struct Weather {
    city: String,
    celsius: f64,
    /// Rain expected, if known.
    rain: Option<bool>,
}

/// Forecast the weather of a city.
#[tool(read_only)]
fn forecast(city: String) -> Weather {
    Weather {
        city,
        celsius: 21.5,
        rain: None,
    }
}

/// Work in three steps, reporting progress.
#[tool]
async fn work(#[ctx] cx: ToolContext) -> &'static str {
    for step in 1..=3 {
        cx.report_progress(
            Progress::new(f64::from(step), Some(3.0)).with_message(format!("step {step}")),
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    "done"
}

/// Who the user says they are.
#[behest::data(input)]
struct Person {
    name: String,
    age: u32,
}

/// Ask who the user is, then have the client's model greet them.
#[tool]
async fn greet_user(#[ctx] cx: ToolContext) -> Result<String, behest::ToolError> {
    let caller = cx
        .extension::<McpCaller>()
        .cloned()
        .ok_or_else(|| behest::ToolError::execution("not called over MCP"))?;
    match caller.elicit::<Person>("Who are you?").await? {
        Elicitation::Accepted(person) => {
            let prompt = format!("Greet {} ({})", person.name, person.age);
            Ok(caller.sample(prompt, 50).await?)
        }
        _ => Ok("no answer".to_owned()),
    }
}

/// Look a city up, saying so in the logs (which reach the client that
/// called, at the level it set).
#[tool]
async fn look_up(city: String) -> String {
    tracing::info!(city = %city, "looking up");
    format!("found {city}")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    use tracing_subscriber::layer::SubscriberExt;
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(behest::mcp::McpLogLayer),
    )?;
    let registry = ToolRegistry::new()
        .with(Add)?
        .with(Forecast)?
        .with(Work)?
        .with(GreetUser)?
        .with(LookUp)?;
    let server = McpServer::new(ToolRuntime::new(registry))?.named("behest-test", "1.0.0");
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (Some("--http"), Some(addr)) => {
            let mut options = HttpOptions::default();
            // `--idle-ms N`: a shortened idle timeout, for the idle test.
            if let (Some("--idle-ms"), Some(ms)) = (args.next().as_deref(), args.next()) {
                options.idle_timeout = Some(Duration::from_millis(ms.parse()?));
            }
            let listener = tokio::net::TcpListener::bind(addr).await?;
            println!("{}", listener.local_addr()?);
            let app = router(server, "/mcp", &options);
            axum::serve(listener, app).await?;
        }
        _ => server.serve_stdio().await?,
    }
    Ok(())
}

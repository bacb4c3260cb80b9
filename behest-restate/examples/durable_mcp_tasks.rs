//! An MCP server whose long tool answers with durable tasks: the task runs
//! as the Restate workflow `DurableTasks`, so it goes on after this
//! process dies and starts again, and any replica of the server answers
//! `tasks/get` for it.
//!
//! Try it: Restate's server from npm (the version behest-restate is tested
//! with), then this example, which serves the tasks' workflow on
//! 127.0.0.1:9080 (registering it with the server) and MCP on
//! 127.0.0.1:8000/mcp:
//!
//! ```text
//! npx @restatedev/restate-server@1.7.12
//! cargo run -p behest-restate --features mcp --example durable_mcp_tasks
//! ```
//!
//! A client that declares the tasks extension (behest's `McpClient` does)
//! gets a task for `render_report`; stop the example while the report
//! renders and start it again: the task goes on and completes, and its
//! result is read through either port the example serves MCP on (8000 and
//! 8001, two replicas). The tool sees the task id as its idempotency key,
//! the same each time the call is played again.

use std::time::Duration;

use behest::mcp::{McpServer, McpTasks, TaskSupport};
use behest::{tool, ToolContext, ToolRegistry, ToolRuntime};
use behest_restate::{DurableTasks, RestateTasks};

/// Render the monthly report (slow).
#[tool(read_only)]
async fn render_report(month: String, #[ctx] cx: ToolContext) -> String {
    let key = cx.idempotency_key().unwrap_or("none").to_owned();
    tokio::time::sleep(Duration::from_secs(20)).await;
    format!("the report for {month} (render {key})")
}

fn runtime() -> Result<ToolRuntime, Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new().with(RenderReport)?;
    Ok(ToolRuntime::builder(registry)
        .tool_timeout("render_report", Duration::from_secs(120))
        .build())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Where the tools run: the workflow's endpoint, registered with Restate.
    let endpoint = restate_sdk::endpoint::Endpoint::builder()
        .bind(DurableTasks::new(runtime()?).definition())
        .build();
    let serving = tokio::spawn(behest_restate::serve_endpoint(
        endpoint,
        ([127, 0, 0, 1], 9080).into(),
    ));
    behest_restate::register("http://127.0.0.1:9070", "http://127.0.0.1:9080").await?;
    // Two replicas of the MCP server, the tasks kept in Restate.
    for port in [8000, 8001] {
        let tasks = McpTasks::new()
            .tool("render_report", TaskSupport::Required)
            .backend(RestateTasks::new("http://127.0.0.1:8080"));
        let server = McpServer::new(runtime()?)?.tasks(tasks)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("serving MCP at http://127.0.0.1:{port}/mcp");
        tokio::spawn(async move { behest::mcp::http::serve(listener, server).await });
    }
    serving.await??;
    Ok(())
}

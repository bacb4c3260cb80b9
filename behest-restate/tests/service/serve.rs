//! The durable-run tests' service: `behest-restate-test-service PORT
//! EXTERNAL_DEADLINE_MS [MODE]` serves the test agent as Restate's
//! `DurableAgent` on 127.0.0.1:PORT, in MODE (`agent::Mode::parse`), and
//! (with the `mcp` feature) its tools as durable MCP tasks
//! (`DurableTasks`).

mod agent;

use std::time::Duration;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let mut args = std::env::args().skip(1);
    let port: u16 = args
        .next()
        .and_then(|port| port.parse().ok())
        .expect("a port");
    let deadline = args
        .next()
        .and_then(|ms| ms.parse().ok())
        .map_or(Duration::from_secs(600), Duration::from_millis);
    let mode = args.next();
    let agent = match agent::Mode::parse(mode.as_deref()) {
        // Its tools are those of the MCP server `BEHEST_TEST_MCP_URL`.
        #[cfg(feature = "mcp")]
        agent::Mode::McpTask => {
            let url = std::env::var("BEHEST_TEST_MCP_URL").expect("BEHEST_TEST_MCP_URL");
            let client = behest::mcp::McpClient::http(&url)
                .await
                .expect("the MCP server answers");
            let mut registry = behest::ToolRegistry::new();
            client
                .import_into(&mut registry, &behest::mcp::ImportOptions::default())
                .await
                .expect("its tools import");
            // The imported tools keep the connection.
            drop(client);
            agent::mcp_agent(registry)
        }
        mode => agent::agent(deadline, mode),
    };
    #[cfg(feature = "mcp")]
    let tasks = behest_restate::DurableTasks::new(agent.runtime().clone()).definition();
    let endpoint = restate_sdk::endpoint::Endpoint::builder()
        .bind(behest_restate::DurableAgent::new(agent).definition());
    #[cfg(feature = "mcp")]
    let endpoint = endpoint.bind(tasks);
    let address = ([127, 0, 0, 1], port).into();
    if let Err(error) = behest_restate::serve_endpoint(endpoint.build(), address).await {
        eprintln!("the test service cannot serve on port {port}: {error}");
        std::process::exit(1);
    }
}

//! Connects to a remote MCP server that asks for OAuth, as a command-line
//! agent does: the first run prints the authorization URL for you to open,
//! takes the browser's redirect on a loopback port, and keeps the tokens in
//! `mcp-tokens.json` (owner-only); later runs use them, refreshed as they
//! run out, without asking again.
//!
//! ```text
//! cargo run --example mcp_oauth_client --features mcp -- https://mcp.example.com/mcp
//! ```
//!
//! Everything else (the server's 401 and its protected-resource metadata,
//! the authorization server's metadata, registering the client, PKCE, the
//! scopes, a step-up when a tool needs more) is `McpOAuth`'s. It lists the
//! server's tools and exits.

use std::time::Duration;

use axum::extract::State;
use axum::http::Uri;
use axum::routing::get;
use behest::mcp::{ConnectOptions, FileTokenStore, McpClient, McpOAuth};
use tokio::sync::mpsc;

/// Where the browser comes back.
const CALLBACK_PORT: u16 = 8976;

/// Waits on the loopback port for the browser's redirect after the user
/// opened `url`: the redirect's full URL, or why none came.
async fn authorize_in_browser(url: String) -> Result<String, String> {
    let (back, mut came) = mpsc::channel::<String>(1);
    let app = axum::Router::new()
        .route(
            "/callback",
            get(
                |State(back): State<mpsc::Sender<String>>, uri: Uri| async move {
                    let _ = back
                        .send(format!("http://127.0.0.1:{CALLBACK_PORT}{uri}"))
                        .await;
                    "Authorized: you can close this tab."
                },
            ),
        )
        .with_state(back);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", CALLBACK_PORT))
        .await
        .map_err(|error| format!("port {CALLBACK_PORT} for the redirect: {error}"))?;
    // Listening before the user is sent: the browser may come back at once.
    eprintln!("Open this URL in your browser to authorize:\n\n  {url}\n");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    let answer = tokio::time::timeout(Duration::from_secs(300), came.recv()).await;
    server.abort();
    match answer {
        Ok(Some(redirect)) => Ok(redirect),
        _ => Err("no redirect came back within 5 minutes".to_owned()),
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Some(url) = std::env::args().nth(1) else {
        eprintln!("usage: mcp_oauth_client URL (an MCP server that asks for OAuth)");
        std::process::exit(2);
    };
    let oauth = McpOAuth::new(
        format!("http://127.0.0.1:{CALLBACK_PORT}/callback"),
        authorize_in_browser,
    )
    .client_name("behest example")
    .store(FileTokenStore::new("mcp-tokens.json"));
    let client = McpClient::http_with(&url, &ConnectOptions::default().oauth(oauth)).await?;
    for tool in client.peer().list_all_tools().await? {
        println!("{}: {}", tool.name, tool.description.unwrap_or_default());
    }
    Ok(())
}

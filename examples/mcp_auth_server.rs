//! An MCP server over streamable HTTP that knows who calls it: each user
//! has a bearer token, the endpoint admits only those, each session stays
//! with the token that opened it, and the tool answers with the caller's
//! own notes.
//!
//! - `cargo run --example mcp_auth_server --features mcp` serves on a free
//!   port, calls the tool as alice and as bob with behest's own client,
//!   shows that a wrong token is refused, and exits;
//! - `cargo run --example mcp_auth_server --features mcp -- --port 8000`
//!   serves `http://127.0.0.1:8000/mcp` until stopped. The tokens are
//!   `alice-token` and `bob-token`, or `BEHEST_MCP_TOKENS` as
//!   `user:token,user:token`.
//!
//! An OAuth client (Claude Code, the SDKs, the Inspector) that calls
//! without a token is told where to get one: each 401 carries
//! `WWW-Authenticate: Bearer resource_metadata="…"`, naming the protected-
//! resource metadata (RFC 9728) served at
//! `/.well-known/oauth-protected-resource/mcp`, which names the
//! authorization server that issues the tokens (`BEHEST_MCP_AUTH_SERVER`,
//! by default `http://127.0.0.1:9000`, the issuer you run).
//!
//! Claude Code adds it with
//!
//! ```text
//! claude mcp add --transport http notes http://127.0.0.1:8000/mcp \
//!   --header "Authorization: Bearer alice-token"
//! ```
//!
//! and Cursor (`~/.cursor/mcp.json`) or any client reading an `mcp.json`
//! with
//!
//! ```json
//! {
//!   "mcpServers": {
//!     "notes": {
//!       "url": "http://127.0.0.1:8000/mcp",
//!       "headers": { "Authorization": "Bearer alice-token" }
//!     }
//!   }
//! }
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use std::future::IntoFuture;

use behest::mcp::http::{serve, HttpOptions, ProtectedResource};
use behest::mcp::{ConnectOptions, McpCaller, McpClient, McpServer};
use behest::prelude::*;

/// Who each token belongs to.
struct Users {
    by_token: HashMap<String, String>,
}

/// Read the caller's own notes.
#[tool(read_only)]
async fn my_notes(#[ctx] cx: ToolContext, #[ctx] users: State<Users>) -> Result<String, ToolError> {
    let user = cx
        .extension::<McpCaller>()
        .and_then(McpCaller::bearer_token)
        .and_then(|token| users.by_token.get(token));
    match user.map(String::as_str) {
        Some("alice") => Ok("alice's notes: buy bread; call Bob".to_owned()),
        Some(user) => Ok(format!("{user} has no notes yet")),
        None => Err(ToolError::execution("no signed-in caller")),
    }
}

fn users() -> Users {
    let listed = std::env::var("BEHEST_MCP_TOKENS")
        .unwrap_or_else(|_| "alice:alice-token,bob:bob-token".to_owned());
    let by_token = listed
        .split(',')
        .filter_map(|pair| pair.split_once(':'))
        .map(|(user, token)| (token.trim().to_owned(), user.trim().to_owned()))
        .collect();
    Users { by_token }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let users = users();
    let tokens: Arc<Vec<String>> = Arc::new(users.by_token.keys().cloned().collect());
    let runtime = ToolRuntime::builder(ToolRegistry::new().with(MyNotes)?)
        .state(users)
        .build();
    let server = McpServer::new(runtime)?
        .named("notes", env!("CARGO_PKG_VERSION"))
        .instructions("Each user's own notes; sign in with your bearer token.");

    let args: Vec<String> = std::env::args().skip(1).collect();
    let port = match args.as_slice() {
        [flag, port] if flag == "--port" => port.parse()?,
        [] => 0,
        _ => {
            eprintln!("usage: mcp_auth_server [--port PORT]");
            std::process::exit(2);
        }
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    let issuer = std::env::var("BEHEST_MCP_AUTH_SERVER")
        .unwrap_or_else(|_| "http://127.0.0.1:9000".to_owned());
    let options = HttpOptions::default()
        .bearer_check(move |presented| tokens.iter().any(|token| token == presented))
        .protected_resource(ProtectedResource::new(&url, issuer).scopes(["notes:read"]));
    let serving = serve(listener, server).options(&options).into_future();
    if port != 0 {
        eprintln!("serving MCP at {url}");
        serving.await?;
        return Ok(());
    }

    tokio::spawn(serving);
    // What an OAuth client without a token is told, and then reads.
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let http = reqwest::Client::new();
    let unauthorized = http.post(&url).send().await?;
    let challenge = unauthorized.headers()["www-authenticate"]
        .to_str()?
        .to_owned();
    println!("without a token: {} {challenge}", unauthorized.status());
    let metadata_url = challenge
        .split("resource_metadata=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .ok_or("the 401 names no resource_metadata")?;
    let metadata: serde_json::Value = http.get(metadata_url).send().await?.json().await?;
    println!("its metadata: {metadata}");
    for token in ["alice-token", "bob-token"] {
        let client =
            McpClient::http_with(&url, &ConnectOptions::default().bearer_token(token)).await?;
        let result = client
            .peer()
            .call_tool(behest::mcp::rmcp::model::CallToolRequestParams::new(
                "my_notes",
            ))
            .await?;
        let text = result
            .content
            .first()
            .and_then(|content| content.as_text())
            .map(|text| text.text.clone())
            .unwrap_or_default();
        println!("{token}: {text}");
    }
    let refused =
        McpClient::http_with(&url, &ConnectOptions::default().bearer_token("guess")).await;
    println!(
        "a wrong token: {}",
        if refused.is_err() {
            "refused"
        } else {
            "let in!"
        }
    );
    Ok(())
}

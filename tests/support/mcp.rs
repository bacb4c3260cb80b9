//! What the MCP tests over HTTP share: serving on 127.0.0.1, a raw
//! client, and a server's tools imported.

use std::net::SocketAddr;

/// Serves `app` on a free port of 127.0.0.1 for the rest of the test.
pub async fn serve_app(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// An HTTP client for raw requests (its TLS needs a crypto provider, even
/// for plain HTTP).
pub fn http_client() -> reqwest::Client {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Every tool of `client`'s server, imported under its own name.
pub async fn imported(client: &behest::mcp::McpClient) -> behest::ToolRegistry {
    let mut registry = behest::ToolRegistry::new();
    client
        .import_into(&mut registry, &behest::mcp::ImportOptions::default())
        .await
        .unwrap();
    registry
}

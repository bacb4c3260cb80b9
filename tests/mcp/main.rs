//! The MCP server and client, against the official SDKs, FastMCP and the
//! Inspector where they are installed, and its sessions.
#![cfg(feature = "mcp")]

#[path = "../mcp_support/mod.rs"]
mod mcp_support;

mod server;
mod sessions;

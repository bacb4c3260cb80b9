//! The MCP server and client, against the official SDKs, FastMCP and the
//! Inspector where they are installed, and its sessions.
#![cfg(feature = "mcp")]

#[path = "../support/mcp.rs"]
mod mcp_support;

mod answers;
mod catalog;
mod oauth;
mod server;
mod sessions;
mod tasks;

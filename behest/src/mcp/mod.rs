//! MCP through rmcp, the official Rust SDK: serve a [`ToolRuntime`] as an
//! MCP server ([`McpServer`], over stdio, any byte stream or — with the
//! `mcp-http` feature — streamable HTTP), and use a remote server's tools
//! like local ones ([`import`]).
//!
//! rmcp speaks JSON-RPC and the transports; behest keeps what it adds to a
//! tool call: every call validated against its schema, argument errors
//! the model can fix (results with `isError`, as MCP 2025-11-25 asks),
//! timeouts, panic isolation, progress and cancellation.
//!
//! [`ToolRuntime`]: crate::ToolRuntime

mod ask;
mod catalog;
mod catalog_wire;
pub mod client;
#[cfg(feature = "mcp-http")]
mod guard;
#[cfg(feature = "mcp-http")]
pub mod http;
mod log;
#[cfg(feature = "mcp-http")]
mod options;
#[cfg(feature = "mcp-http")]
mod owners;
mod rounds;
#[cfg(feature = "mcp-http")]
mod serve;
mod server;
#[cfg(feature = "mcp-http")]
mod sessions;
mod uri_template;

pub use ask::{Elicitation, McpAskError};
pub use catalog::{
    CatalogError, McpCatalog, Prompt, PromptArguments, PromptContent, PromptMessage, PromptRole,
    Resource, ResourceContent, ResourceRead,
};
pub use client::{
    import, ConnectOptions, FilterFn, ImportOptions, McpClient, McpClientError, McpTool, RenameFn,
};
pub use log::McpLogLayer;
pub use server::{serve_stdio, McpCaller, McpServeError, McpServer, NEWEST_PROTOCOL_VERSION};
pub use uri_template::{UriTemplate, UriTemplateError};

/// rmcp, at the version behest builds on: its transports, client and
/// protocol types, for what behest does not wrap.
pub use rmcp;

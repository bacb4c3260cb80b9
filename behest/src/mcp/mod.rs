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

mod answers;
mod ask;
mod call_result;
mod catalog;
mod catalog_wire;
pub mod client;
mod client_catalog;
mod client_tasks;
#[cfg(feature = "mcp-http")]
mod guard;
#[cfg(feature = "mcp-http")]
pub mod http;
mod log;
#[cfg(feature = "mcp-oauth")]
mod oauth;
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
mod task_backend;
mod task_store;
mod tasks;
pub(crate) mod uri_template;

pub use answers::{FormAnswer, FormRequest};
pub use ask::{Elicitation, McpAskError};
pub use catalog::{
    CatalogError, McpCatalog, Prompt, PromptArguments, PromptContent, PromptMessage, PromptRole,
    Resource, ResourceContent, ResourceRead,
};
pub use client::{
    import, ConnectOptions, FilterFn, ImportOptions, McpClient, McpClientError, McpTool, RenameFn,
};
pub use client_catalog::{ListedArgument, ListedPrompt, ListedResource};
pub use log::McpLogLayer;
#[cfg(feature = "mcp-oauth")]
pub use oauth::{FileTokenStore, McpOAuth, McpTokenStore, MemoryTokenStore};
pub use server::{serve_stdio, McpCaller, McpServeError, McpServer, NEWEST_PROTOCOL_VERSION};
pub use task_backend::{McpTaskBackend, McpTaskCall, McpTaskEnd, McpTaskStatus, McpTaskView};
pub use tasks::{McpTasks, McpTasksError, TaskSupport};
pub use uri_template::{UriTemplate, UriTemplateError, MAX_URI_BYTES};

/// Makes a function an MCP resource: `#[resource("docs://readme")]` at a
/// fixed URI, or `#[resource("orders://{id}")]` at the URIs of a URI
/// template whose variables are the function's parameters (each parsed
/// from the URI with `FromStr`). The function (sync or async) returns text
/// (`String`, `&'static str`), a [`ResourceContent`], or a `Result` of one
/// whose error becomes a [`ToolError`](crate::ToolError). Its doc comment
/// is the description; `name` (the function's by default), `title`,
/// `mime_type` and `description` are arguments.
///
/// The macro makes a unit type named after the function (`fn order` makes
/// `Order`) that converts into a [`Resource`]: give it to
/// [`McpCatalog::resource`]. When the crate builds, a template that cannot
/// be matched ([`UriTemplate::parse`]'s rules), a variable without a
/// parameter and a parameter without a variable are errors at the
/// attribute.
///
/// ```
/// use behest::mcp::{prompt, resource, McpCatalog, PromptMessage};
/// use behest::ToolError;
///
/// /// An order, as JSON.
/// #[resource("orders://{id}", mime_type = "application/json")]
/// async fn order(id: u32) -> Result<String, ToolError> {
///     Ok(format!("{{\"id\": {id}, \"state\": \"shipped\"}}"))
/// }
///
/// /// Review a change.
/// #[prompt]
/// fn review(
///     /// The diff to review.
///     change: String,
///     /// What to look at first.
///     focus: Option<String>,
/// ) -> Vec<PromptMessage> {
///     let focus = focus.unwrap_or_else(|| "correctness".to_owned());
///     vec![PromptMessage::user(format!("Review this for {focus}:\n{change}"))]
/// }
///
/// let catalog = McpCatalog::new().resource(Order)?.prompt(Review)?;
/// # Ok::<(), behest::mcp::CatalogError>(())
/// ```
#[cfg(feature = "macros")]
#[doc(inline)]
pub use behest_macros::resource;

/// Makes a function an MCP prompt: its parameters are the prompt's
/// arguments (`String` required, `Option<String>` optional), each
/// described by its doc comment; it returns `Vec<PromptMessage>`, a
/// [`PromptMessage`], a `String` (the user's message) or a `Result` of
/// one. The function's doc comment is the prompt's description, which a
/// prompt must have (an error when the crate builds, without). `name` (the
/// function's by default), `title` and `description` are arguments. The
/// macro makes a unit type named after the function that converts into a
/// [`Prompt`], as [`resource`] does; its example shows both.
#[cfg(feature = "macros")]
#[doc(inline)]
pub use behest_macros::prompt;

/// rmcp, at the version behest builds on: its transports, client and
/// protocol types, for what behest does not wrap.
pub use rmcp;

//! A [`ToolRuntime`] as an MCP server: `tools/list` from the registry (as
//! [`providers::mcp`](crate::providers::mcp) writes it), `tools/call`
//! through the runtime's one entry point.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, ListToolsResult,
    PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::context::ProgressSink;
use crate::providers::{self, ExportError};
use crate::runtime::{CallOptions, ToolCall, ToolCallResult, ToolRuntime};
use crate::tool::ToolError;

/// How many tools a `tools/list` page holds unless set.
const PAGE_SIZE: usize = 100;

/// How long a call cancelled by the client may take to stop on its own
/// before its future is dropped.
const CANCEL_GRACE: Duration = Duration::from_secs(2);

/// A [`ToolRuntime`] served over MCP: every tool of its registry, with its
/// limits, timeouts and state. Cheap to clone (one per HTTP session).
///
/// ```no_run
/// use behest::mcp::McpServer;
/// use behest::{ToolRegistry, ToolRuntime};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let runtime = ToolRuntime::new(ToolRegistry::new());
/// McpServer::new(runtime)?.named("my-tools", "1.0.0").serve_stdio().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct McpServer {
    runtime: ToolRuntime,
    tools: Arc<Vec<Tool>>,
    implementation: Implementation,
    instructions: Option<String>,
    page_size: usize,
    cancel_grace: Duration,
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.tools.len())
            .field("name", &self.implementation.name)
            .field("page_size", &self.page_size)
            .finish_non_exhaustive()
    }
}

impl McpServer {
    /// A server of `runtime`'s tools, named `behest` with behest's version
    /// until [`named`](Self::named). A tool MCP cannot list (a name it
    /// refuses) is an error listing every such tool.
    pub fn new(runtime: ToolRuntime) -> Result<Self, ExportError> {
        let export = providers::mcp::tools(runtime.registry())?;
        let tools = export
            .tools
            .into_iter()
            .map(|tool| {
                // Written by `providers::mcp`, so rmcp's type reads it.
                serde_json::from_value::<Tool>(tool).expect("an MCP tool declaration")
            })
            .collect();
        Ok(Self {
            runtime,
            tools: Arc::new(tools),
            implementation: Implementation::new("behest", env!("CARGO_PKG_VERSION")),
            instructions: None,
            page_size: PAGE_SIZE,
            cancel_grace: CANCEL_GRACE,
        })
    }

    /// The name and version clients see in `initialize`.
    #[must_use]
    pub fn named(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.implementation = Implementation::new(name, version);
        self
    }

    /// Instructions for the client's model, sent in `initialize`.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// How many tools a `tools/list` page holds (default 100).
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// How long a call the client cancelled may run on to stop on its own
    /// (it sees its cancellation token) before it is dropped. Default 2 s.
    #[must_use]
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// The runtime served.
    pub fn runtime(&self) -> &ToolRuntime {
        &self.runtime
    }

    /// Serves one client over stdin and stdout until it disconnects.
    pub async fn serve_stdio(self) -> Result<(), McpServeError> {
        self.run((tokio::io::stdin(), tokio::io::stdout())).await
    }

    /// Serves one client over any byte stream (a socket, a
    /// `tokio::io::duplex` end) until it disconnects.
    pub async fn serve_on<T>(self, stream: T) -> Result<(), McpServeError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        self.run(stream).await
    }

    /// Serves one client over any rmcp transport until it disconnects.
    async fn run<T, E, A>(self, transport: T) -> Result<(), McpServeError>
    where
        T: rmcp::transport::IntoTransport<RoleServer, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        let running = self
            .serve(transport)
            .await
            .map_err(|error| McpServeError(format!("the MCP session did not start: {error}")))?;
        running
            .waiting()
            .await
            .map_err(|error| McpServeError(format!("the MCP session failed: {error}")))?;
        Ok(())
    }

    /// One call, with the client's progress token and cancellation.
    async fn call(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> ToolCallResult {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call_id = context.id.to_string();
        let call = ToolCall::new(call_id.clone(), request.name.to_string(), arguments);
        let (progress, forwarding) = match context.meta.get_progress_token() {
            Some(token) => {
                // One task sends them, so they reach the client in order.
                let (sender, mut reports) = mpsc::unbounded_channel::<crate::Progress>();
                let peer = context.peer.clone();
                let forwarding = tokio::spawn(async move {
                    while let Some(report) = reports.recv().await {
                        let mut notification =
                            ProgressNotificationParam::new(token.clone(), report.progress);
                        if let Some(total) = report.total {
                            notification = notification.with_total(total);
                        }
                        if let Some(message) = report.message {
                            notification = notification.with_message(message);
                        }
                        if peer.notify_progress(notification).await.is_err() {
                            break;
                        }
                    }
                });
                let sink = ProgressSink::new(move |_, report| {
                    let _closed = sender.send(report);
                });
                (Some(sink), Some(forwarding))
            }
            None => (None, None),
        };
        let cancellation = context.ct.clone();
        let options = CallOptions {
            cancellation: Some(cancellation.clone()),
            progress,
        };
        let runtime = self.runtime.clone();
        let running = runtime.call_with(call, options);
        // rmcp cancels the token on `notifications/cancelled` but keeps
        // the handler running: a tool that ignores its token is dropped
        // after the grace period.
        let grace = self.cancel_grace;
        let result = tokio::select! {
            result = running => result,
            () = async {
                cancellation.cancelled().await;
                tokio::time::sleep(grace).await;
            } => ToolCallResult {
                call_id,
                tool_name: request.name.to_string(),
                outcome: Err(ToolError::Cancelled),
            },
        };
        if let Some(forwarding) = forwarding {
            // The sink is gone with the call: the task sends what is left
            // and ends.
            let _ended = forwarding.await;
        }
        result
    }
}

/// Why a server stopped with an error.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct McpServeError(String);

impl McpServeError {
    #[cfg_attr(not(feature = "mcp-http"), allow(dead_code))]
    pub(crate) fn new(message: String) -> Self {
        Self(message)
    }
}

impl From<ExportError> for McpServeError {
    fn from(error: ExportError) -> Self {
        Self(format!("the tools cannot be served over MCP: {error}"))
    }
}

/// Serves `runtime`'s tools over stdin and stdout until the client
/// disconnects: the whole of an MCP server for a client that starts it as
/// a child process.
pub async fn serve_stdio(runtime: ToolRuntime) -> Result<(), McpServeError> {
    McpServer::new(runtime)?.serve_stdio().await
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        let config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(self.implementation.clone());
        match &self.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let start = match request.and_then(|params| params.cursor) {
            None => 0,
            Some(cursor) => cursor
                .parse::<usize>()
                .ok()
                .filter(|start| *start <= self.tools.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params(format!("invalid cursor `{cursor}`"), None)
                })?,
        };
        let end = (start + self.page_size).min(self.tools.len());
        let mut result = ListToolsResult::with_all_items(self.tools[start..end].to_vec());
        if end < self.tools.len() {
            result.next_cursor = Some(end.to_string());
            result.result_type = None;
        }
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = self.call(request, context).await;
        // An unknown tool is a protocol error (what rmcp's own servers
        // answer); everything else, argument errors included, is a result
        // the model reads.
        if let Err(error @ ToolError::NotFound { .. }) = &result.outcome {
            return Err(ErrorData::invalid_params(error.to_string(), None));
        }
        let value = providers::mcp::call_result(&result);
        let result: CallToolResult = serde_json::from_value(value).map_err(|error| {
            ErrorData::internal_error(format!("the result could not be sent: {error}"), None)
        })?;
        Ok(result.into())
    }
}

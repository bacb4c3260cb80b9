//! A remote MCP server's tools as local [`Tool`]s: registered in a
//! [`ToolRegistry`], validated by behest against the remote schema before
//! each call, and called over the connection, with progress and
//! cancellation forwarded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientRequest, ContentBlock, Implementation, ProgressNotificationParam, ProgressToken,
    ProtocolVersion, Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;

use crate::context::{Progress, ToolContext};
use crate::providers;
use crate::registry::{RegistryError, ToolRegistry};
use crate::tool::{Tool, ToolError, ToolOutput, ToolResult, ToolSpec};

/// Why a connection or an import failed.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum McpClientError {
    /// The connection could not be made or was lost.
    #[error("MCP connection: {0}")]
    Connection(String),
    /// The server's tools could not be read or registered.
    #[error("MCP tools: {0}")]
    Tools(String),
}

/// How a server's tools are imported.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Put before every tool's name (`"github_"` makes `search` into
    /// `github_search`), so two servers' tools do not clash.
    pub prefix: Option<String>,
}

impl ImportOptions {
    /// Names prefixed with `prefix`.
    pub fn prefixed(prefix: impl Into<String>) -> Self {
        Self {
            prefix: Some(prefix.into()),
        }
    }
}

/// What the client side of a connection keeps: where each call's progress
/// goes, and whether the server said its tools changed.
#[derive(Default)]
struct ClientState {
    /// Each waiting call's context and the last progress it reported.
    progress: Mutex<HashMap<ProgressToken, (ToolContext, f64)>>,
    tools_changed: std::sync::atomic::AtomicBool,
    /// Wakes whoever waits for the next `tools/list_changed`.
    changed: tokio::sync::Notify,
}

impl ClientState {
    fn watch(&self, token: ProgressToken, context: ToolContext) {
        self.calls().insert(token, (context, f64::NEG_INFINITY));
    }

    /// The context of the call `params` is about, if the report moves it
    /// on: rmcp hands each notification to its own task, so one can
    /// overtake another, and progress only increases.
    fn advance(&self, params: &ProgressNotificationParam) -> Option<ToolContext> {
        let mut calls = self.calls();
        let (context, last) = calls.get_mut(&params.progress_token)?;
        if params.progress <= *last {
            return None;
        }
        *last = params.progress;
        Some(context.clone())
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, (ToolContext, f64)>> {
        self.progress
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A call on its way: its progress is watched until it ends, and a call
/// dropped before its answer is cancelled on the server.
struct Pending {
    state: Arc<ClientState>,
    token: ProgressToken,
    /// Whom to tell, until the answer came.
    cancel: Option<(Peer<RoleClient>, rmcp::model::RequestId)>,
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.state.calls().remove(&self.token);
        if let Some((peer, id)) = self.cancel.take() {
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move {
                    let cancelled =
                        CancelledNotificationParam::new(Some(id), Some("cancelled".into()));
                    let _unreachable = peer.notify_cancelled(cancelled).await;
                });
            }
        }
    }
}

/// The handler of behest's connections: forwards progress to the calls
/// that wait for it.
#[derive(Clone, Default)]
struct Handler(Arc<ClientState>);

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        // 2025-11-25: the version whose `tools/list_changed` reaches
        // `on_tool_list_changed`.
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("behest", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let context = self.0.advance(&params);
        if let Some(context) = context {
            let mut progress = Progress::new(params.progress, params.total);
            progress.message = params.message;
            context.report_progress(progress);
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0
            .tools_changed
            .store(true, std::sync::atomic::Ordering::Relaxed);
        self.0.changed.notify_one();
    }
}

/// A connection to an MCP server. Its tools stay usable while it (or any
/// tool imported from it) lives.
pub struct McpClient {
    service: Arc<RunningService<RoleClient, Handler>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient").finish_non_exhaustive()
    }
}

impl McpClient {
    /// Connects over any byte stream (a socket, a `tokio::io::duplex` end).
    pub async fn connect<T>(stream: T) -> Result<Self, McpClientError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        Self::started(Handler::default().serve(stream).await).await
    }

    /// Starts `command` and talks to it over its stdin and stdout; the
    /// process ends when the connection is dropped.
    pub async fn child_process(command: tokio::process::Command) -> Result<Self, McpClientError> {
        let transport = rmcp::transport::TokioChildProcess::new(command).map_err(|error| {
            McpClientError::Connection(format!("the server could not be started: {error}"))
        })?;
        Self::started(Handler::default().serve(transport).await).await
    }

    /// Connects to a streamable HTTP endpoint (`http://127.0.0.1:8000/mcp`).
    #[cfg(feature = "mcp-http")]
    pub async fn http(url: &str) -> Result<Self, McpClientError> {
        Self::http_with_token(url, None).await
    }

    /// [`http`](Self::http), sending `Authorization: Bearer <token>` when
    /// a token is given.
    #[cfg(feature = "mcp-http")]
    pub async fn http_with_token(url: &str, token: Option<&str>) -> Result<Self, McpClientError> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

        super::http::install_crypto_provider();
        let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_owned());
        if let Some(token) = token {
            config = config.auth_header(token.to_owned());
        }
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        Self::started(Handler::default().serve(transport).await).await
    }

    /// A connection once the handshake is done: rmcp's answer cache off,
    /// so a list is always the server's own.
    async fn started<E: std::fmt::Display>(
        service: Result<RunningService<RoleClient, Handler>, E>,
    ) -> Result<Self, McpClientError> {
        let service = service.map_err(|error| McpClientError::Connection(error.to_string()))?;
        service
            .peer()
            .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;
        Ok(Self {
            service: Arc::new(service),
        })
    }

    /// The peer, for what behest does not wrap (resources, prompts).
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Whether the server said its tools changed since the last
    /// [`tools`](Self::tools): import again to see the new list.
    pub fn tools_changed(&self) -> bool {
        self.service
            .service()
            .0
            .tools_changed
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Waits until the server says its tools changed (at once if it said
    /// so since the last [`tools`](Self::tools)); then import again to
    /// serve the new list.
    pub async fn tools_change(&self) {
        if !self.tools_changed() {
            self.service.service().0.changed.notified().await;
        }
    }

    /// Every tool of the server (all pages), as [`McpTool`]s.
    pub async fn tools(&self, options: &ImportOptions) -> Result<Vec<McpTool>, McpClientError> {
        self.service
            .service()
            .0
            .tools_changed
            .store(false, std::sync::atomic::Ordering::Relaxed);
        let tools = self
            .service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| McpClientError::Connection(error.to_string()))?;
        tools
            .into_iter()
            .map(|tool| {
                let value = serde_json::to_value(&tool)
                    .map_err(|error| McpClientError::Tools(error.to_string()))?;
                let mut spec = providers::mcp::parse_tool(&value)
                    .map_err(|error| McpClientError::Tools(error.to_string()))?;
                let remote_name = spec.name.clone();
                if let Some(prefix) = &options.prefix {
                    spec.name = format!("{prefix}{}", spec.name);
                }
                // The server checks its own output; behest passes it on.
                spec.output_schema = None;
                Ok(McpTool {
                    spec,
                    remote_name,
                    service: self.service.clone(),
                })
            })
            .collect()
    }

    /// Registers every tool of the server in `registry`; returns their
    /// names. A tool the registry refuses (a name taken, a schema it cannot
    /// compile) fails the import and names the tool.
    pub async fn import_into(
        &self,
        registry: &mut ToolRegistry,
        options: &ImportOptions,
    ) -> Result<Vec<String>, McpClientError> {
        // All or nothing: into a copy first, so a tool refused half-way
        // leaves `registry` as it was.
        let mut grown = registry.clone();
        let mut names = Vec::new();
        for tool in self.tools(options).await? {
            let name = tool.spec.name.clone();
            grown
                .register_tool(Arc::new(tool))
                .map_err(|error: RegistryError| {
                    McpClientError::Tools(format!("`{name}` cannot be registered: {error}"))
                })?;
            names.push(name);
        }
        *registry = grown;
        Ok(names)
    }
}

/// Connects over `stream` and registers the server's tools in `registry`;
/// the client returned keeps the connection.
pub async fn import<T>(
    stream: T,
    registry: &mut ToolRegistry,
    options: &ImportOptions,
) -> Result<McpClient, McpClientError>
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
{
    let client = McpClient::connect(stream).await?;
    client.import_into(registry, options).await?;
    Ok(client)
}

/// One tool of a remote MCP server.
pub struct McpTool {
    spec: ToolSpec,
    remote_name: String,
    service: Arc<RunningService<RoleClient, Handler>>,
}

impl std::fmt::Debug for McpTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.spec.name)
            .field("remote_name", &self.remote_name)
            .finish_non_exhaustive()
    }
}

impl McpTool {
    /// The tool's name on its server (without the prefix).
    pub fn remote_name(&self) -> &str {
        &self.remote_name
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        self.execute_with_context(arguments, ToolContext::new("mcp"))
            .await
    }

    async fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        let arguments = match arguments {
            Value::Object(object) => object,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(ToolError::invalid_argument(
                    "",
                    format!("expected an object, got {other}"),
                ))
            }
        };
        let params = CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(Request::new(params));
        let peer = self.service.peer();
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|error| {
                ToolError::execution(format!("the MCP server is unreachable: {error}"))
            })?;
        // Until the answer comes, the call's progress goes to `context`;
        // a call dropped before it (a timeout, a run aborted) is cancelled
        // on the server too.
        let mut pending = Pending {
            state: self.service.service().0.clone(),
            token: handle.progress_token.clone(),
            cancel: Some((peer.clone(), handle.id.clone())),
        };
        pending.state.watch(pending.token.clone(), context.clone());
        let answer = tokio::select! {
            answer = handle.await_response() => answer,
            () = context.cancellation().cancelled() => return Err(ToolError::Cancelled),
        };
        pending.cancel = None;
        match answer {
            Ok(ServerResult::CallToolResult(result)) => {
                let text: Vec<String> = result
                    .content
                    .iter()
                    .filter_map(ContentBlock::as_text)
                    .map(|text| text.text.clone())
                    .collect();
                let text = text.join("\n");
                if result.is_error == Some(true) {
                    let message = match (&result.structured_content, text.is_empty()) {
                        (_, false) => text,
                        (Some(structured), true) => structured.to_string(),
                        (None, true) => "the MCP server reported an error and no text".to_owned(),
                    };
                    return Err(ToolError::execution(message));
                }
                let mut output = match result.structured_content {
                    Some(structured) => ToolOutput::json(structured),
                    None => ToolOutput::empty(),
                };
                if !text.is_empty() {
                    output = output.with_text(text);
                }
                Ok(output)
            }
            Ok(_) => Err(ToolError::execution(
                "the MCP server answered the call with something else than a result",
            )),
            Err(error) => Err(ToolError::execution(format!(
                "the MCP server failed the call: {error}"
            ))),
        }
    }
}

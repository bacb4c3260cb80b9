//! A [`ToolRuntime`] as an MCP server: `tools/list` from the registry (as
//! [`providers::mcp`](crate::providers::mcp) writes it), `tools/call`
//! through the runtime's one entry point.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, CompleteRequestParams,
    CompleteResult, GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ProgressToken, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::call_result::tool_result;
use super::catalog::McpCatalog;
use super::catalog_wire;
use super::log::ClientLog;
use super::rounds::{Asker, InFlight, Round, Rounds, WAITS_FOR};
use super::task_store::TaskStore;
use super::tasks::{McpTasks, McpTasksError, TaskStart, TaskSupport, TaskTool};
use crate::providers::{self, ExportError};
use crate::runtime::{CallOptions, ToolCall, ToolCallResult, ToolRuntime};
use crate::sync::lock;
use crate::tool::ProgressSink;

/// How many tools a `tools/list` page holds unless set.
const PAGE_SIZE: usize = 100;

/// A [`ToolRuntime`] served over MCP: every tool of its registry, with its
/// limits, timeouts and state. Cheap to clone (one per HTTP session): a
/// clone serves the same tools, with a client log of its own, so clone it
/// for each connection you serve yourself.
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
pub struct McpServer {
    /// What is served now; [`replace_runtime`](Self::replace_runtime)
    /// swaps it for every clone at once.
    served: Arc<std::sync::RwLock<Arc<Served>>>,
    /// The connected clients, told when the tools change.
    peers: Arc<std::sync::Mutex<Vec<Peer<RoleServer>>>>,
    /// This connection's log to its client; each clone its own.
    log: Arc<ClientLog>,
    /// Whether the server has sessions: a stream to send on outside a
    /// call, for logging and for what a client subscribes to (not over
    /// stateless HTTP).
    sessions: bool,
    /// Calls of protocol 2026-07-28 waiting for their clients' answers,
    /// shared by every clone (each HTTP request's).
    rounds: Arc<Rounds>,
    implementation: Implementation,
    instructions: Option<String>,
    page_size: usize,
    /// The resources and prompts served now, for every clone.
    catalog: Arc<std::sync::RwLock<Arc<McpCatalog>>>,
    /// What this connection's client subscribed to, and every connection's
    /// (told when a resource changes).
    subscribed: Arc<std::sync::Mutex<Subscribed>>,
    subscribers: Arc<std::sync::Mutex<Vec<Subscriber>>>,
    /// Which tools answer with tasks, and the tasks of every clone.
    tasks: Arc<McpTasks>,
    task_store: Arc<TaskStore>,
    /// Clients of protocol 2026-07-28 listening for changes
    /// (`subscriptions/listen`), of every clone.
    listeners: Arc<std::sync::Mutex<Vec<rmcp::service::SubscriptionSink>>>,
}

/// The resource URIs one client subscribed to.
#[derive(Default)]
struct Subscribed {
    uris: std::collections::HashSet<String>,
    /// Whether this connection is among the subscribers.
    listed: bool,
}

/// A connection with subscriptions.
struct Subscriber {
    peer: Peer<RoleServer>,
    subscribed: Arc<std::sync::Mutex<Subscribed>>,
}

/// A runtime and its tools as MCP lists them.
struct Served {
    runtime: ToolRuntime,
    tools: Vec<Tool>,
    /// Where each tool is in `tools`.
    by_name: std::collections::HashMap<String, usize>,
}

impl Served {
    /// `runtime`'s tools as MCP declarations; a tool MCP cannot list is an
    /// error listing every such tool.
    fn new(runtime: ToolRuntime) -> Result<Self, ExportError> {
        let export = providers::mcp::tools(runtime.registry())?;
        let mut tools = Vec::new();
        for declaration in export.tools {
            let name = declaration["name"].as_str().unwrap_or_default().to_owned();
            let tool = serde_json::from_value::<Tool>(declaration).map_err(|error| {
                let lint = crate::providers::Lint {
                    tool: Some(name.clone()),
                    path: String::new(),
                    reason: format!("not an MCP tool declaration: {error}"),
                    severity: crate::providers::Severity::Error,
                };
                ExportError { lints: vec![lint] }
            })?;
            tools.push(tool);
        }
        let by_name = tools
            .iter()
            .enumerate()
            .map(|(index, tool)| (tool.name.to_string(), index))
            .collect();
        Ok(Self {
            runtime,
            tools,
            by_name,
        })
    }
}

/// The same tools and catalog, served the same way, with a client log and
/// subscriptions of its own: a clone is one more connection's server.
impl Clone for McpServer {
    fn clone(&self) -> Self {
        Self {
            served: self.served.clone(),
            peers: self.peers.clone(),
            log: Arc::default(),
            sessions: self.sessions,
            rounds: self.rounds.clone(),
            implementation: self.implementation.clone(),
            instructions: self.instructions.clone(),
            page_size: self.page_size,
            catalog: self.catalog.clone(),
            subscribed: Arc::default(),
            subscribers: self.subscribers.clone(),
            tasks: self.tasks.clone(),
            task_store: self.task_store.clone(),
            listeners: self.listeners.clone(),
        }
    }
}

impl std::fmt::Debug for McpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpServer")
            .field("tools", &self.served().tools.len())
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
        Ok(Self {
            served: Arc::new(std::sync::RwLock::new(Arc::new(Served::new(runtime)?))),
            peers: Arc::default(),
            log: Arc::default(),
            sessions: true,
            rounds: Arc::default(),
            implementation: Implementation::new("behest", env!("CARGO_PKG_VERSION")),
            instructions: None,
            page_size: PAGE_SIZE,
            catalog: Arc::default(),
            subscribed: Arc::default(),
            subscribers: Arc::default(),
            tasks: Arc::default(),
            task_store: Arc::default(),
            listeners: Arc::default(),
        })
    }

    /// Makes the tools `tasks` names answer with tasks (the MCP tasks
    /// extension, `io.modelcontextprotocol/tasks`, which the server then
    /// declares): `tasks/get`, `tasks/update` and `tasks/cancel` are
    /// served, for the caller who started each task. A name the runtime
    /// has no tool of is an error.
    pub fn tasks(mut self, tasks: McpTasks) -> Result<Self, McpTasksError> {
        let served = self.served();
        if let Some(tool) = tasks
            .tool_names()
            .find(|name| !served.by_name.contains_key(*name))
        {
            return Err(McpTasksError::UnknownTool(tool.to_owned()));
        }
        if let (Some(_), Some(tool)) = (tasks.backend_of(), tasks.deferred()) {
            return Err(McpTasksError::DeferredWithBackend(tool.to_owned()));
        }
        self.tasks = Arc::new(tasks);
        self.task_store = Arc::default();
        Ok(self)
    }

    /// Serves `catalog`'s resources and prompts beside the tools
    /// (`resources/*`, `prompts/*`, `completion/complete`). The
    /// capabilities said in `initialize` follow it: `resources` when it
    /// has any (with `subscribe` and `listChanged`), `prompts` when it has
    /// any, `completions` with either.
    #[must_use]
    pub fn catalog(mut self, catalog: McpCatalog) -> Self {
        // A lock of its own: the server it was cloned from keeps its own.
        self.catalog = Arc::new(std::sync::RwLock::new(Arc::new(catalog)));
        self
    }

    /// Serves `catalog` from now on, on every connection of this server
    /// and its clones, and tells each connected client that the resource
    /// and prompt lists changed (`notifications/resources/list_changed`,
    /// `notifications/prompts/list_changed`). Reads already running finish
    /// on the catalog they began on.
    pub async fn replace_catalog(&self, catalog: McpCatalog) {
        *self
            .catalog
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(catalog);
        for peer in self.open_peers() {
            tokio::spawn(async move {
                let _ = peer.notify_resource_list_changed().await;
                let _ = peer.notify_prompt_list_changed().await;
            });
        }
        // The sink sends only what its listener asked for.
        for sink in self.open_listeners() {
            tokio::spawn(async move {
                let _ = sink.notify_resource_list_changed().await;
                let _ = sink.notify_prompt_list_changed().await;
            });
        }
    }

    /// Tells each client subscribed to `uri` that the resource changed
    /// (`notifications/resources/updated`), in the background.
    pub async fn resource_updated(&self, uri: &str) {
        let mut subscribers = lock(&self.subscribers);
        subscribers.retain(|subscriber| !subscriber.peer.is_transport_closed());
        for subscriber in subscribers.iter() {
            if lock(&subscriber.subscribed).uris.contains(uri) {
                let (peer, uri) = (subscriber.peer.clone(), uri.to_owned());
                tokio::spawn(async move {
                    let update = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                    let _ = peer.notify_resource_updated(update).await;
                });
            }
        }
        drop(subscribers);
        for sink in self.open_listeners() {
            let listens = sink
                .accepted()
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|listened| listened == uri));
            if listens {
                let uri = uri.to_owned();
                tokio::spawn(async move {
                    let _ = sink.notify_resource_updated(uri).await;
                });
            }
        }
    }

    /// The clients listening now (`subscriptions/listen`): each leaves
    /// the list as its request ends.
    fn open_listeners(&self) -> Vec<rmcp::service::SubscriptionSink> {
        lock(&self.listeners).clone()
    }

    /// The catalog served now.
    fn catalog_now(&self) -> Arc<McpCatalog> {
        self.catalog
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The connected clients, those gone left out.
    fn open_peers(&self) -> Vec<Peer<RoleServer>> {
        let mut peers = lock(&self.peers);
        peers.retain(|peer| !peer.is_transport_closed());
        peers.clone()
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

    /// How many tools, resources, resource templates or prompts a list's
    /// page holds (default 100).
    #[must_use]
    pub fn page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// The runtime served now.
    pub fn runtime(&self) -> ToolRuntime {
        self.served().runtime.clone()
    }

    /// Serves `runtime`'s tools from now on, on every connection of this
    /// server and its clones (each HTTP session's), and tells each
    /// connected client with `notifications/tools/list_changed`, so that
    /// it lists them again. Calls already running finish on the runtime
    /// they began on. A runtime with a tool MCP cannot list is refused and
    /// the old one kept. The notices are sent in the background: this
    /// returns once the new tools are served.
    pub async fn replace_runtime(&self, runtime: ToolRuntime) -> Result<(), ExportError> {
        let served = Arc::new(Served::new(runtime)?);
        *self
            .served
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = served;
        let peers = self.open_peers();
        // Each in its own task: one client slow to read holds up no other,
        // nor the caller.
        for peer in peers {
            tokio::spawn(async move {
                let _ = peer.notify_tool_list_changed().await;
            });
        }
        for sink in self.open_listeners() {
            tokio::spawn(async move {
                let _ = sink.notify_tool_list_changed().await;
            });
        }
        Ok(())
    }

    /// Without sessions: stateless HTTP has no session to keep a log level
    /// or a subscription in, nor a stream to send on outside a call, so
    /// neither `logging` nor resource subscriptions and list changes are
    /// offered.
    #[cfg(feature = "mcp-http")]
    pub(crate) fn stateless(mut self) -> Self {
        self.sessions = false;
        self
    }

    /// Takes `peer` as this connection's client, once: its log, and a
    /// place among those told of changed tools.
    fn know(&self, peer: &Peer<RoleServer>) {
        if self.log.connect(peer.clone()) {
            let mut peers = lock(&self.peers);
            peers.retain(|peer| !peer.is_transport_closed());
            peers.push(peer.clone());
        }
    }

    /// What is served now.
    fn served(&self) -> Arc<Served> {
        self.served
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
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
        let (call, forwarder) = Self::tool_call(request, &context);
        // The call's own token: rmcp cancels `ct` after every response too,
        // which must not reach what a finished tool left running.
        let token = CancellationToken::new();
        let options = CallOptions {
            cancellation: Some(token.clone()),
            progress: forwarder.as_ref().map(ProgressForwarder::sink),
            extensions: Default::default(),
        }
        .extension(McpCaller::of(&context, None));
        let served = self.served();
        let running = self.log.scope(served.runtime.call_with(call, options));
        tokio::pin!(running);
        // `notifications/cancelled` cancels `ct`; the runtime then gives the
        // tool its cancellation grace and drops it (rmcp would let it run).
        let result = tokio::select! {
            result = &mut running => result,
            () = context.ct.cancelled() => {
                // No progress for a request the client cancelled: what the
                // tool reports in its grace goes nowhere.
                if let Some(forwarder) = &forwarder {
                    forwarder.close();
                }
                token.cancel();
                running.await
            }
        };
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        result
    }

    /// The runtime's call of `request`, and a forwarder of its progress
    /// when the client sent a token.
    fn tool_call(
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> (ToolCall, Option<ProgressForwarder>) {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let call = ToolCall::new(context.id.to_string(), request.name.to_string(), arguments);
        let forwarder = context
            .meta
            .get_progress_token()
            .map(|token| ProgressForwarder::new(token, context.peer.clone()));
        (call, forwarder)
    }

    /// One round of a call under protocol 2026-07-28: a new call, or the
    /// retry of one that asked (its `requestState` and the client's
    /// answers), run until it finishes or asks again. Its log messages go
    /// on this request's stream, at the level the request names; its
    /// progress, in its first round (a later round's request has a token
    /// of its own that the running call cannot take up).
    async fn call_in_rounds(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        may_become_task: bool,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        // Stateless HTTP does not offer logging: no level is taken.
        let level = context.meta.log_level().filter(|_| self.sessions);
        let probe = McpCaller::of(&context, None);
        let caller = probe.caller_key();
        let mut forwarder = None;
        let call = match request.request_state.as_deref() {
            Some(handle) => {
                let call = self
                    .rounds
                    .resume(
                        handle,
                        &tool,
                        caller.as_deref(),
                        request.input_responses.clone(),
                    )
                    .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
                call.log.retarget(context.peer.clone(), level);
                call
            }
            None => {
                let (call, progress) = Self::tool_call(request, &context);
                let log = ClientLog::for_request(context.peer.clone(), level);
                let sink = progress.as_ref().map(ProgressForwarder::sink);
                forwarder = progress;
                self.in_flight(call, &context, sink, log)
            }
        };
        let log = call.log.clone();
        let round = self
            .rounds
            .drive(
                call,
                &tool,
                caller.clone(),
                &context.ct,
                WAITS_FOR,
                may_become_task,
            )
            .await;
        if let Some(forwarder) = forwarder {
            forwarder.finish().await;
        }
        log.flush().await;
        if let (Round::Asked(asked), true) = (&round, context.ct.is_cancelled()) {
            // The client went away before it could learn the handle.
            if let Some(handle) = &asked.request_state {
                self.rounds.abandon(handle);
            }
        }
        match round {
            Round::Done(result) => answer_of(result),
            Round::Asked(asked) => Ok(asked.into()),
            Round::ToTask(call, answer) => {
                let created = self.task_store.start(call, &tool, caller, &self.tasks)?;
                let _ = answer.send(true);
                Ok(CallToolResponse::Task(created))
            }
        }
    }

    /// A call made a task at once: its questions wait in the task for
    /// `tasks/update`, its result for `tasks/get`.
    fn call_as_task(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let caller = McpCaller::of(context, None).caller_key();
        // No progress: the request that could carry it ends with the
        // task's creation.
        let (call, _) = Self::tool_call(request, context);
        let in_flight = self.in_flight(call, context, None, Arc::new(ClientLog::default()));
        let created = self
            .task_store
            .start(in_flight, &tool, caller, &self.tasks)?;
        Ok(CallToolResponse::Task(created))
    }

    /// A call made a task in the tasks' backend.
    async fn call_in_backend(
        &self,
        backend: &dyn super::McpTaskBackend,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = McpCaller::of(context, None).caller_key();
        let id = super::rounds::fresh_handle();
        let arguments = request.arguments.unwrap_or_default();
        let call = super::McpTaskCall::new(id, request.name.to_string(), arguments, caller);
        let view = backend
            .start(call)
            .await
            .map_err(|reason| ErrorData::internal_error(reason, None))?;
        Ok(CallToolResponse::Task(rmcp::model::CreateTaskResult::new(
            super::task_store::wire_task(&view, &self.tasks),
        )))
    }

    /// `call` of the request `context` started in a task of its own, its
    /// questions put through an asker (to a round or a task), its progress
    /// to `progress`, its log messages to `log`.
    fn in_flight(
        &self,
        call: ToolCall,
        context: &RequestContext<RoleServer>,
        progress: Option<ProgressSink>,
        log: Arc<ClientLog>,
    ) -> InFlight {
        let token = CancellationToken::new();
        let options = CallOptions {
            cancellation: Some(token.clone()),
            progress,
            extensions: Default::default(),
        };
        let runtime = self.served().runtime.clone();
        let scope = log.clone();
        InFlight::start(
            |asker| {
                let options = options.extension(McpCaller::of(context, Some(asker)));
                Box::pin(async move { scope.scope(runtime.call_with(call, options)).await })
            },
            token,
            log,
        )
    }

    /// The caller of a `tasks/*` request, as the task that request names
    /// must have been started by.
    fn task_caller(context: &RequestContext<RoleServer>) -> Option<String> {
        McpCaller::of(context, None).caller_key()
    }
}

/// How a call of a task tool goes, given whether its client declared the
/// tasks extension (for this request, or in its `initialize`).
enum TaskRoute {
    /// A task from the start.
    Task,
    /// In its request, with leave to become a task at the tool's word.
    Deferred,
    /// In its request, as any call.
    Plain,
}

/// Task `id` of `caller` in `backend`; an unknown task is -32602, as in
/// the server's own store.
async fn backend_view(
    backend: &dyn super::McpTaskBackend,
    id: &str,
    caller: Option<&str>,
) -> Result<super::McpTaskView, ErrorData> {
    backend
        .get(id, caller)
        .await
        .map_err(|reason| ErrorData::internal_error(reason, None))?
        .ok_or_else(|| super::task_store::unknown(id))
}

fn task_route(
    tool: TaskTool,
    declared: bool,
    initialize_less: bool,
) -> Result<TaskRoute, ErrorData> {
    match (declared, tool.support, tool.start) {
        (false, TaskSupport::Required, _) => Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        )),
        (false, TaskSupport::Optional, _) => Ok(TaskRoute::Plain),
        (true, _, TaskStart::AtItsWord) if initialize_less => Ok(TaskRoute::Deferred),
        (true, _, _) => Ok(TaskRoute::Task),
    }
}

/// Whether `context` is a request of protocol 2026-07-28 or later, which
/// has no `initialize` and no server-to-client requests.
fn is_initialize_less(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// The MCP answer to a finished call (see [`tool_result`]).
fn answer_of(result: ToolCallResult) -> Result<CallToolResponse, ErrorData> {
    tool_result(&result).map(CallToolResponse::from)
}

/// Who made an MCP call, for a tool that authorises per caller: read it
/// with [`ToolContext::extension`](crate::ToolContext::extension).
///
/// ```
/// use behest::mcp::McpCaller;
/// use behest::{tool, ToolContext, ToolError};
///
/// /// The caller's own records.
/// #[tool]
/// async fn my_records(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
///     let caller = cx.extension::<McpCaller>();
///     let Some(token) = caller.and_then(McpCaller::bearer_token) else {
///         return Err(ToolError::execution("this tool needs a signed-in caller"));
///     };
///     Ok(format!("{} records for this caller", token.len()))
/// }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct McpCaller {
    /// The `Mcp-Session-Id` of the call's HTTP session (none over stdio or
    /// stateless HTTP).
    pub session_id: Option<String>,
    /// The protocol version the client negotiated (under 2026-07-28, the
    /// one the request names).
    pub protocol_version: Option<String>,
    /// The client's name and version, from its `initialize` (under
    /// 2026-07-28, from the request).
    pub client: Option<(String, String)>,
    /// The HTTP request the call came in (its headers, and the extensions
    /// your own axum layers set before [`router`]'s, such as verified
    /// token claims). `None` over stdio.
    ///
    /// [`router`]: crate::mcp::http::router
    #[cfg(feature = "mcp-http")]
    pub http: Option<axum::http::request::Parts>,
    /// The connection, for questions to the client.
    pub(crate) peer: Option<Peer<RoleServer>>,
    /// What the client declared it can do (in its `initialize`, or in the
    /// request's `_meta` under protocol 2026-07-28).
    pub(crate) capabilities: Option<ClientCapabilities>,
    /// Under protocol 2026-07-28, the way questions go to the client: in
    /// the call's next round, not as requests of their own.
    pub(crate) asker: Option<Asker>,
}

/// Shows the request's method, URI and header names, never their values
/// (the `Authorization` header holds a credential).
impl std::fmt::Debug for McpCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("McpCaller");
        debug
            .field("session_id", &self.session_id)
            .field("protocol_version", &self.protocol_version)
            .field("client", &self.client);
        #[cfg(feature = "mcp-http")]
        if let Some(http) = &self.http {
            let headers: Vec<&str> = http.headers.keys().map(|name| name.as_str()).collect();
            debug
                .field("method", &http.method)
                .field("uri", &http.uri)
                .field("headers", &headers);
        }
        debug.finish_non_exhaustive()
    }
}

impl McpCaller {
    /// The caller of the request `context`; `asker` for a call of protocol
    /// 2026-07-28.
    fn of(context: &RequestContext<RoleServer>, asker: Option<Asker>) -> Self {
        #[cfg(feature = "mcp-http")]
        let http = context
            .extensions
            .get::<axum::http::request::Parts>()
            .cloned();
        #[cfg(feature = "mcp-http")]
        let session_id = http.as_ref().and_then(|parts| {
            parts
                .headers
                .get("mcp-session-id")?
                .to_str()
                .ok()
                .map(str::to_owned)
        });
        #[cfg(not(feature = "mcp-http"))]
        let session_id = None;
        Self {
            session_id,
            protocol_version: context
                .protocol_version()
                .map(|version| version.to_string()),
            client: context
                .client_info()
                .map(|client| (client.name, client.version)),
            #[cfg(feature = "mcp-http")]
            http,
            peer: Some(context.peer.clone()),
            capabilities: context.client_capabilities(),
            asker,
        }
    }

    /// Who made the call, as far as a later round must match it: the
    /// identity the HTTP guard found, else the bearer token, else nobody
    /// (stdio, whose connection is the caller; an unguarded endpoint). The
    /// two kinds never match each other.
    fn caller_key(&self) -> Option<String> {
        #[cfg(feature = "mcp-http")]
        if let Some(identity) = self
            .http
            .as_ref()
            .and_then(|parts| parts.extensions.get::<super::http::CallerIdentity>())
        {
            return Some(format!("identity:{}", identity.0));
        }
        // A digest, not the token: the key is kept (with a waiting call,
        // a task, a durable task's journal) and a credential must not be.
        #[cfg(feature = "mcp-http")]
        {
            use sha2::Digest;
            self.bearer_token().map(|token| {
                let digest = sha2::Sha256::digest(token.as_bytes());
                let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
                format!("bearer-sha256:{hex}")
            })
        }
        #[cfg(not(feature = "mcp-http"))]
        None
    }

    /// The bearer token the request carried (and [`router`]'s check
    /// accepted, when one is set). `None` over stdio.
    ///
    /// [`router`]: crate::mcp::http::router
    pub fn bearer_token(&self) -> Option<&str> {
        #[cfg(feature = "mcp-http")]
        {
            let value = self
                .http
                .as_ref()?
                .headers
                .get(axum::http::header::AUTHORIZATION)?
                .to_str()
                .ok()?;
            let (scheme, token) = value.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        }
        #[cfg(not(feature = "mcp-http"))]
        None
    }
}

/// How many progress reports of one call may wait for a slow client; past
/// that, the newest replaces the one waiting beside the queue, so a tool
/// reporting in a loop cannot grow the server's memory and the client
/// still gets the last word.
const PROGRESS_BACKLOG: usize = 256;

/// Sends a call's progress reports as `notifications/progress`, in order,
/// from one task started at the first report (rmcp's clients send a
/// `progressToken` with every call; most tools never report).
struct ProgressForwarder {
    relay: Arc<Relay>,
}

struct Relay {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    running: std::sync::Mutex<Option<Running>>,
    /// The newest report while the queue is full.
    overflow: std::sync::Mutex<Option<crate::Progress>>,
    /// The last progress value taken: the protocol wants each report's
    /// higher than the one before, so one that is not is dropped.
    last: std::sync::Mutex<Option<f64>>,
    /// Set once the call's result or cancellation is on its way: a report
    /// after that (from a task the tool left running) goes nowhere, as the
    /// protocol wants.
    closed: std::sync::atomic::AtomicBool,
}

struct Running {
    sender: mpsc::Sender<crate::Progress>,
    done: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl ProgressForwarder {
    fn new(token: ProgressToken, peer: Peer<RoleServer>) -> Self {
        let relay = Relay {
            token,
            peer,
            runtime: tokio::runtime::Handle::current(),
            running: std::sync::Mutex::new(None),
            overflow: std::sync::Mutex::new(None),
            last: std::sync::Mutex::new(None),
            closed: std::sync::atomic::AtomicBool::new(false),
        };
        Self {
            relay: Arc::new(relay),
        }
    }

    fn sink(&self) -> ProgressSink {
        let relay = self.relay.clone();
        ProgressSink::new(move |_, report| relay.report(report))
    }

    /// Takes no more reports.
    fn close(&self) {
        self.relay
            .closed
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Sends what is left, before the call's result goes out; later reports
    /// go nowhere.
    async fn finish(self) {
        self.close();
        let running = lock(&self.relay.running).take();
        if let Some(running) = running {
            let _gone = running.done.send(());
            let _ended = running.task.await;
        }
    }
}

impl Relay {
    fn report(self: &Arc<Self>, report: crate::Progress) {
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        {
            let mut last = lock(&self.last);
            if !report.progress.is_finite() {
                return;
            }
            if last.is_some_and(|last| {
                report.progress.partial_cmp(&last) != Some(std::cmp::Ordering::Greater)
            }) {
                return;
            }
            *last = Some(report.progress);
        }
        let mut running = lock(&self.running);
        // Checked again under the lock `finish` takes: no relay starts
        // after it.
        if self.closed.load(std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let running = running.get_or_insert_with(|| self.start());
        // While a report waits beside the queue, newer ones replace it:
        // order holds, and the last one is never lost.
        let mut overflow = lock(&self.overflow);
        if overflow.is_some() {
            *overflow = Some(report);
        } else if let Err(mpsc::error::TrySendError::Full(report)) = running.sender.try_send(report)
        {
            *overflow = Some(report);
        }
    }

    fn start(self: &Arc<Self>) -> Running {
        let (sender, mut reports) = mpsc::channel::<crate::Progress>(PROGRESS_BACKLOG);
        let (done, mut finished) = oneshot::channel::<()>();
        let relay = self.clone();
        let task = self.runtime.spawn(async move {
            loop {
                let report = tokio::select! {
                    biased;
                    report = reports.recv() => report,
                    _ = &mut finished => {
                        // The call is over: send what it reported, then
                        // stop, even if a task it left holds a sender.
                        reports.close();
                        reports.recv().await
                    }
                };
                let report = match report.or_else(|| lock(&relay.overflow).take()) {
                    Some(report) => report,
                    None => break,
                };
                if !relay.send(report).await {
                    break;
                }
                if reports.is_empty() {
                    let waiting = lock(&relay.overflow).take();
                    if let Some(report) = waiting {
                        if !relay.send(report).await {
                            break;
                        }
                    }
                }
            }
        });
        Running { sender, done, task }
    }

    /// Whether the client could be sent `report`.
    async fn send(&self, report: crate::Progress) -> bool {
        let mut notification = ProgressNotificationParam::new(self.token.clone(), report.progress);
        if let Some(total) = report.total {
            notification = notification.with_total(total);
        }
        if let Some(message) = report.message {
            notification = notification.with_message(message);
        }
        self.peer.notify_progress(notification).await.is_ok()
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

/// The newest protocol version served. Under it (2026-07-28) a call that
/// asks the client (elicitation, sampling) ends each round with an
/// `input_required` result and goes on when the client retries with its
/// answers, and log messages follow the level each request names; a tool
/// sees no difference. Clients of older versions negotiate theirs.
pub const NEWEST_PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion::V_2026_07_28;

impl ServerHandler for McpServer {
    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(ProtocolVersion::known_up_to(&NEWEST_PROTOCOL_VERSION))
    }

    // Logging is deprecated by the newest protocol (SEP-2577), not by the
    // versions served here.
    #[allow(deprecated)]
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_logging()
            .build();
        if !self.sessions {
            capabilities.logging = None;
        }
        let catalog = self.catalog_now();
        let has_resources = !catalog.resources.is_empty() || !catalog.templates.is_empty();
        // Subscriptions and list changes go on a session's stream, or
        // (protocol 2026-07-28, sessions or not) a `subscriptions/listen`
        // request's.
        if has_resources {
            capabilities.resources = serde_json::from_value(
                serde_json::json!({ "subscribe": true, "listChanged": true }),
            )
            .ok();
        }
        if !catalog.prompts.is_empty() {
            capabilities.prompts =
                serde_json::from_value(serde_json::json!({ "listChanged": true })).ok();
        }
        if has_resources || !catalog.prompts.is_empty() {
            capabilities.completions = Some(rmcp::model::JsonObject::new());
        }
        if !self.tasks.is_empty() {
            super::tasks::declare_tasks(&mut capabilities.extensions);
        }
        let config = ServerConfig::new(capabilities)
            .with_server_info(self.implementation.clone())
            .with_protocol_version(NEWEST_PROTOCOL_VERSION);
        match &self.instructions {
            Some(instructions) => config.with_instructions(instructions.clone()),
            None => config,
        }
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        self.know(&context.peer);
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.log.set_level(request.level);
        Ok(())
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // A client that lists before its `initialized` is handled must not
        // miss a change made in between.
        if self.sessions && !is_initialize_less(&context) {
            self.know(&context.peer);
        }
        let served = self.served();
        let tools = &served.tools;
        let cursor = request.and_then(|params| params.cursor);
        let (start, end, next) =
            catalog_wire::page(tools.len(), cursor.as_deref(), self.page_size)?;
        // A page is a complete result too (`resultType`, which 2026-07-28
        // requires and rmcp leaves out for older clients); `nextCursor`
        // says more follow.
        let mut result = ListToolsResult::with_all_items(tools[start..end].to_vec());
        result.next_cursor = next;
        Ok(result)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // rmcp asks this for every call over HTTP: a lookup, not a scan.
        let served = self.served();
        let index = *served.by_name.get(name)?;
        served.tools.get(index).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let initialize_less = is_initialize_less(&context);
        let route = match self.tasks.of(&request.name) {
            Some(tool) => {
                let declared = context
                    .client_capabilities()
                    .is_some_and(|capabilities| capabilities.supports_tasks());
                // A round's retry goes on with the call it names, which is
                // not yet a task.
                if request.request_state.is_some() && declared {
                    TaskRoute::Deferred
                } else {
                    task_route(tool, declared, initialize_less)?
                }
            }
            None => TaskRoute::Plain,
        };
        match route {
            TaskRoute::Task => match self.tasks.backend_of() {
                Some(backend) => {
                    self.call_in_backend(backend.as_ref(), request, &context)
                        .await
                }
                None => self.call_as_task(request, &context),
            },
            TaskRoute::Deferred => self.call_in_rounds(request, context, true).await,
            TaskRoute::Plain if initialize_less => {
                self.call_in_rounds(request, context, false).await
            }
            TaskRoute::Plain => answer_of(self.call(request, context).await),
        }
    }

    async fn get_task(
        &self,
        request: rmcp::model::GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetTaskResult, ErrorData> {
        let caller = Self::task_caller(&context);
        match self.tasks.backend_of() {
            Some(backend) => {
                let view =
                    backend_view(backend.as_ref(), &request.task_id, caller.as_deref()).await?;
                Ok(super::task_store::wire_detailed(&view, &self.tasks))
            }
            None => self
                .task_store
                .get(&request.task_id, caller.as_deref(), &self.tasks),
        }
    }

    async fn update_task(
        &self,
        request: rmcp::model::UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = Self::task_caller(&context);
        match self.tasks.backend_of() {
            // A backend's task asks nothing: answers are passed over, as
            // answers to keys a task does not wait on are.
            Some(backend) => {
                backend_view(backend.as_ref(), &request.task_id, caller.as_deref()).await?;
                Ok(())
            }
            None => self.task_store.update(
                &request.task_id,
                caller.as_deref(),
                request.input_responses,
                &self.tasks,
            ),
        }
    }

    async fn cancel_task(
        &self,
        request: rmcp::model::CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let caller = Self::task_caller(&context);
        match self.tasks.backend_of() {
            Some(backend) => match backend.cancel(&request.task_id, caller.as_deref()).await {
                Ok(true) => Ok(()),
                Ok(false) => Err(super::task_store::unknown(&request.task_id)),
                Err(reason) => Err(ErrorData::internal_error(reason, None)),
            },
            None => self
                .task_store
                .cancel(&request.task_id, caller.as_deref(), &self.tasks),
        }
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|params| params.cursor);
        catalog_wire::list_resources(&self.catalog_now(), cursor.as_deref(), self.page_size)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        let cursor = request.and_then(|params| params.cursor);
        catalog_wire::list_templates(&self.catalog_now(), cursor.as_deref(), self.page_size)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let catalog = self.catalog_now();
        catalog_wire::read(&catalog, &request.uri)
            .await
            .map(Into::into)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        // rmcp keeps what the capabilities offer: list changes for tools,
        // and for resources and prompts when the catalog has them;
        // updates of the resources the catalog has.
        let catalog = self.catalog_now();
        let mut accepted = requested.clone();
        if let Some(uris) = &mut accepted.resource_subscriptions {
            uris.retain(|uri| catalog.resource_at(uri).is_some());
        }
        Some(accepted)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), ErrorData> {
        let sink = context.sink().clone();
        let id = sink.id().clone();
        lock(&self.listeners).push(sink);
        context.cancelled().await;
        lock(&self.listeners).retain(|sink| sink.id() != &id);
        Ok(())
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        if !self.sessions {
            return Err(ErrorData::invalid_request(
                "this server has no sessions (stateless HTTP): there is nothing to keep a subscription in",
                None,
            ));
        }
        if self.catalog_now().resource_at(&request.uri).is_none() {
            return Err(catalog_wire::not_found(&request.uri));
        }
        let mut subscribed = lock(&self.subscribed);
        subscribed.uris.insert(request.uri);
        if !subscribed.listed {
            subscribed.listed = true;
            let mut subscribers = lock(&self.subscribers);
            subscribers.retain(|subscriber| !subscriber.peer.is_transport_closed());
            subscribers.push(Subscriber {
                peer: context.peer.clone(),
                subscribed: self.subscribed.clone(),
            });
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        lock(&self.subscribed).uris.remove(&request.uri);
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let cursor = request.and_then(|params| params.cursor);
        catalog_wire::list_prompts(&self.catalog_now(), cursor.as_deref(), self.page_size)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        let catalog = self.catalog_now();
        catalog_wire::get_prompt(&catalog, &request.name, request.arguments)
            .await
            .map(Into::into)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        catalog_wire::complete(&self.catalog_now(), request).await
    }
}

//! A remote MCP server's tools as local [`Tool`]s: registered in a
//! [`ToolRegistry`], validated by behest against the remote schema before
//! each call, and called over the connection, with progress and
//! cancellation forwarded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CancelledNotificationParam, ClientCapabilities, ClientConfig,
    ClientRequest, Implementation, ProgressNotificationParam, ProgressToken, ProtocolVersion,
    Request, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient};
use serde_json::Value;

use super::answers::{Answerers, FormAnswer, FormRequest};
use crate::model::Model;
use crate::providers;
use crate::registry::{RegistryError, ToolRegistry};
use crate::sync::lock;
use crate::tool::{CallPart, MediaSource, Tool, ToolError, ToolOutput, ToolResult, ToolSpec};
use crate::tool::{Progress, ToolContext};
use crate::validation::ArgumentValidator;

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
    /// The server's resources or prompts could not be listed or read.
    #[error("MCP resources and prompts: {0}")]
    Catalog(String),
}

/// How [`McpClient`] connects: how long the handshake may take and, over
/// HTTP, what every request carries.
///
/// ```
/// use std::time::Duration;
/// use behest::mcp::ConnectOptions;
///
/// let options = ConnectOptions::default()
///     .handshake_timeout(Duration::from_secs(5))
///     .bearer_token("secret")
///     .header("x-team", "search");
/// # let _ = options;
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// How long the server has to answer `initialize`; past it the
    /// connection is an error (and a child process ends). Default 30 s.
    pub handshake_timeout: std::time::Duration,
    /// Over HTTP: sent as `Authorization: Bearer <token>`.
    pub bearer_token: Option<String>,
    /// Over HTTP: headers sent with every request (an API key header, a
    /// tenant), as name and value.
    pub headers: Vec<(String, String)>,
    /// Who answers the server's sampling and elicitation requests.
    pub(crate) answerers: Answerers,
    /// Whether the client offers protocol 2026-07-28 first.
    pub(crate) newest_protocol: bool,
    /// Over HTTP: OAuth 2.1 for a server that asks for it.
    #[cfg(feature = "mcp-oauth")]
    pub(crate) oauth: Option<super::oauth::McpOAuth>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        Self {
            handshake_timeout: std::time::Duration::from_secs(30),
            bearer_token: None,
            headers: Vec::new(),
            answerers: Answerers::default(),
            newest_protocol: false,
            #[cfg(feature = "mcp-oauth")]
            oauth: None,
        }
    }
}

/// Shows everything but the token and the headers' values.
impl std::fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("ConnectOptions")
            .field("handshake_timeout", &self.handshake_timeout)
            .field("bearer_token", &self.bearer_token.as_ref().map(|_| "***"))
            .field("headers", &headers)
            .field("answerers", &self.answerers)
            .finish()
    }
}

impl ConnectOptions {
    /// How long the server has to answer `initialize`.
    #[must_use]
    pub fn handshake_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// The bearer token sent over HTTP.
    #[must_use]
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Authorizes with OAuth 2.1 over HTTP when the server asks (its 401),
    /// and again for more scopes when a request needs them (a 403
    /// `insufficient_scope`); see [`McpOAuth`](super::McpOAuth). A
    /// [`bearer_token`](Self::bearer_token) is then not sent.
    #[cfg(feature = "mcp-oauth")]
    #[must_use]
    pub fn oauth(mut self, oauth: super::oauth::McpOAuth) -> Self {
        self.oauth = Some(oauth);
        self
    }

    /// A header sent with every HTTP request.
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Speaks protocol 2026-07-28 with a server that does (no
    /// `initialize`: `server/discover`, then requests that each carry
    /// their version, client and capabilities), and 2025-11-25 with one
    /// that does not. Under 2026-07-28 a server tells of changed tools only
    /// to clients that listen for them, which this one does not yet:
    /// [`tools_changed`](McpClient::tools_changed) stays false there.
    #[must_use]
    pub fn newest_protocol(mut self) -> Self {
        self.newest_protocol = true;
        self
    }

    /// Answers the server's sampling requests (`sampling/createMessage`)
    /// with `model`, any behest model: the client declares `sampling`.
    /// The request's messages, system prompt, token limit, temperature
    /// and stop sequences are the model's request; its answer's text is
    /// the result.
    #[must_use]
    pub fn sampling(self, model: impl Model) -> Self {
        self.sampling_arc(Arc::new(model))
    }

    /// [`sampling`](Self::sampling) with a shared model.
    #[must_use]
    pub fn sampling_arc(mut self, model: Arc<dyn Model>) -> Self {
        self.answerers.sampling = Some(model);
        self
    }

    /// Answers the server's forms (`elicitation/create`) with `answer`,
    /// which sees the message and the requested schema: the client
    /// declares `elicitation`. An accepted answer is sent with the form's
    /// `default` for each field it leaves out.
    ///
    /// ```
    /// use behest::mcp::{ConnectOptions, FormAnswer, FormRequest};
    ///
    /// let options = ConnectOptions::default().elicitation(|form: FormRequest| async move {
    ///     println!("the server asks: {}", form.message);
    ///     FormAnswer::Decline
    /// });
    /// # let _ = options;
    /// ```
    #[must_use]
    pub fn elicitation<F, Fut>(mut self, answer: F) -> Self
    where
        F: Fn(FormRequest) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = FormAnswer> + Send + 'static,
    {
        self.answerers.elicitation(answer);
        self
    }
}

/// How a server's tools are imported: which ones, and under what names.
///
/// MCP allows names the model providers refuse (`docs.read`, a name over
/// 64 characters). By default a name is made to fit, each character
/// outside `[a-zA-Z0-9_-]` becoming `_`; a tool whose name still does not
/// fit the registry's rule is skipped with a warning, and the others are
/// imported.
///
/// ```
/// use behest::mcp::ImportOptions;
///
/// let options = ImportOptions::prefixed("docs_")
///     .filter(|spec| !spec.name.starts_with("admin"))
///     .rename(|name| Some(name.replace('.', "_")));
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct ImportOptions {
    /// Put before every tool's name (`"github_"` makes `search` into
    /// `github_search`), so two servers' tools do not clash.
    pub prefix: Option<String>,
    /// Maps a remote name to the local one (before the prefix); `None`
    /// skips the tool. Unset: characters outside `[a-zA-Z0-9_-]` become
    /// `_`.
    pub rename: Option<RenameFn>,
    /// Which tools to import, by their spec as the server declares it.
    pub filter: Option<FilterFn>,
}

/// Maps a remote tool's name to a local one; `None` skips the tool.
pub type RenameFn = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Whether to import a tool, by its spec as the server declares it.
pub type FilterFn = Arc<dyn Fn(&ToolSpec) -> bool + Send + Sync>;

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("prefix", &self.prefix)
            .field("rename", &self.rename.is_some())
            .field("filter", &self.filter.is_some())
            .finish()
    }
}

impl ImportOptions {
    /// Names prefixed with `prefix`.
    pub fn prefixed(prefix: impl Into<String>) -> Self {
        Self {
            prefix: Some(prefix.into()),
            ..Self::default()
        }
    }

    /// With names mapped by `rename` (before the prefix); a tool it maps
    /// to `None` is skipped.
    #[must_use]
    pub fn rename(
        mut self,
        rename: impl Fn(&str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.rename = Some(Arc::new(rename));
        self
    }

    /// Importing only the tools `keep` accepts.
    #[must_use]
    pub fn filter(mut self, keep: impl Fn(&ToolSpec) -> bool + Send + Sync + 'static) -> Self {
        self.filter = Some(Arc::new(keep));
        self
    }

    /// The local name of remote tool `name`, or why it has none.
    fn local_name(&self, name: &str) -> Result<String, String> {
        let mapped = match &self.rename {
            Some(rename) => rename(name).ok_or_else(|| "the rename skipped it".to_owned())?,
            None => name
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || c == '-' {
                        c
                    } else {
                        '_'
                    }
                })
                .collect(),
        };
        let local = format!("{}{mapped}", self.prefix.as_deref().unwrap_or_default());
        crate::registry::check_name(&local)
            .map(|()| local)
            .map_err(|error| error.to_string())
    }
}

/// What the client side of a connection keeps: where each call's progress
/// goes, and whether the server said its tools changed.
#[derive(Default)]
struct ClientState {
    /// Each waiting call's context and the last progress it reported.
    progress: Mutex<HashMap<ProgressToken, (ToolContext, f64)>>,
    /// Reports for a token no call watches yet: a report can arrive
    /// before the call that sent the request starts watching it. The last
    /// few are kept.
    early: Mutex<std::collections::VecDeque<ProgressNotificationParam>>,
    /// The last calls that ended, with their context while its report may
    /// still come (rmcp runs each notification in a task of its own, and
    /// hands the answer straight to the call: a report sent before the
    /// answer can arrive after it). `None`: the call was abandoned, and
    /// its reports go nowhere.
    ended: Mutex<std::collections::VecDeque<Ended>>,
    tools_changed: std::sync::atomic::AtomicBool,
    /// Wakes whoever waits for the next `tools/list_changed`.
    changed: tokio::sync::Notify,
}

/// A call that ended: its token, and its context and last progress if it
/// was answered.
type Ended = (ProgressToken, Option<(ToolContext, f64)>);

/// How many early reports, and how many ended calls, are kept.
const KEPT: usize = 64;

/// Adds `item` to `kept`, dropping the oldest past [`KEPT`].
fn keep<T>(kept: &mut std::collections::VecDeque<T>, item: T) {
    if kept.len() == KEPT {
        kept.pop_front();
    }
    kept.push_back(item);
}

impl ClientState {
    /// The call of `token` ended; `answered` keeps its late reports coming.
    fn end(&self, token: &ProgressToken, answered: bool) {
        let watched = self.calls().remove(token);
        keep(
            &mut lock(&self.ended),
            (token.clone(), watched.filter(|_| answered)),
        );
    }

    /// Sends the progress reported for `token` to `context` from now on,
    /// and what arrived for it before.
    fn watch(&self, token: ProgressToken, context: ToolContext) {
        self.calls()
            .insert(token.clone(), (context, f64::NEG_INFINITY));
        let arrived: Vec<ProgressNotificationParam> = {
            let mut early = lock(&self.early);
            let (mine, others): (Vec<_>, Vec<_>) = early
                .drain(..)
                .partition(|params| params.progress_token == token);
            *early = others.into();
            mine
        };
        for params in arrived {
            self.deliver(params);
        }
    }

    /// Hands a report to the call it is about, or keeps it until that call
    /// watches its token.
    fn deliver(&self, params: ProgressNotificationParam) {
        // rmcp hands each notification to its own task, so one can overtake
        // another: progress only increases.
        let moves_on = |(context, last): &mut (ToolContext, f64)| {
            (params.progress > *last).then(|| {
                *last = params.progress;
                context.clone()
            })
        };
        let context = {
            let mut calls = self.calls();
            match calls.get_mut(&params.progress_token) {
                Some(watched) => moves_on(watched),
                None => {
                    let mut ended = lock(&self.ended);
                    match ended
                        .iter_mut()
                        .find(|(token, _)| *token == params.progress_token)
                    {
                        Some((_, watched)) => watched.as_mut().and_then(moves_on),
                        None => {
                            keep(&mut lock(&self.early), params);
                            return;
                        }
                    }
                }
            }
        };
        if let Some(context) = context {
            let mut progress = Progress::new(params.progress, params.total);
            progress.message = params.message;
            context.report_progress(progress);
        }
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<ProgressToken, (ToolContext, f64)>> {
        lock(&self.progress)
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
        self.state.end(&self.token, self.cancel.is_none());
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
/// that wait for it, and answers what the server asks.
#[derive(Clone, Default)]
struct Handler(Arc<ClientState>, Answerers);

impl Handler {
    fn new(options: &ConnectOptions) -> Self {
        Self(Arc::default(), options.answerers.clone())
    }

    /// Connects over `transport` as `options` ask: `initialize`, or with
    /// the newest protocol `server/discover` first.
    fn start<T, E, A>(
        self,
        transport: T,
        options: &ConnectOptions,
    ) -> impl std::future::Future<
        Output = Result<RunningService<RoleClient, Self>, rmcp::service::ClientInitializeError>,
    >
    where
        T: rmcp::transport::IntoTransport<RoleClient, E, A>,
        E: std::error::Error + Send + Sync + 'static,
    {
        use rmcp::service::{ClientLifecycleMode, ClientServiceExt};

        let lifecycle = if options.newest_protocol {
            ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            }
        } else {
            ClientLifecycleMode::Initialize
        };
        self.serve_with_lifecycle(transport, lifecycle)
    }
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.1.sampling.is_some() {
            capabilities.sampling = serde_json::from_value(serde_json::json!({})).ok();
        }
        if self.1.elicitation.is_some() {
            capabilities.elicitation =
                serde_json::from_value(serde_json::json!({ "form": {} })).ok();
        }
        // Long-running tools' tasks are awaited (SEP-2663).
        super::tasks::declare_tasks(&mut capabilities.extensions);
        // 2025-11-25: the version whose `tools/list_changed` reaches
        // `on_tool_list_changed`.
        ClientConfig::new(
            capabilities,
            Implementation::new("behest", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_11_25)
    }

    // Sampling is deprecated by the newest protocol (SEP-2577), not by the
    // versions this client speaks.
    #[allow(deprecated)]
    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.1.sample(params).await
    }

    async fn create_elicitation(
        &self,
        request: rmcp::model::ElicitRequestParams,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, rmcp::ErrorData> {
        self.1.elicit(request).await
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.deliver(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0
            .tools_changed
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Every waiter, and no permit kept for later: a later wait sees
        // the flag instead, which `tools` clears.
        self.0.changed.notify_waiters();
    }
}

/// A connection to an MCP server. Its tools stay usable while it (or any
/// tool imported from it) lives. Clones share the connection.
#[derive(Clone)]
pub struct McpClient {
    service: Arc<RunningService<RoleClient, Handler>>,
    /// Whether the server is reached over HTTP: its tasks may outlive this
    /// process (a child process's end with it).
    remote: bool,
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
        Self::connect_with(stream, &ConnectOptions::default()).await
    }

    /// [`connect`](Self::connect) with `options`' handshake timeout.
    pub async fn connect_with<T>(
        stream: T,
        options: &ConnectOptions,
    ) -> Result<Self, McpClientError>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Send + 'static,
    {
        Self::started(Handler::new(options).start(stream, options), options).await
    }

    /// Starts `command` and talks to it over its stdin and stdout; the
    /// process ends when the connection is dropped.
    pub async fn child_process(command: tokio::process::Command) -> Result<Self, McpClientError> {
        Self::child_process_with(command, &ConnectOptions::default()).await
    }

    /// [`child_process`](Self::child_process) with `options`' handshake
    /// timeout: a process that never answers `initialize` is an error,
    /// and ends.
    pub async fn child_process_with(
        command: tokio::process::Command,
        options: &ConnectOptions,
    ) -> Result<Self, McpClientError> {
        let transport = rmcp::transport::TokioChildProcess::new(command).map_err(|error| {
            McpClientError::Connection(format!("the server could not be started: {error}"))
        })?;
        Self::started(Handler::new(options).start(transport, options), options).await
    }

    /// Connects to a streamable HTTP endpoint (`http://127.0.0.1:8000/mcp`).
    #[cfg(feature = "mcp-http")]
    pub async fn http(url: &str) -> Result<Self, McpClientError> {
        Self::http_with(url, &ConnectOptions::default()).await
    }

    /// [`http`](Self::http), sending `Authorization: Bearer <token>` when
    /// a token is given.
    #[cfg(feature = "mcp-http")]
    pub async fn http_with_token(url: &str, token: Option<&str>) -> Result<Self, McpClientError> {
        let options = ConnectOptions {
            bearer_token: token.map(str::to_owned),
            ..ConnectOptions::default()
        };
        Self::http_with(url, &options).await
    }

    /// [`http`](Self::http) with `options`: a bearer token, headers sent
    /// with every request, the handshake timeout.
    #[cfg(feature = "mcp-http")]
    pub async fn http_with(url: &str, options: &ConnectOptions) -> Result<Self, McpClientError> {
        use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;

        super::http::install_crypto_provider();
        let mut headers = std::collections::HashMap::new();
        for (name, value) in &options.headers {
            let invalid = |what: &str| {
                McpClientError::Connection(format!("the header {name:?} has an invalid {what}"))
            };
            headers.insert(
                axum::http::HeaderName::try_from(name.as_str()).map_err(|_| invalid("name"))?,
                axum::http::HeaderValue::try_from(value.as_str()).map_err(|_| invalid("value"))?,
            );
        }
        let mut config =
            StreamableHttpClientTransportConfig::with_uri(url.to_owned()).custom_headers(headers);
        #[cfg(feature = "mcp-oauth")]
        if let Some(oauth) = &options.oauth {
            let client = super::oauth::OAuthHttp::new(url, oauth.clone());
            let transport =
                rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
            let client = Self::started(Handler::new(options).start(transport, options), options);
            return client.await.map(Self::over_http);
        }
        if let Some(token) = &options.bearer_token {
            config = config.auth_header(token.clone());
        }
        let transport = rmcp::transport::StreamableHttpClientTransport::from_config(config);
        Self::started(Handler::new(options).start(transport, options), options)
            .await
            .map(Self::over_http)
    }

    /// The connection, reaching its server over HTTP.
    #[cfg(feature = "mcp-http")]
    fn over_http(mut self) -> Self {
        self.remote = true;
        self
    }

    /// A connection once the handshake is done within `options`' timeout:
    /// rmcp's answer cache off, so a list is always the server's own.
    async fn started<E: std::fmt::Display>(
        handshake: impl std::future::Future<Output = Result<RunningService<RoleClient, Handler>, E>>,
        options: &ConnectOptions,
    ) -> Result<Self, McpClientError> {
        let limit = options.handshake_timeout;
        let service = tokio::time::timeout(limit, handshake)
            .await
            .map_err(|_| {
                McpClientError::Connection(format!(
                    "the server did not answer `initialize` within {limit:?}"
                ))
            })?
            .map_err(|error| McpClientError::Connection(error.to_string()))?;
        service
            .peer()
            .set_response_cache_config(rmcp::ClientCacheConfig::disabled())
            .await;
        Ok(Self {
            service: Arc::new(service),
            remote: false,
        })
    }

    /// The peer, for what behest does not wrap (resources, prompts).
    pub fn peer(&self) -> &Peer<RoleClient> {
        self.service.peer()
    }

    /// Calls the server's tool `name` with `arguments` and waits for its
    /// result, answering what it asks along the way: under protocol
    /// 2026-07-28 a question comes as an input-required round, answered
    /// by the [`ConnectOptions::sampling`] and
    /// [`ConnectOptions::elicitation`] answerers and retried (at most 16
    /// rounds); under older versions the question is a request of the
    /// server's, answered as it comes. A tool that answers with a task
    /// (the MCP tasks extension) is awaited: `tasks/get` polled at the
    /// server's interval, its questions answered the same way, for as long
    /// as it takes (wrap the call in a timeout to bound it; dropping the
    /// call cancels the task on the server). For a tool to run in an
    /// agent, [`import_into`](Self::import_into) instead (its calls are
    /// validated, report progress, can be cancelled, and answer rounds and
    /// tasks the same way, within the runtime's tool timeout).
    ///
    /// # Errors
    /// [`McpClientError::Tools`] with the server's words when the call
    /// fails, its task fails or is cancelled, or the rounds run out.
    pub async fn call(
        &self,
        name: &str,
        arguments: serde_json::Map<String, Value>,
    ) -> Result<rmcp::model::CallToolResult, McpClientError> {
        let failed = |error: String| McpClientError::Tools(format!("calling `{name}`: {error}"));
        let mut params = CallToolRequestParams::new(name.to_owned()).with_arguments(arguments);
        let answerers = &self.service.service().1;
        for _round in 0..INPUT_ROUNDS {
            let answer = self
                .service
                .peer()
                .call_tool_once(params.clone())
                .await
                .map_err(|error| failed(error.to_string()))?;
            match answer {
                rmcp::model::CallToolResponse::Complete(result) => return Ok(result),
                rmcp::model::CallToolResponse::InputRequired(asked) => {
                    let answers = answerers
                        .answer_inputs(asked.input_requests.unwrap_or_default())
                        .await
                        .map_err(failed)?;
                    params.input_responses = Some(answers);
                    params.request_state = asked.request_state;
                }
                rmcp::model::CallToolResponse::Task(created) => {
                    let never = tokio_util::sync::CancellationToken::new();
                    let peer = self.service.peer();
                    let awaited = super::client_tasks::Awaited {
                        id: created.task.task_id,
                        poll_ms: created.task.poll_interval_ms,
                        cancel_on_drop: true,
                    };
                    return super::client_tasks::await_task(peer, answerers, awaited, &never)
                        .await
                        .map_err(|end| failed(end.to_string()));
                }
                _ => {
                    return Err(failed(
                        "an answer of a kind this client does not know".to_owned(),
                    ))
                }
            }
        }
        Err(failed(format!(
            "the server asked for input {INPUT_ROUNDS} times without answering"
        )))
    }

    /// Whether the server said its tools changed since the last
    /// [`tools`](Self::tools): import again to see the new list.
    pub fn tools_changed(&self) -> bool {
        self.service
            .service()
            .0
            .tools_changed
            .load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until the server says its tools changed (at once if it said
    /// so since the last [`tools`](Self::tools)); then import again to
    /// serve the new list.
    pub async fn tools_change(&self) {
        let notified = self.service.service().0.changed.notified();
        tokio::pin!(notified);
        // Registered before the flag is read, so a change in between is
        // not missed.
        notified.as_mut().enable();
        if !self.tools_changed() {
            notified.await;
        }
    }

    /// Every tool of the server (all pages), as [`McpTool`]s.
    pub async fn tools(&self, options: &ImportOptions) -> Result<Vec<McpTool>, McpClientError> {
        self.service
            .service()
            .0
            .tools_changed
            .store(false, std::sync::atomic::Ordering::SeqCst);
        let tools = self
            .service
            .peer()
            .list_all_tools()
            .await
            .map_err(|error| McpClientError::Connection(error.to_string()))?;
        let mut imported = Vec::new();
        for tool in tools {
            let read = serde_json::to_value(&tool)
                .map_err(|error| error.to_string())
                .and_then(|value| {
                    providers::mcp::parse_tool(&value).map_err(|error| error.to_string())
                });
            let mut spec = match read {
                Ok(spec) => spec,
                Err(why) => {
                    tracing::warn!(tool = %tool.name, %why, "an MCP tool is not imported: its declaration cannot be read");
                    continue;
                }
            };
            let remote_name = spec.name.clone();
            if options.filter.as_ref().is_some_and(|keep| !keep(&spec)) {
                continue;
            }
            // One name that cannot be mapped skips its tool, not the
            // others.
            match options.local_name(&remote_name) {
                Ok(local) => spec.name = local,
                Err(why) => {
                    tracing::warn!(tool = %remote_name, %why, "an MCP tool is not imported: its name cannot be used");
                    continue;
                }
            }
            imported.push((spec, remote_name));
        }
        imported
            .into_iter()
            .map(|(mut spec, remote_name)| {
                // Never trust either side: results are checked against the
                // output schema the server declares. One behest cannot
                // compile is not listed again, nor checked.
                let output = match spec
                    .output_schema
                    .as_ref()
                    .map(ArgumentValidator::compile_lenient)
                {
                    Some(Ok(validator)) => Some(Arc::new(validator)),
                    Some(Err(error)) => {
                        tracing::warn!(
                            tool = %spec.name,
                            %error,
                            "the MCP tool's output schema cannot be compiled; its results are not checked"
                        );
                        spec.output_schema = None;
                        None
                    }
                    None => None,
                };
                Ok(McpTool {
                    spec,
                    remote_name,
                    output,
                    service: self.service.clone(),
                    remote: self.remote,
                })
            })
            .collect()
    }

    /// Registers the server's tools in `registry`; returns their names. A
    /// tool the registry refuses (a name taken, a schema it cannot
    /// compile) is skipped with a warning: one tool never keeps the others
    /// out.
    pub async fn import_into(
        &self,
        registry: &mut ToolRegistry,
        options: &ImportOptions,
    ) -> Result<Vec<String>, McpClientError> {
        let mut names = Vec::new();
        for tool in self.tools(options).await? {
            let name = tool.spec.name.clone();
            match registry.register_tool(Arc::new(tool)) {
                Ok(_) => names.push(name),
                Err(error) => {
                    let error: RegistryError = error;
                    tracing::warn!(tool = %name, %error, "an MCP tool is not imported: the registry refuses it");
                }
            }
        }
        Ok(names)
    }
}

impl McpClient {
    /// A registry kept up to date with the server's tools: `base`'s tools
    /// and the server's, imported now and again after every
    /// `tools/list_changed`. A runtime's registry does not change under
    /// it, so build each run's runtime from the latest value:
    ///
    /// ```no_run
    /// # async fn run(client: behest::mcp::McpClient, model: behest::ScriptedModel)
    /// # -> Result<(), behest::mcp::McpClientError> {
    /// use behest::mcp::ImportOptions;
    /// use behest::{Agent, Message, ToolRegistry, ToolRuntime};
    ///
    /// let tools = client
    ///     .watch_tools(ToolRegistry::new(), ImportOptions::prefixed("remote_"))
    ///     .await?;
    /// let registry = tools.borrow().clone();
    /// let agent = Agent::new(model, ToolRuntime::new(registry));
    /// agent.invoke([Message::user("go")]).await;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// The first import's error is returned; a later one keeps the last
    /// registry and is traced. The watch stops when every receiver is
    /// dropped. It shares [`tools_changed`](Self::tools_changed) with the
    /// client's clones: while it runs, read the tools through it rather
    /// than [`tools`](Self::tools), which would take the news first.
    pub async fn watch_tools(
        &self,
        base: ToolRegistry,
        options: ImportOptions,
    ) -> Result<tokio::sync::watch::Receiver<ToolRegistry>, McpClientError> {
        let mut first = base.clone();
        self.import_into(&mut first, &options).await?;
        let (sender, receiver) = tokio::sync::watch::channel(first);
        let client = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = client.tools_change() => {}
                    () = sender.closed() => return,
                }
                let mut next = base.clone();
                match client.import_into(&mut next, &options).await {
                    Ok(_) => {
                        if sender.send(next).is_err() {
                            return;
                        }
                    }
                    Err(error) => tracing::warn!(
                        %error,
                        "the MCP server's new tool list could not be imported; the last one stays"
                    ),
                }
            }
        });
        Ok(receiver)
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
    /// The declared output schema, compiled.
    output: Option<Arc<ArgumentValidator>>,
    service: Arc<RunningService<RoleClient, Handler>>,
    /// Whether its server is reached over HTTP (see [`McpClient`]).
    remote: bool,
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

impl McpTool {
    /// What a remote result gives the model: its content as text (every
    /// kind of block said, none dropped) and its structured content,
    /// checked against the declared output schema.
    fn output_of(&self, result: rmcp::model::CallToolResult) -> ToolResult<ToolOutput> {
        let blocks: Vec<Value> = result
            .content
            .iter()
            .filter_map(|block| serde_json::to_value(block).ok())
            .collect();
        let text: Vec<String> = blocks.iter().filter_map(content_text).collect();
        let text = text.join("\n");
        if result.is_error == Some(true) {
            let message = match (&result.structured_content, text.is_empty()) {
                (_, false) => text,
                (Some(structured), true) => structured.to_string(),
                (None, true) => "the MCP server reported an error and no text".to_owned(),
            };
            return Err(ToolError::execution(message));
        }
        if let Some(validator) = &self.output {
            let Some(structured) = &result.structured_content else {
                return Err(ToolError::execution(format!(
                    "the MCP server sent no structured result, though `{}` declares an output schema",
                    self.remote_name
                )));
            };
            if let Err((issues, _)) = validator.validate(structured) {
                let issues: Vec<String> = issues
                    .iter()
                    .map(|issue| format!("`{}`: {}", issue.path, issue.message))
                    .collect();
                return Err(ToolError::execution(format!(
                    "the MCP server's result does not match the output schema of `{}`: {}",
                    self.remote_name,
                    issues.join("; ")
                )));
            }
        }
        // Each block goes on as what it is: images as images (for the
        // providers that show them), audio and resources as attachments,
        // and only what is neither (or cannot be read as one) as text.
        let mut output = match result.structured_content {
            Some(structured) => ToolOutput::json(structured),
            None => ToolOutput::empty(),
        };
        let mut text = Vec::new();
        for block in &blocks {
            let image = (block["type"] == "image")
                .then(|| Some((block["mimeType"].as_str()?, block["data"].as_str()?)))
                .flatten();
            if let Some((media_type, data)) = image {
                output.images.push(MediaSource::base64(media_type, data));
            } else if let Some(attachment) = crate::providers::mcp::block_attachment(block) {
                output.attachments.push(attachment);
            } else {
                text.extend(content_text(block));
            }
        }
        if !text.is_empty() {
            output = output.with_text(text.join("\n"));
        }
        Ok(output)
    }
}

/// A content block as the model can read it in text: text as it is, an
/// embedded text resource's text, and a line saying what any other block
/// (an image, audio, a link, binary data) was.
fn content_text(block: &Value) -> Option<String> {
    let field =
        |value: &Value, name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    let kind = block.get("type").and_then(Value::as_str)?;
    match kind {
        "text" => field(block, "text"),
        "image" | "audio" => Some(format!(
            "[{kind}: {}]",
            field(block, "mimeType").unwrap_or_else(|| "unknown type".to_owned())
        )),
        "resource_link" => Some(format!(
            "[resource link: {}]",
            field(block, "uri").unwrap_or_default()
        )),
        "resource" => {
            let resource = block.get("resource")?;
            field(resource, "text").or_else(|| {
                Some(format!(
                    "[resource: {}]",
                    field(resource, "uri").unwrap_or_default()
                ))
            })
        }
        other => Some(format!("[{other} content]")),
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
        // Starting the call is what must happen once: an engine that
        // plays calls again after a crash (behest-restate) runs it as a
        // part of its own and keeps what it gave, so that the rest goes on
        // awaiting the same task instead of starting the work again.
        let started = match context.call_part() {
            Some(CallPart::Start) => {
                let started = self.start(arguments, &context).await?;
                let kept = serde_json::to_string(&started)
                    .map_err(|error| ToolError::execution(error.to_string()))?;
                return Ok(ToolOutput::text(kept));
            }
            Some(CallPart::Finish(kept)) => {
                serde_json::from_value(kept.clone()).map_err(|error| {
                    ToolError::execution(format!("the call's kept start does not read: {error}"))
                })?
            }
            _ => self.start(arguments, &context).await?,
        };
        // Run as a part, the wait may be dropped with the process's
        // attempt (an engine's abort, a restart) and played again: only
        // the call's cancellation cancels the task then.
        let durable = matches!(context.call_part(), Some(CallPart::Finish(_)));
        match started {
            Started::Done(result) => self.output_of(result),
            // A long-running tool: its task is awaited (its questions
            // answered the same way), and cancelled with the call.
            Started::Task { id, poll_ms } => {
                let result = super::client_tasks::await_task(
                    self.service.peer(),
                    &self.service.service().1,
                    super::client_tasks::Awaited {
                        id,
                        poll_ms,
                        cancel_on_drop: !durable,
                    },
                    context.cancellation(),
                )
                .await;
                match result {
                    Ok(result) => self.output_of(result),
                    Err(super::client_tasks::TaskEnd::Cancelled) => Err(ToolError::Cancelled),
                    Err(super::client_tasks::TaskEnd::Failed(reason)) => {
                        Err(ToolError::execution(reason))
                    }
                }
            }
        }
    }

    /// Over HTTP: a server's task may outlive this process, and an engine
    /// that plays the call again goes on awaiting it. A server started as
    /// a child process ends with it, and its tasks with it.
    fn keeps_checkpoints(&self) -> bool {
        self.remote
    }
}

/// How a call started: its result, or the task the server made of it.
#[derive(serde::Serialize, serde::Deserialize)]
enum Started {
    Done(rmcp::model::CallToolResult),
    Task { id: String, poll_ms: Option<u64> },
}

/// How many input-required rounds an imported tool's call answers.
const INPUT_ROUNDS: usize = 16;

impl McpTool {
    /// Sends the call until the server answers it with a result or a
    /// task: under protocol 2026-07-28 a tool that asks its client answers
    /// with an input-required round; each is answered and the call sent
    /// again, a bounded number of times.
    async fn start(
        &self,
        arguments: serde_json::Map<String, Value>,
        context: &ToolContext,
    ) -> ToolResult<Started> {
        let mut params =
            CallToolRequestParams::new(self.remote_name.clone()).with_arguments(arguments);
        for _round in 0..INPUT_ROUNDS {
            match self.send_call(params.clone(), context).await? {
                ServerResult::CallToolResult(result) => return Ok(Started::Done(result)),
                ServerResult::InputRequiredResult(asked) => {
                    let answerers = &self.service.service().1;
                    let answers = answerers
                        .answer_inputs(asked.input_requests.unwrap_or_default())
                        .await
                        .map_err(ToolError::execution)?;
                    params.input_responses = Some(answers);
                    params.request_state = asked.request_state;
                }
                ServerResult::CreateTaskResult(created) => {
                    return Ok(Started::Task {
                        id: created.task.task_id,
                        poll_ms: created.task.poll_interval_ms,
                    })
                }
                _ => {
                    return Err(ToolError::execution(
                        "the MCP server answered the call with something else than a result",
                    ))
                }
            }
        }
        Err(ToolError::execution(format!(
            "the MCP server asked for input {INPUT_ROUNDS} times without answering the call"
        )))
    }

    /// Sends one `tools/call` and waits for the server's answer, with the
    /// call's progress going to `context`, and the call cancelled on the
    /// server when `context` is.
    async fn send_call(
        &self,
        params: CallToolRequestParams,
        context: &ToolContext,
    ) -> ToolResult<ServerResult> {
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
        // Reports the server sent before its answer may still be in their
        // own tasks: give them a turn before the result goes back.
        tokio::task::yield_now().await;
        answer.map_err(|error| {
            ToolError::execution(format!("the MCP server failed the call: {error}"))
        })
    }
}

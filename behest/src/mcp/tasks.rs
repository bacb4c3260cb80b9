//! Which tools of an [`McpServer`](super::McpServer) answer with a task
//! (the MCP tasks extension, `io.modelcontextprotocol/tasks`): the call
//! returns at once with a task id, runs on, and the client polls
//! `tasks/get` for its status, its questions and its result.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::task_backend::McpTaskBackend;

/// Whether a client must take tasks to call a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TaskSupport {
    /// A client that declared the tasks extension gets a task; any other
    /// gets the result in the call's own request, as for any tool.
    Optional,
    /// Only a client that declared the tasks extension may call the tool;
    /// any other gets error -32021 (a required client capability is
    /// missing) before the tool runs.
    Required,
}

/// When a call of a task tool becomes a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskStart {
    /// As it is called: the request answers with the task at once.
    AtCall,
    /// When the tool calls [`McpCaller::continue_as_task`]; until then it
    /// runs in its request, its questions asked in rounds.
    ///
    /// [`McpCaller::continue_as_task`]: super::McpCaller::continue_as_task
    AtItsWord,
}

/// How one tool takes tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TaskTool {
    pub(crate) support: TaskSupport,
    pub(crate) start: TaskStart,
}

/// The tools of a server that answer with tasks, and how long tasks are
/// kept. Give it to [`McpServer::tasks`](super::McpServer::tasks); the
/// server then declares the tasks extension.
///
/// A task runs in the server's process: its tool's questions (elicitation,
/// sampling) wait in the task's `inputRequests` until the client answers
/// with `tasks/update`; `tasks/cancel` cancels the tool (which gets its
/// cancellation grace); the task and its result are kept for
/// [`ttl`](Self::ttl) from its creation, then dropped (and the tool
/// cancelled if it still runs). Only the caller who started a task (the
/// same verified identity or bearer token) can see or change it.
///
/// ```
/// use std::time::Duration;
/// use behest::mcp::{McpTasks, TaskSupport};
///
/// let tasks = McpTasks::new()
///     .tool("render_video", TaskSupport::Required)
///     .deferred_tool("import_orders", TaskSupport::Optional)
///     .ttl(Duration::from_secs(3600));
/// assert!(tasks.takes("render_video"));
/// ```
#[derive(Clone)]
pub struct McpTasks {
    tools: HashMap<String, TaskTool>,
    ttl: Duration,
    poll_interval: Duration,
    most: usize,
    most_per_caller: usize,
    backend: Option<Arc<dyn McpTaskBackend>>,
}

impl std::fmt::Debug for McpTasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTasks")
            .field("tools", &self.tools)
            .field("ttl", &self.ttl)
            .field("poll_interval", &self.poll_interval)
            .field("most", &self.most)
            .field("most_per_caller", &self.most_per_caller)
            .field("backend", &self.backend.is_some())
            .finish()
    }
}

impl Default for McpTasks {
    fn default() -> Self {
        Self::new()
    }
}

impl McpTasks {
    /// No task tools; tasks kept an hour, polled each second, at most
    /// 1024 at once, 64 of one caller.
    pub fn new() -> Self {
        Self {
            tools: HashMap::new(),
            ttl: Duration::from_secs(3600),
            poll_interval: Duration::from_secs(1),
            most: 1024,
            most_per_caller: 64,
            backend: None,
        }
    }

    /// Tool `name` answers with a task as soon as it is called.
    #[must_use]
    pub fn tool(mut self, name: impl Into<String>, support: TaskSupport) -> Self {
        let start = TaskStart::AtCall;
        self.tools.insert(name.into(), TaskTool { support, start });
        self
    }

    /// Tool `name` runs in its request like any other call (under protocol
    /// 2026-07-28 its questions go to the client in rounds) until it calls
    /// [`McpCaller::continue_as_task`]: that round answers with a task, and
    /// the rest of the call runs as it. A tool that gathers what it needs
    /// first and then works long is one. Over older protocols, which have
    /// no rounds, the call is a task from the start.
    ///
    /// [`McpCaller::continue_as_task`]: super::McpCaller::continue_as_task
    #[must_use]
    pub fn deferred_tool(mut self, name: impl Into<String>, support: TaskSupport) -> Self {
        let start = TaskStart::AtItsWord;
        self.tools.insert(name.into(), TaskTool { support, start });
        self
    }

    /// How long a task is kept from its creation (default an hour), said
    /// to the client as `ttlMs`. At least a second.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl.max(Duration::from_secs(1));
        self
    }

    /// How often a client should poll `tasks/get` (default each second),
    /// said as `pollIntervalMs`. At least a millisecond.
    #[must_use]
    pub fn poll_interval(mut self, interval: Duration) -> Self {
        self.poll_interval = interval.max(Duration::from_millis(1));
        self
    }

    /// How many tasks the server keeps at once (default 1024). Past it,
    /// the oldest finished task is dropped for a new one; when none has
    /// finished, a new call is refused with an error that says so.
    #[must_use]
    pub fn most_tasks(mut self, most: usize) -> Self {
        self.most = most.max(1);
        self
    }

    /// Runs and keeps the tasks in `backend` instead of the server's own
    /// process (behest-restate's durable tasks: a task outlives a
    /// restart, and every replica answers for it). A task's call runs
    /// where the backend runs it (a client that does not take tasks still
    /// gets an `Optional` tool's result in its request, from this
    /// server's runtime). How long a task is kept, and how many, is the
    /// backend's to say; [`ttl`](Self::ttl) is only what clients are told.
    /// A [`deferred_tool`](Self::deferred_tool), whose call starts in the
    /// server's process, cannot be given with one.
    #[must_use]
    pub fn backend(mut self, backend: impl McpTaskBackend) -> Self {
        self.backend = Some(Arc::new(backend));
        self
    }

    /// How many tasks one caller may have at once (default 64): past it,
    /// the caller's oldest finished task is dropped for a new one; when
    /// none of theirs has finished, their new call is refused, and other
    /// callers are not kept out.
    #[must_use]
    pub fn most_tasks_per_caller(mut self, most: usize) -> Self {
        self.most_per_caller = most.max(1);
        self
    }

    /// Whether tool `name` answers with tasks.
    pub fn takes(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// The task tools' names.
    pub fn tool_names(&self) -> impl Iterator<Item = &str> {
        self.tools.keys().map(String::as_str)
    }

    pub(crate) fn of(&self, name: &str) -> Option<TaskTool> {
        self.tools.get(name).copied()
    }

    pub(crate) fn backend_of(&self) -> Option<&Arc<dyn McpTaskBackend>> {
        self.backend.as_ref()
    }

    /// A deferred tool's name, if there is one.
    pub(crate) fn deferred(&self) -> Option<&str> {
        self.tools
            .iter()
            .find(|(_, tool)| tool.start == TaskStart::AtItsWord)
            .map(|(name, _)| name.as_str())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub(crate) fn ttl_of(&self) -> Duration {
        self.ttl
    }

    pub(crate) fn poll_interval_of(&self) -> Duration {
        self.poll_interval
    }

    pub(crate) fn most(&self) -> usize {
        self.most
    }

    pub(crate) fn most_per_caller(&self) -> usize {
        self.most_per_caller
    }
}

/// Declares the tasks extension (`io.modelcontextprotocol/tasks`) among
/// a side's `extensions` capabilities.
pub(crate) fn declare_tasks(extensions: &mut Option<rmcp::model::ExtensionCapabilities>) {
    extensions.get_or_insert_with(Default::default).insert(
        rmcp::model::TASKS_EXTENSION_ID.to_owned(),
        rmcp::model::JsonObject::new(),
    );
}

/// What [`McpServer::tasks`](super::McpServer::tasks) refused.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum McpTasksError {
    /// A tool the server's runtime does not have.
    #[error("McpTasks names the tool `{0}`, which the server's runtime does not have")]
    UnknownTool(String),
    /// A deferred tool with a backend: its call starts in the server's
    /// process and cannot move to the backend.
    #[error("McpTasks has a backend and the deferred tool `{0}`, whose call starts in the server's process and cannot move to the backend")]
    DeferredWithBackend(String),
}

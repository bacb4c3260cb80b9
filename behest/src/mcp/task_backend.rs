//! Where an [`McpServer`](super::McpServer)'s tasks run and are kept when
//! not in its own process: an [`McpTaskBackend`] (behest-restate's durable
//! tasks are one). The server gives it each task tool's call and asks it
//! for the task's state; any replica with the same backend answers for
//! every task.

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::runtime::ToolCallResult;
use crate::tool::ToolError;

/// A task tool's call, for a backend to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct McpTaskCall {
    /// The task's id: 128 random bits, minted by the server.
    pub id: String,
    /// The tool.
    pub tool: String,
    /// Its arguments, as the client sent them (the runtime that runs the
    /// call validates them).
    pub arguments: Map<String, Value>,
    /// Who started the task: only they may see or cancel it.
    pub caller: Option<String>,
}

impl McpTaskCall {
    /// A call of `tool` with `arguments` as task `id`, by `caller`.
    pub fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        arguments: Map<String, Value>,
        caller: Option<String>,
    ) -> Self {
        Self {
            id: id.into(),
            tool: tool.into(),
            arguments,
            caller,
        }
    }
}

/// Where a task stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum McpTaskStatus {
    /// It runs.
    Working,
    /// The tool gave a result (an error result included).
    Completed,
    /// It ended without the tool's word: a panic, a lost call.
    Failed,
    /// It was cancelled.
    Cancelled,
}

/// A task as `tasks/get` tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct McpTaskView {
    /// The task's id.
    pub id: String,
    /// Where it stands.
    pub status: McpTaskStatus,
    /// When it was created, RFC 3339.
    pub created_at: String,
    /// When it last changed, RFC 3339.
    pub updated_at: String,
    /// A completed task's `CallToolResult`, as JSON.
    pub result: Option<Map<String, Value>>,
    /// A failed task's JSON-RPC error (`code`, `message`).
    pub error: Option<Map<String, Value>>,
}

impl McpTaskView {
    /// Task `id`, working since `created_at`.
    pub fn working(id: impl Into<String>, created_at: impl Into<String>) -> Self {
        let created_at = created_at.into();
        Self {
            id: id.into(),
            status: McpTaskStatus::Working,
            updated_at: created_at.clone(),
            created_at,
            result: None,
            error: None,
        }
    }

    /// Task `id`, working from now.
    pub fn working_now(id: impl Into<String>) -> Self {
        Self::working(id, now())
    }

    /// This task ended as `end` says, now.
    pub fn ended_now(self, end: McpTaskEnd) -> Self {
        self.ended(end, now())
    }

    /// This task ended as `end` says (see [`McpTaskEnd::of`]), at `at`.
    pub fn ended(mut self, end: McpTaskEnd, at: impl Into<String>) -> Self {
        self.updated_at = at.into();
        match end {
            McpTaskEnd::Completed(result) => {
                self.status = McpTaskStatus::Completed;
                self.result = Some(result);
            }
            McpTaskEnd::Failed(error) => {
                self.status = McpTaskStatus::Failed;
                self.error = Some(error);
            }
            McpTaskEnd::Cancelled => self.status = McpTaskStatus::Cancelled,
        }
        self
    }
}

/// How a call ended its task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum McpTaskEnd {
    /// The tool's `CallToolResult`, as JSON (an error result included).
    Completed(Map<String, Value>),
    /// A JSON-RPC error: the tool panicked, or its call was lost.
    Failed(Map<String, Value>),
    /// Cancelled.
    Cancelled,
}

impl McpTaskEnd {
    /// How `result` ends its task, as a task of behest's own server ends:
    /// a result the tool gave completes it (its `CallToolResult` as MCP
    /// writes it), a panic fails it with -32603, a cancellation cancels
    /// it.
    pub fn of(result: &ToolCallResult) -> Self {
        if let Err(ToolError::Cancelled) = &result.outcome {
            return Self::Cancelled;
        }
        if let Err(error @ ToolError::Panicked { .. }) = &result.outcome {
            return Self::Failed(error_object(-32603, &error.to_string()));
        }
        match super::call_result::tool_result(result).map(serde_json::to_value) {
            Ok(Ok(Value::Object(result))) => Self::Completed(result),
            Ok(_) => Self::Failed(error_object(
                -32603,
                "the tool's result could not be written",
            )),
            Err(error) => Self::Failed(error_object(i64::from(error.code.0), &error.message)),
        }
    }
}

/// Now, as RFC 3339 in UTC with milliseconds.
pub(crate) fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// A JSON-RPC error object.
pub(crate) fn error_object(code: i64, message: &str) -> Map<String, Value> {
    Map::from_iter([
        ("code".to_owned(), Value::from(code)),
        ("message".to_owned(), Value::from(message)),
    ])
}

/// Runs and keeps an [`McpServer`](super::McpServer)'s tasks outside its
/// process: give it to [`McpTasks::backend`](super::McpTasks::backend).
/// Every method's error is a sentence the client reads (as a JSON-RPC
/// internal error).
pub trait McpTaskBackend: Send + Sync + 'static {
    /// Starts `call` as a task: its state once it is kept (a `get` right
    /// after finds it).
    fn start(&self, call: McpTaskCall) -> BoxFuture<'_, Result<McpTaskView, String>>;
    /// Task `id`, if it exists and `caller` started it.
    fn get<'a>(
        &'a self,
        id: &'a str,
        caller: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<McpTaskView>, String>>;
    /// Cancels task `id` (if it still runs); false when it does not exist
    /// or `caller` did not start it.
    fn cancel<'a>(
        &'a self,
        id: &'a str,
        caller: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, String>>;
}

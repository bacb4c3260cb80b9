//! Durable MCP tasks: a behest MCP server's task tools run as the Restate
//! workflow `DurableTasks`, one instance per task id. The call is a
//! journal entry: a task whose service dies mid-call is played again on
//! the next service Restate reaches (the tool runs again, with the task id
//! as its idempotency key), and once it ended its result comes from
//! Restate's record. Any replica of the MCP server reads a task through
//! Restate's ingress ([`RestateTasks`], an
//! [`McpTaskBackend`](behest::mcp::McpTaskBackend)): a client's `tasks/get`
//! may land anywhere.

use std::time::Duration;

use behest::mcp::{McpTaskBackend, McpTaskCall, McpTaskEnd, McpTaskStatus, McpTaskView};
use behest::{ToolCall, ToolRuntime};
use futures::future::BoxFuture;
use restate_sdk::endpoint::{HandlerOptions, ServiceOptions};
use restate_sdk::prelude::*;
use restate_sdk::service::IntoServiceDefinition;
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The task's state as `tasks/get` tells it.
const VIEW: &str = "view";
/// Who started the task.
const CALLER: &str = "caller";
/// The promise a cancellation resolves.
const CANCEL: &str = "cancel";

/// How long an ended task is kept unless [`DurableTasks::retention`] says:
/// an hour, as behest's own server keeps a task.
const DEFAULT_RETENTION: Duration = Duration::from_secs(3600);

/// How long Restate goes on retrying a task while no service answers (at
/// most a minute between attempts, about a day) before it pauses it.
const RETRY_ATTEMPTS: u64 = 24 * 60;

/// A runtime's tools as durable MCP tasks: the Restate workflow
/// `DurableTasks`. Serve it from the same program as the MCP server, or
/// from services of their own: the server reaches it through
/// [`RestateTasks`].
pub struct DurableTasks {
    runtime: ToolRuntime,
    retention: Duration,
}

impl DurableTasks {
    /// Tasks of `runtime`'s tools.
    pub fn new(runtime: ToolRuntime) -> Self {
        Self {
            runtime,
            retention: DEFAULT_RETENTION,
        }
    }

    /// How long Restate keeps a task once it ended (an hour by default):
    /// give the MCP server's [`McpTasks::ttl`](behest::mcp::McpTasks::ttl)
    /// the same, which is what clients are told.
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = retention;
        self
    }

    /// The workflow with its options, to bind in an endpoint
    /// (`Endpoint::builder().bind(tasks.definition())`, served with
    /// [`serve_endpoint`](crate::serve_endpoint)).
    pub fn definition(self) -> restate_sdk::service::ServiceDefinition {
        let run = HandlerOptions::new()
            .workflow_retention(self.retention)
            .journal_retention(self.retention);
        let options = ServiceOptions::new()
            .retry_policy_max_interval(Duration::from_secs(60))
            .retry_policy_max_attempts(RETRY_ATTEMPTS)
            .retry_policy_pause_on_max_attempts()
            .handler("run", run);
        self.into_service_definition().options(options)
    }
}

#[restate_sdk::workflow]
impl DurableTasks {
    /// Runs the call to its end. Played again after a crash, an ended
    /// call comes from the journal.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        call: Json<McpTaskCall>,
    ) -> Result<Json<McpTaskView>, HandlerError> {
        let call = call.into_inner();
        let id = call.id.clone();
        let view = ctx
            .run(move || async move { Ok(Json(McpTaskView::working_now(id))) })
            .name("created")
            .await?
            .into_inner();
        ctx.set(CALLER, Json(call.caller.clone()));
        ctx.set(VIEW, Json(view.clone()));
        let runtime = self.runtime.clone();
        let tool_call = ToolCall::new(
            call.id.clone(),
            call.tool.clone(),
            serde_json::Value::Object(call.arguments),
        );
        // Restate does not interrupt a step: a task cancelled while its
        // tool runs is cancelled for its client at once (`get` says so),
        // and the tool's result, when it comes, is not kept.
        // A task cancelled before its call began (or before a crash cut
        // the call, played again now) does not run its tool.
        let end = if ctx.peek_promise::<Json<bool>>(CANCEL).await?.is_some() {
            McpTaskEnd::Cancelled
        } else {
            // The task id is the call's idempotency key: the same each time
            // the call is played again.
            let options = behest::CallOptions::new().idempotency_key(call.id.clone());
            let done = ctx
                .run(move || async move {
                    let result = runtime.call_with(tool_call, options).await;
                    Ok(Json(McpTaskEnd::of(&result)))
                })
                .name("call")
                .await;
            let cancelled = ctx.peek_promise::<Json<bool>>(CANCEL).await?.is_some();
            match done {
                _ if cancelled => McpTaskEnd::Cancelled,
                Ok(Json(end)) => end,
                Err(error) => McpTaskEnd::Failed(serde_json::Map::from_iter([
                    ("code".to_owned(), serde_json::Value::from(-32603)),
                    (
                        "message".to_owned(),
                        serde_json::Value::from(error.message().to_owned()),
                    ),
                ])),
            }
        };
        let ended = ctx
            .run(move || async move { Ok(Json(view.ended_now(end))) })
            .name("ended")
            .await?
            .into_inner();
        ctx.set(VIEW, Json(ended.clone()));
        Ok(Json(ended))
    }

    /// The task, for its caller; none for anyone else, or before it began.
    #[handler]
    async fn get(
        &self,
        ctx: SharedWorkflowContext<'_>,
        caller: Json<Option<String>>,
    ) -> Result<Json<Option<McpTaskView>>, HandlerError> {
        if !started_by(&ctx, caller.into_inner()).await? {
            return Ok(Json(None));
        }
        let Some(Json(view)) = ctx.get::<Json<McpTaskView>>(VIEW).await? else {
            return Ok(Json(None));
        };
        // Cancelled while its tool runs: cancelled for the client now.
        let cancelled = ctx.peek_promise::<Json<bool>>(CANCEL).await?.is_some();
        if cancelled && view.status == McpTaskStatus::Working {
            // Read, not kept: the run keeps its own end.
            return Ok(Json(Some(view.ended_now(McpTaskEnd::Cancelled))));
        }
        Ok(Json(Some(view)))
    }

    /// Cancels the task for its caller: whether it is theirs.
    #[handler]
    async fn cancel(
        &self,
        ctx: SharedWorkflowContext<'_>,
        caller: Json<Option<String>>,
    ) -> Result<Json<bool>, HandlerError> {
        if !started_by(&ctx, caller.into_inner()).await? {
            return Ok(Json(false));
        }
        // A task that ended stays as it ended.
        let ended = ctx
            .get::<Json<McpTaskView>>(VIEW)
            .await?
            .is_some_and(|Json(view)| view.status != McpTaskStatus::Working);
        if !ended {
            ctx.resolve_promise::<Json<bool>>(CANCEL, Json(true));
        }
        Ok(Json(true))
    }
}

/// Whether the task on `ctx` began, started by `caller`.
async fn started_by(
    ctx: &SharedWorkflowContext<'_>,
    caller: Option<String>,
) -> Result<bool, HandlerError> {
    let started = ctx.get::<Json<Option<String>>>(CALLER).await?;
    Ok(started.is_some_and(|Json(started)| started == caller))
}

/// How long [`RestateTasks`] waits for a task it started to be kept.
const START_WAIT: Duration = Duration::from_secs(10);

/// How long one request to Restate's ingress may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How much of Restate's error an MCP client is told.
const SAID_AT_MOST: usize = 300;

/// An MCP server's tasks in Restate's [`DurableTasks`] workflow: give it
/// to [`McpTasks::backend`](behest::mcp::McpTasks::backend). Every replica
/// with one reads and cancels every task.
#[derive(Debug, Clone)]
pub struct RestateTasks {
    ingress: String,
    http: reqwest::Client,
}

impl RestateTasks {
    /// Tasks through the Restate ingress at `ingress`
    /// (`http://127.0.0.1:8080`).
    pub fn new(ingress: impl Into<String>) -> Self {
        // rustls needs a crypto provider even for plain HTTP.
        let _installed = rustls::crypto::ring::default_provider().install_default();
        Self {
            ingress: ingress.into().trim_end_matches('/').to_owned(),
            // A replica answering a client must not hang on Restate.
            http: reqwest::Client::builder()
                .timeout(REQUEST_TIMEOUT)
                .build()
                .unwrap_or_default(),
        }
    }

    fn url(&self, id: &str, handler: &str) -> String {
        format!(
            "{}/DurableTasks/{}/{handler}",
            self.ingress,
            crate::client::segment(id)
        )
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        url: &str,
        body: &B,
    ) -> Result<T, String> {
        let answer = self.http.post(url).json(body).send().await;
        crate::DurableClient::read(answer).await.map_err(|error| {
            let said: String = error.to_string().chars().take(SAID_AT_MOST).collect();
            format!("the task store: {said}")
        })
    }
}

impl McpTaskBackend for RestateTasks {
    fn start(&self, call: McpTaskCall) -> BoxFuture<'_, Result<McpTaskView, String>> {
        Box::pin(async move {
            let (id, caller) = (call.id.clone(), call.caller.clone());
            let _: serde_json::Value = self.post(&self.url(&id, "run/send"), &call).await?;
            // Kept before the answer goes out: a `tasks/get` right after
            // it, on any replica, finds the task.
            let deadline = tokio::time::Instant::now() + START_WAIT;
            loop {
                if let Some(view) = self.get(&id, caller.as_deref()).await? {
                    return Ok(view);
                }
                if tokio::time::Instant::now() >= deadline {
                    return Err(format!(
                        "task `{id}` was sent to Restate and did not start within {START_WAIT:?}: is a DurableTasks service registered?"
                    ));
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    }

    fn get<'a>(
        &'a self,
        id: &'a str,
        caller: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<McpTaskView>, String>> {
        Box::pin(async move { self.post(&self.url(id, "get"), &caller).await })
    }

    fn cancel<'a>(
        &'a self,
        id: &'a str,
        caller: Option<&'a str>,
    ) -> BoxFuture<'a, Result<bool, String>> {
        Box::pin(async move { self.post(&self.url(id, "cancel"), &caller).await })
    }
}

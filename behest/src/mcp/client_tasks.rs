//! A tool call that the server answered with a task (the MCP tasks
//! extension, SEP-2663), awaited: `tasks/get` polled at the interval the
//! server asks, its questions answered with `tasks/update`, the task
//! cancelled when the call is.

use std::time::Duration;

use rmcp::model::{CallToolResult, CancelTaskParams, GetTaskParams, TaskPayload, UpdateTaskParams};
use rmcp::{Peer, RoleClient};
use tokio_util::sync::CancellationToken;

use super::answers::Answerers;

/// The shortest and longest waits between two polls, whatever the server
/// asks.
const FASTEST_POLL: Duration = Duration::from_millis(50);
const SLOWEST_POLL: Duration = Duration::from_secs(30);

/// How an awaited task ended, when it did not complete.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskEnd {
    /// The call was cancelled (and the task with it).
    #[error("the call was cancelled")]
    Cancelled,
    /// The task failed, was cancelled by the server, or could not be read.
    #[error("{0}")]
    Failed(String),
}

/// Cancels the server's task when its wait ends before the task did: the
/// call dropped (a timeout, an aborted run), or given up on an error.
struct Unfinished {
    peer: Peer<RoleClient>,
    id: Option<String>,
}

impl Unfinished {
    /// The task ended on the server: nothing to cancel.
    fn ended(&mut self) {
        self.id = None;
    }
}

impl Drop for Unfinished {
    fn drop(&mut self) {
        let (Some(id), Ok(runtime)) = (self.id.take(), tokio::runtime::Handle::try_current())
        else {
            return;
        };
        let peer = self.peer.clone();
        runtime.spawn(async move {
            let _ = peer.cancel_task(CancelTaskParams::new(id)).await;
        });
    }
}

/// How many times in a row reading a task may fail (the server or the
/// network away for a moment) before the wait gives up.
const READS_TRIED: usize = 5;

/// The task a wait is for.
pub(crate) struct Awaited {
    pub(crate) id: String,
    /// The interval the server asked for.
    pub(crate) poll_ms: Option<u64>,
    /// Whether a wait dropped before the task ended cancels it: not when
    /// an engine may play the wait again (the drop is its attempt's).
    pub(crate) cancel_on_drop: bool,
}

/// Waits for a task to end: its inlined result when it completes. A wait
/// that ends first (`cancelled`, an error, the future dropped when
/// `cancel_on_drop`) cancels the task on the server.
pub(crate) async fn await_task(
    peer: &Peer<RoleClient>,
    answerers: &Answerers,
    awaited: Awaited,
    cancelled: &CancellationToken,
) -> Result<CallToolResult, TaskEnd> {
    let Awaited {
        id,
        poll_ms,
        cancel_on_drop,
    } = awaited;
    let mut unfinished = Unfinished {
        peer: peer.clone(),
        id: cancel_on_drop.then(|| id.clone()),
    };
    let mut wait = poll_interval(poll_ms);
    let mut failed_reads = 0;
    loop {
        let got = tokio::select! {
            biased;
            () = cancelled.cancelled() => {
                // Cancelled on purpose: the task goes too, whoever runs
                // the wait.
                let _ = peer.cancel_task(CancelTaskParams::new(id.clone())).await;
                unfinished.ended();
                return Err(TaskEnd::Cancelled);
            }
            got = peer.get_task(GetTaskParams::new(id.clone())) => got,
        };
        let got = match got {
            Ok(got) => {
                failed_reads = 0;
                got
            }
            Err(rmcp::service::ServiceError::McpError(error))
                if error.code == rmcp::model::ErrorCode::INVALID_PARAMS =>
            {
                unfinished.ended();
                return Err(TaskEnd::Failed(format!(
                    "the server no longer knows the call's task `{id}` (it restarted, or the task's time to live ran out): what the call did is unknown ({})",
                    error.message
                )));
            }
            Err(error) if failed_reads + 1 < READS_TRIED => {
                failed_reads += 1;
                tracing::debug!(task = %id, %error, "reading an MCP task failed; trying again");
                tokio::time::sleep(wait).await;
                continue;
            }
            Err(error) => {
                return Err(TaskEnd::Failed(format!(
                    "reading the server's task `{id}` failed {READS_TRIED} times: {error}"
                )))
            }
        };
        // The server may change the interval as the task goes on.
        if let Some(asked) = got.task.task.poll_interval_ms {
            wait = poll_interval(Some(asked));
        }
        if got.task.status().is_terminal() {
            unfinished.ended();
        }
        match got.task.payload {
            TaskPayload::Completed { result } => {
                return serde_json::from_value(serde_json::Value::Object(result)).map_err(
                    |error| TaskEnd::Failed(format!("the task's result does not read: {error}")),
                );
            }
            TaskPayload::Failed { error } => {
                let message = error
                    .get("message")
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("no reason given");
                return Err(TaskEnd::Failed(format!(
                    "the server's task failed: {message}"
                )));
            }
            TaskPayload::Cancelled => {
                return Err(TaskEnd::Failed(
                    "the server cancelled the call's task".to_owned(),
                ));
            }
            TaskPayload::InputRequired { input_requests } => {
                let answers = answerers
                    .answer_inputs(input_requests)
                    .await
                    .map_err(TaskEnd::Failed)?;
                peer.update_task(UpdateTaskParams::new(id.clone(), answers))
                    .await
                    .map_err(|error| {
                        TaskEnd::Failed(format!("answering the server's task: {error}"))
                    })?;
                continue;
            }
            _ => {}
        }
        tokio::select! {
            () = cancelled.cancelled() => {
                let _ = peer.cancel_task(CancelTaskParams::new(id.clone())).await;
                unfinished.ended();
                return Err(TaskEnd::Cancelled);
            }
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// The wait the server asks for, held between the fastest and slowest.
fn poll_interval(asked_ms: Option<u64>) -> Duration {
    asked_ms
        .map_or(Duration::from_secs(1), Duration::from_millis)
        .clamp(FASTEST_POLL, SLOWEST_POLL)
}

//! An [`Agent`] served as a Restate workflow: one workflow instance per
//! run id.

use std::net::SocketAddr;
use std::sync::Mutex;

use behest::{Agent, Message};
use restate_sdk::prelude::*;

use crate::steps::{answer_key, approval_key, RestateSteps, STATUS};
use crate::wire::{Answer, Approval, DurableOutcome, Status};

/// An [`Agent`] as the Restate workflow `DurableAgent`: `run` runs a
/// conversation to its outcome with every model turn and tool call
/// journaled; `answer` and `approve` resolve what a run waits for; `status`
/// tells where it stands. A run's id is the workflow's key.
pub struct DurableAgent {
    agent: Agent,
}

impl DurableAgent {
    /// `agent`'s runs, made durable.
    pub fn new(agent: Agent) -> Self {
        Self { agent }
    }
}

#[restate_sdk::workflow]
impl DurableAgent {
    /// Runs `conversation` to its outcome. Played again after a crash,
    /// completed turns and calls come from the journal.
    #[handler]
    async fn run(
        &self,
        ctx: WorkflowContext<'_>,
        conversation: Json<Vec<Message>>,
    ) -> Result<Json<DurableOutcome>, HandlerError> {
        let conversation = conversation.into_inner();
        let status = Status {
            transcript: conversation.clone(),
            ..Status::default()
        };
        let invocation = self.agent.invoke(conversation);
        let steps = RestateSteps {
            ctx: &ctx,
            control: invocation.control(),
            status: Mutex::new(status),
            events: Mutex::default(),
            turn: tokio::sync::Mutex::new(()),
        };
        let outcome = DurableOutcome::from(invocation.drive_with(&steps).await);
        let events = steps
            .events
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let mut status = steps
            .status
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        status.state = match &outcome {
            DurableOutcome::Completed { .. } => "completed",
            DurableOutcome::Failed { .. } => "failed",
            DurableOutcome::Cancelled { .. } => "cancelled",
        }
        .to_owned();
        status.pending.clear();
        status.transcript = outcome.transcript().to_vec();
        status.events = events;
        ctx.set(STATUS, Json(status));
        Ok(Json(outcome))
    }

    /// Answers an external call the run waits for.
    #[handler]
    async fn answer(
        &self,
        ctx: SharedWorkflowContext<'_>,
        answer: Json<Answer>,
    ) -> Result<(), HandlerError> {
        let answer = answer.into_inner();
        ctx.resolve_promise::<Json<Answer>>(&answer_key(&answer.call_id), Json(answer));
        Ok(())
    }

    /// Approves or denies a call the run waits for.
    #[handler]
    async fn approve(
        &self,
        ctx: SharedWorkflowContext<'_>,
        approval: Json<Approval>,
    ) -> Result<(), HandlerError> {
        let approval = approval.into_inner();
        ctx.resolve_promise::<Json<Approval>>(&approval_key(&approval.call_id), Json(approval));
        Ok(())
    }

    /// Where the run stands.
    #[handler]
    async fn status(&self, ctx: SharedWorkflowContext<'_>) -> Result<Json<Status>, HandlerError> {
        Ok(ctx.get::<Json<Status>>(STATUS).await?.unwrap_or_default())
    }
}

/// How long [`serve`] waits after a failed accept before the next.
const ACCEPT_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

/// Serves `agent`'s durable runs at `addr` until the process ends: the
/// endpoint a Restate server is told of (`restate deployments register
/// http://ADDR`).
///
/// # Errors
/// Returns only when `addr` cannot be bound (its port taken, or not an
/// address of this machine). A connection that fails to be accepted (out
/// of file descriptors, say) is logged and the next one awaited.
pub async fn serve(agent: Agent, addr: SocketAddr) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let endpoint = restate_sdk::hyper::HyperEndpoint::new(
        Endpoint::builder().bind(DurableAgent::new(agent)).build(),
    );
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let (stream, remote) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(error) => {
                // The listener stays good; the pause keeps a lasting
                // shortage (of file descriptors) from spinning.
                tracing::warn!("accepting a Restate connection at {addr} failed: {error}");
                tokio::time::sleep(ACCEPT_PAUSE).await;
                continue;
            }
        };
        // A journal entry is a small frame that Restate waits for: sent at
        // once, not held back to be coalesced with the next (Nagle).
        let _ = stream.set_nodelay(true);
        let endpoint = endpoint.clone();
        tokio::spawn(async move {
            let served = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), endpoint)
                .await;
            if let Err(error) = served {
                tracing::warn!("serving the Restate connection of {remote} failed: {error}");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};

    /// An address already in use is the caller's error to handle, not a
    /// panic inside the service.
    #[tokio::test]
    async fn serving_on_a_taken_address_returns_the_error() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let agent = Agent::new(
            ScriptedModel::new([]),
            ToolRuntime::new(ToolRegistry::new()),
        );
        let error = super::serve(agent, addr).await.unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::AddrInUse);
    }
}

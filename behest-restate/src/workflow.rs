//! An [`Agent`] served as a Restate workflow: one workflow instance per
//! run id.

use std::net::SocketAddr;
use std::time::Duration;

use behest::{Agent, Message, ToolOutput};
use restate_sdk::endpoint::{HandlerOptions, ServiceOptions};
use restate_sdk::prelude::*;
use restate_sdk::service::IntoServiceDefinition;

use crate::state::{Header, HEADER};
use crate::steps::RestateSteps;
use crate::wire::{json_size, over_the_step_limit, Answer, Approval, DurableOutcome};
use crate::wire::{Resolution, Resolve};

/// The largest output, answer or model turn a durable step keeps, by
/// default: 4 MiB. A page of status is written once it holds this much,
/// so a page holds at most about two steps' limit and a call's arguments:
/// keep it under a quarter of Restate's message limit (32 MiB by default).
pub const DEFAULT_MAX_STEP_BYTES: usize = 4 * 1024 * 1024;

/// How long Restate goes on retrying an invocation of the workflow (a run,
/// or an answer to it) while no service answers, before it pauses it: at
/// most a minute between attempts, for about 30 days. Restate's default
/// (70 attempts, about an hour) would pause an answer given during a long
/// outage, and the run's deadline would then pass without it.
const RETRY_ATTEMPTS: u64 = 30 * 24 * 60;

/// How long an ended run is kept unless [`DurableAgent::retention`] says:
/// a day, Restate's own default for a workflow.
const DEFAULT_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

/// An [`Agent`] as the Restate workflow `DurableAgent`: `run` runs a
/// conversation to its outcome with every model turn and tool call
/// journaled; `answer`, `approve` and `resolve` answer what a run waits
/// for. A run's id is the workflow's key; where it stands is read from
/// Restate's record of it ([`DurableClient::status`](crate::DurableClient::status)).
pub struct DurableAgent {
    agent: Agent,
    max_step_bytes: usize,
    retention: Option<Duration>,
}

impl DurableAgent {
    /// `agent`'s runs, made durable.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            max_step_bytes: DEFAULT_MAX_STEP_BYTES,
            retention: None,
        }
    }

    /// The largest tool output, external answer or model turn a step
    /// keeps ([`DEFAULT_MAX_STEP_BYTES`] by default). A tool output over it
    /// is the call's error, which the model reads; an answer over it is
    /// refused to its sender; a model turn over it fails the run. Keep it
    /// well under Restate's message limit.
    #[must_use]
    pub fn max_step_bytes(mut self, bytes: usize) -> Self {
        self.max_step_bytes = bytes;
        self
    }

    /// How long Restate keeps a run once it has ended (its outcome, its
    /// journal and state, which its status and transcript are read from,
    /// and the use of its id): one day by default, as Restate keeps a
    /// workflow; after it the same run id starts a new run from nothing.
    #[must_use]
    pub fn retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// Serves these runs at `addr`: see [`serve`].
    ///
    /// # Errors
    /// As [`serve`].
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<()> {
        serve_endpoint(Endpoint::builder().bind(self.definition()).build(), addr).await
    }

    /// The workflow with its options (retries, retention), to bind beside
    /// other services in an endpoint of one's own
    /// (`Endpoint::builder().bind(durable.definition())`, served with
    /// [`serve_endpoint`]).
    pub fn definition(self) -> restate_sdk::service::ServiceDefinition {
        // The run reads no state of its own; the status and the answers
        // read the little they need: no state is sent ahead with an
        // invocation.
        // The run's journal holds its transcript: kept as long as its
        // outcome.
        let retention = self.retention.unwrap_or(DEFAULT_RETENTION);
        let run = HandlerOptions::new()
            .workflow_retention(retention)
            .journal_retention(retention);
        let options = ServiceOptions::new()
            .enable_lazy_state(true)
            .retry_policy_max_interval(Duration::from_secs(60))
            .retry_policy_max_attempts(RETRY_ATTEMPTS)
            .retry_policy_pause_on_max_attempts()
            .handler("run", run);
        self.into_service_definition().options(options)
    }
}

/// Where the call `call_id` of the run on `ctx` waits for `what`: the
/// promise its answer resolves; or the error its sender reads (HTTP 404
/// when nothing of the run waits for it, 409 when it waits for something
/// else or was answered already).
///
/// Answers to one run are handled concurrently (shared handlers): two
/// that arrive together for the same call may both find it waiting, and
/// then the first to resolve its promise wins and the other is accepted
/// but not used; so may an answer that arrives as the call's deadline
/// passes. restate-sdk does not tell a handler whether its resolution
/// took.
async fn waiting_for(
    ctx: &SharedWorkflowContext<'_>,
    call_id: &str,
    what: &str,
) -> Result<String, HandlerError> {
    let header = ctx.get::<Json<Header>>(HEADER).await?.map(Json::into_inner);
    let run = ctx.key();
    let pending = header.map(|header| header.pending).unwrap_or_default();
    let Some(waiting) = pending
        .iter()
        .find(|waiting| waiting.call.call_id == call_id)
    else {
        let waiting: Vec<String> = pending
            .iter()
            .map(|waiting| format!("`{}` ({})", waiting.call.call_id, waiting.waits_for))
            .collect();
        let now = if waiting.is_empty() {
            "nothing".to_owned()
        } else {
            waiting.join(", ")
        };
        return Err(TerminalError::new_with_code(
            404,
            format!(
                "run `{run}` has no call `{call_id}` waiting for an {what} (it waits for {now}): an {what} is taken only while its call waits"
            ),
        )
        .into());
    };
    if waiting.waits_for != what {
        return Err(TerminalError::new_with_code(
            409,
            format!(
                "call `{call_id}` of run `{run}` waits for an {}, not an {what}",
                waiting.waits_for
            ),
        )
        .into());
    }
    let taken = ctx
        .peek_promise::<Json<serde_json::Value>>(&waiting.promise)
        .await?;
    if taken.is_some() {
        return Err(TerminalError::new_with_code(
            409,
            format!("call `{call_id}` of run `{run}` was given its {what} already"),
        )
        .into());
    }
    Ok(waiting.promise.clone())
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
        let invocation = self.agent.invoke(conversation.clone());
        let steps = RestateSteps::new(
            &ctx,
            &self.agent,
            invocation.control(),
            &conversation,
            self.max_step_bytes,
        );
        let outcome = DurableOutcome::from(invocation.drive_with(&steps).await);
        steps.finish(&outcome);
        // The transcript is the journal's already: the outcome does not
        // repeat it (the client reads it back).
        Ok(Json(outcome.with_transcript(Vec::new())))
    }

    /// Answers an external call the run waits for; refused (404) when
    /// the call does not wait for one.
    #[handler]
    async fn answer(
        &self,
        ctx: SharedWorkflowContext<'_>,
        answer: Json<Answer>,
    ) -> Result<(), HandlerError> {
        let answer = answer.into_inner();
        self.fits(&answer.output, "the answer")?;
        let promise = waiting_for(&ctx, &answer.call_id, "answer").await?;
        ctx.resolve_promise::<Json<Answer>>(&promise, Json(answer));
        Ok(())
    }

    /// Approves or denies a call the run waits for; refused (404) when the
    /// call does not wait for an approval.
    #[handler]
    async fn approve(
        &self,
        ctx: SharedWorkflowContext<'_>,
        approval: Json<Approval>,
    ) -> Result<(), HandlerError> {
        let approval = approval.into_inner();
        let promise = waiting_for(&ctx, &approval.call_id, "approval").await?;
        ctx.resolve_promise::<Json<Approval>>(&promise, Json(approval));
        Ok(())
    }

    /// Says what a call whose outcome is unknown did; refused (404) when
    /// no such call waits.
    #[handler]
    async fn resolve(
        &self,
        ctx: SharedWorkflowContext<'_>,
        resolve: Json<Resolve>,
    ) -> Result<(), HandlerError> {
        let resolve = resolve.into_inner();
        if let Resolution::Ran(output) = &resolve.resolution {
            self.fits(output, "the output")?;
        }
        let promise = waiting_for(&ctx, &resolve.call_id, "outcome").await?;
        ctx.resolve_promise::<Json<Resolve>>(&promise, Json(resolve));
        Ok(())
    }
}

impl DurableAgent {
    /// Refuses (413) an `output` over the runtime's output limit or the
    /// step limit, as `what`: taken, the model would read that it is over
    /// the limit, and the call could not be answered again.
    fn fits(&self, output: &ToolOutput, what: &str) -> Result<(), HandlerError> {
        if let Err(error) = self.agent.runtime().check_answer(output) {
            let why = format!("{what} is over the run's output limit: {error}");
            return Err(TerminalError::new_with_code(413, why).into());
        }
        let size = json_size(output);
        if size <= self.max_step_bytes {
            return Ok(());
        }
        let why = over_the_step_limit(what, size, self.max_step_bytes);
        Err(TerminalError::new_with_code(413, why).into())
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
    DurableAgent::new(agent).serve(addr).await
}

/// Serves a Restate `endpoint` at `addr` until the process ends, over
/// HTTP/2 with Nagle's algorithm off (a journal entry is a small frame
/// that Restate waits for; restate-sdk's own server leaves it on).
///
/// # Errors
/// As [`serve`].
pub async fn serve_endpoint(endpoint: Endpoint, addr: SocketAddr) -> std::io::Result<()> {
    use hyper_util::rt::{TokioExecutor, TokioIo};

    let endpoint = restate_sdk::hyper::HyperEndpoint::new(endpoint);
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

//! Calls that ask the client under protocol 2026-07-28, which has no
//! server-to-client requests. A tool's question (elicitation, sampling)
//! ends the request's round with an `input_required` result; the call
//! waits here, still running, under a `requestState` handle; the client's
//! retry carries its answers and the handle, and the call goes on where it
//! was. The tool sees none of this: [`McpCaller::elicit`] and
//! [`McpCaller::sample`] answer as they do over a connection of an older
//! protocol.
//!
//! [`McpCaller::elicit`]: super::McpCaller::elicit
//! [`McpCaller::sample`]: super::McpCaller::sample

use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{InputRequest, InputRequiredResult, InputResponses};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ask::McpAskError;
use super::log::ClientLog;
use crate::runtime::ToolCallResult;
use crate::sync::lock;

/// How long a call waits for its client's answers before it is cancelled.
pub(crate) const WAITS_FOR: Duration = Duration::from_secs(600);
/// How many calls may wait for answers at once; past it the one that has
/// waited longest is cancelled.
const MOST_WAITING: usize = 1024;

/// A question a tool puts to the client, and where its answer goes.
pub(crate) struct Ask {
    pub(crate) request: InputRequest,
    pub(crate) answer: oneshot::Sender<Result<Value, McpAskError>>,
}

/// The way a call's questions reach the request that drives it.
#[derive(Clone)]
pub(crate) struct Asker(mpsc::UnboundedSender<Ask>);

impl Asker {
    /// Puts `request` to the client in the call's next round and waits for
    /// the client's answer (a result's JSON).
    pub(crate) async fn ask(&self, request: InputRequest) -> Result<Value, McpAskError> {
        let (answer, answered) = oneshot::channel();
        self.0
            .send(Ask { request, answer })
            .map_err(|_| McpAskError::Request("the call's request has ended".to_owned()))?;
        answered.await.map_err(|_| {
            McpAskError::Request("the client did not answer before the call ended".to_owned())
        })?
    }
}

/// A call in flight across rounds.
pub(crate) struct InFlight {
    running: BoxFuture<'static, ToolCallResult>,
    asks: mpsc::UnboundedReceiver<Ask>,
    /// Cancels the call (the runtime gives it its grace).
    pub(crate) token: CancellationToken,
    /// Where its log messages go: the request of the round.
    pub(crate) log: Arc<ClientLog>,
}

/// How a round ended.
pub(crate) enum Round {
    /// The call finished.
    Done(ToolCallResult),
    /// The call asked: these questions go to the client, which retries
    /// with its answers and this `requestState`.
    Asked(InputRequiredResult),
}

impl InFlight {
    /// A call about to run, its questions put through the returned
    /// [`Asker`].
    pub(crate) fn new(
        running: impl FnOnce(Asker) -> BoxFuture<'static, ToolCallResult>,
        token: CancellationToken,
        log: Arc<ClientLog>,
    ) -> Self {
        let (sender, asks) = mpsc::unbounded_channel();
        Self {
            running: running(Asker(sender)),
            asks,
            token,
            log,
        }
    }
}

/// A call waiting for its client's answers.
struct Waiting {
    call: InFlight,
    /// Its questions, by the key the client answers under.
    questions: Vec<(String, oneshot::Sender<Result<Value, McpAskError>>)>,
    tool: String,
    /// Who made the call: only they may go on with it.
    caller: Option<String>,
    since: Instant,
}

/// The calls of one server (and every clone of it) that wait for answers.
#[derive(Default)]
pub(crate) struct Rounds {
    waiting: Mutex<HashMap<String, Waiting>>,
    asked: AtomicU64,
}

/// Why a retry could not go on with its call.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RoundError {
    #[error("the requestState names no call that waits for answers (it ended, or waited longer than {} s); call the tool again without it", WAITS_FOR.as_secs())]
    Unknown,
    #[error("the requestState belongs to a call of `{0}`, not of this tool")]
    OtherTool(String),
}

impl Rounds {
    /// Runs `call` until it finishes, asks, or `cancelled` fires (then the
    /// call is cancelled and awaited). A call that asks waits here for the
    /// client's retry.
    pub(crate) async fn drive(
        &self,
        mut call: InFlight,
        tool: &str,
        caller: Option<String>,
        cancelled: &CancellationToken,
    ) -> Round {
        let first = tokio::select! {
            result = &mut call.running => return Round::Done(result),
            Some(ask) = call.asks.recv() => ask,
            () = cancelled.cancelled() => {
                call.token.cancel();
                return Round::Done(call.running.await);
            }
        };
        // Questions asked together (from tasks the tool joined) go in one
        // round.
        let mut asks = vec![first];
        while let Ok(ask) = call.asks.try_recv() {
            asks.push(ask);
        }
        let mut requests = BTreeMap::new();
        let mut questions = Vec::new();
        for ask in asks {
            let key = format!("ask-{}", self.asked.fetch_add(1, Ordering::Relaxed));
            requests.insert(key.clone(), ask.request);
            questions.push((key, ask.answer));
        }
        let handle = fresh_handle();
        self.park(
            handle.clone(),
            Waiting {
                call,
                questions,
                tool: tool.to_owned(),
                caller,
                since: Instant::now(),
            },
        );
        Round::Asked(InputRequiredResult::new(Some(requests), Some(handle)))
    }

    /// The call `handle` names, given the client's `answers`: the call,
    /// for [`drive`](Self::drive) to go on with.
    pub(crate) fn resume(
        &self,
        handle: &str,
        tool: &str,
        caller: Option<&str>,
        answers: Option<InputResponses>,
    ) -> Result<InFlight, RoundError> {
        let waiting = {
            let mut waiting = lock(&self.waiting);
            let Some(found) = waiting.get(handle) else {
                return Err(RoundError::Unknown);
            };
            // Someone else's handle is as good as none: it tells them
            // nothing of the call.
            if found.caller.as_deref() != caller {
                return Err(RoundError::Unknown);
            }
            if found.tool != tool {
                return Err(RoundError::OtherTool(found.tool.clone()));
            }
            match waiting.remove(handle) {
                Some(found) => found,
                None => return Err(RoundError::Unknown),
            }
        };
        let mut answers = answers.unwrap_or_default();
        for (key, answer) in waiting.questions {
            let given = answers.remove(&key).ok_or_else(|| {
                McpAskError::Request(format!("the client's retry did not answer `{key}`"))
            });
            // A question the tool stopped waiting for needs no answer.
            let _ = answer.send(given);
        }
        Ok(waiting.call)
    }

    /// Keeps `waiting` under `handle`, cancelling calls that waited too
    /// long, and the longest waiting past [`MOST_WAITING`].
    fn park(&self, handle: String, waiting: Waiting) {
        let now = Instant::now();
        let mut ended = Vec::new();
        {
            let mut parked = lock(&self.waiting);
            let stale: Vec<String> = parked
                .iter()
                .filter(|(_, waiting)| now.saturating_duration_since(waiting.since) >= WAITS_FOR)
                .map(|(handle, _)| handle.clone())
                .collect();
            ended.extend(stale.iter().filter_map(|handle| parked.remove(handle)));
            if parked.len() >= MOST_WAITING {
                let oldest = parked
                    .iter()
                    .min_by_key(|(_, waiting)| waiting.since)
                    .map(|(handle, _)| handle.clone());
                if let Some(oldest) = oldest.and_then(|handle| parked.remove(&handle)) {
                    tracing::warn!(
                        "{MOST_WAITING} MCP calls wait for their clients' answers; the one waiting longest is cancelled"
                    );
                    ended.push(oldest);
                }
            }
            parked.insert(handle, waiting);
        }
        for waiting in ended {
            waiting.call.token.cancel();
            // Its tool gets its cancellation grace, then is dropped.
            tokio::spawn(waiting.call.running);
        }
    }

    /// How many calls wait for answers.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.waiting).len()
    }
}

/// A handle nobody can guess: 128 bits from two keyed SipHash runs over a
/// counter (std seeds each `RandomState` from the OS).
fn fresh_handle() -> String {
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let count = COUNT.fetch_add(1, Ordering::Relaxed);
    let high = std::collections::hash_map::RandomState::new().hash_one(count);
    let low = std::collections::hash_map::RandomState::new().hash_one(!count);
    format!("{high:016x}{low:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ToolCallResult;

    fn question() -> InputRequest {
        serde_json::from_value(serde_json::json!({
            "method": "elicitation/create",
            "params": {"mode": "form", "message": "Who?", "requestedSchema": {"type": "object", "properties": {}}}
        }))
        .unwrap()
    }

    fn asking_call(log: Arc<ClientLog>) -> InFlight {
        InFlight::new(
            |asker| {
                Box::pin(async move {
                    let answer = asker.ask(question()).await;
                    let text = match answer {
                        Ok(value) => value["content"]["name"].as_str().unwrap_or("?").to_owned(),
                        Err(error) => error.to_string(),
                    };
                    ToolCallResult {
                        call_id: "c0".to_owned(),
                        tool_name: "who".to_owned(),
                        outcome: Ok(crate::ToolOutput::text(text)),
                    }
                })
            },
            CancellationToken::new(),
            log,
        )
    }

    /// A call that asks waits under a handle; a retry of another caller or
    /// another tool is refused and changes nothing; the caller's retry
    /// with the answer finishes it.
    #[tokio::test]
    async fn a_call_that_asks_waits_for_its_own_caller_and_goes_on_with_the_answer() {
        let rounds = Rounds::default();
        let never = CancellationToken::new();
        let log = Arc::new(ClientLog::default());
        let Round::Asked(asked) = rounds
            .drive(asking_call(log), "who", Some("ada".into()), &never)
            .await
        else {
            panic!("the call asked");
        };
        let handle = asked.request_state.clone().unwrap();
        let requests = asked.input_requests.clone().unwrap();
        let key = requests.keys().next().unwrap().clone();
        assert_eq!(rounds.waiting(), 1);
        assert!(matches!(
            rounds.resume(&handle, "who", Some("bob"), None),
            Err(RoundError::Unknown)
        ));
        assert!(matches!(
            rounds.resume(&handle, "other", Some("ada"), None),
            Err(RoundError::OtherTool(tool)) if tool == "who"
        ));
        assert!(matches!(
            rounds.resume("not-a-handle", "who", Some("ada"), None),
            Err(RoundError::Unknown)
        ));
        let answers = InputResponses::from([(
            key,
            serde_json::json!({"action": "accept", "content": {"name": "Ada"}}),
        )]);
        let call = rounds
            .resume(&handle, "who", Some("ada"), Some(answers))
            .unwrap();
        assert_eq!(rounds.waiting(), 0);
        let Round::Done(result) = rounds.drive(call, "who", Some("ada".into()), &never).await
        else {
            panic!("the call finished");
        };
        assert_eq!(result.outcome.unwrap().text.as_deref(), Some("Ada"));
    }

    /// A retry that leaves a question unanswered gives the tool an error
    /// naming it, not a hang.
    #[tokio::test]
    async fn a_retry_without_the_answer_gives_the_tool_an_error() {
        let rounds = Rounds::default();
        let never = CancellationToken::new();
        let log = Arc::new(ClientLog::default());
        let Round::Asked(asked) = rounds.drive(asking_call(log), "who", None, &never).await else {
            panic!("the call asked");
        };
        let call = rounds
            .resume(&asked.request_state.unwrap(), "who", None, None)
            .unwrap();
        let Round::Done(result) = rounds.drive(call, "who", None, &never).await else {
            panic!("the call finished");
        };
        let text = result.outcome.unwrap().text.unwrap_or_default();
        assert!(text.contains("did not answer `ask-0`"), "{text}");
    }

    #[test]
    fn handles_differ() {
        assert_ne!(fresh_handle(), fresh_handle());
        assert_eq!(fresh_handle().len(), 32);
    }
}

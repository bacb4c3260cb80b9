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
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use futures::future::BoxFuture;
use rmcp::model::{InputRequest, InputRequiredResult, InputResponses};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ask::McpAskError;
use super::log::ClientLog;
use crate::runtime::ToolCallResult;
use crate::sync::lock;

/// How long a call waits for its client's answers before it is cancelled
/// (its tool's own timeout, 60 s unless set, usually ends it first).
pub(crate) const WAITS_FOR: Duration = Duration::from_secs(600);
/// How many calls of one caller may wait for answers at once; past it the
/// one of theirs that has waited longest is cancelled.
const MOST_WAITING_PER_CALLER: usize = 32;
/// How many calls may wait for answers at once in all; past it the one
/// that has waited longest is cancelled.
const MOST_WAITING: usize = 1024;

/// A question a tool puts to the client, and where its answer goes.
pub(crate) struct Ask {
    pub(crate) request: InputRequest,
    pub(crate) answer: oneshot::Sender<Result<Value, McpAskError>>,
}

/// What a running call tells whoever drives it: a request's rounds, or
/// its task.
pub(crate) enum Signal {
    /// A question for the client (boxed: the other signal is a word).
    Ask(Box<Ask>),
    /// The tool would have the rest of the call run as a task; the answer
    /// says whether it does.
    ContinueAsTask(oneshot::Sender<bool>),
}

/// The way a call's questions reach the request that drives it.
#[derive(Clone)]
pub(crate) struct Asker(mpsc::UnboundedSender<Signal>);

impl Asker {
    /// Puts `request` to the client in the call's next round and waits for
    /// the client's answer (a result's JSON).
    pub(crate) async fn ask(&self, request: InputRequest) -> Result<Value, McpAskError> {
        let (answer, answered) = oneshot::channel();
        self.0
            .send(Signal::Ask(Box::new(Ask { request, answer })))
            .map_err(|_| McpAskError::Request("the call's request has ended".to_owned()))?;
        answered.await.map_err(|_| {
            McpAskError::Request("the client did not answer before the call ended".to_owned())
        })?
    }

    /// Asks that the rest of the call run as a task: whether it does (the
    /// call's tool takes tasks that begin at its word, and its client
    /// declared the tasks extension), or already did.
    pub(crate) async fn continue_as_task(&self) -> bool {
        let (answer, answered) = oneshot::channel();
        if self.0.send(Signal::ContinueAsTask(answer)).is_err() {
            return false;
        }
        answered.await.unwrap_or(false)
    }
}

/// A call in flight across rounds. It runs in a task of its own, so its
/// timeout and cancellation hold while it waits for answers.
pub(crate) struct InFlight {
    running: JoinHandle<ToolCallResult>,
    signals: mpsc::UnboundedReceiver<Signal>,
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
    /// The tool would have the rest of the call run as a task, which the
    /// request may start: the call, and where to say that it did.
    ToTask(InFlight, oneshot::Sender<bool>),
}

/// What a call did next.
pub(crate) enum Next {
    /// It finished (or its task died, said as why).
    Finished(Result<ToolCallResult, String>),
    /// It signalled.
    Signal(Signal),
}

impl InFlight {
    /// Starts a call, its questions put through the [`Asker`] it is given.
    pub(crate) fn start(
        running: impl FnOnce(Asker) -> BoxFuture<'static, ToolCallResult>,
        token: CancellationToken,
        log: Arc<ClientLog>,
    ) -> Self {
        let (sender, signals) = mpsc::unbounded_channel();
        Self {
            running: tokio::spawn(running(Asker(sender))),
            signals,
            token,
            log,
        }
    }

    /// Waits for the call to finish or signal.
    pub(crate) async fn next(&mut self) -> Next {
        tokio::select! {
            result = Self::result(&mut self.running) => Next::Finished(result),
            Some(signal) = self.signals.recv() => Next::Signal(signal),
        }
    }

    /// A signal the call sent already, if any.
    pub(crate) fn signalled(&mut self) -> Option<Signal> {
        self.signals.try_recv().ok()
    }

    /// The call's result; a task that panicked or was aborted says so.
    pub(crate) async fn result(
        running: &mut JoinHandle<ToolCallResult>,
    ) -> Result<ToolCallResult, String> {
        running.await.map_err(|error| error.to_string())
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

impl Waiting {
    /// Ends the call: the tool sees its cancellation (and gets its grace)
    /// in its own task.
    fn cancel(self) {
        self.call.token.cancel();
    }
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
    #[error("the requestState names no call that waits for answers (it ended, or waited longer than it may); call the tool again without it")]
    Unknown,
    #[error("the requestState belongs to a call of `{0}`, not of this tool")]
    OtherTool(String),
}

impl Rounds {
    /// Runs `call` until it finishes, asks, or `cancelled` fires (then the
    /// call is cancelled and awaited). A call that asks waits here for the
    /// client's retry, at most `wait`. A call whose tool would go on as a
    /// task is handed back when `may_become_task`, and told no otherwise.
    pub(crate) async fn drive(
        self: &Arc<Self>,
        mut call: InFlight,
        tool: &str,
        caller: Option<String>,
        cancelled: &CancellationToken,
        wait: Duration,
        may_become_task: bool,
    ) -> Round {
        let first = loop {
            let next = tokio::select! {
                biased;
                () = cancelled.cancelled() => {
                    call.token.cancel();
                    return Round::Done(finished(tool, InFlight::result(&mut call.running).await));
                }
                next = call.next() => next,
            };
            match next {
                Next::Finished(result) => return Round::Done(finished(tool, result)),
                Next::Signal(Signal::Ask(ask)) => break *ask,
                Next::Signal(Signal::ContinueAsTask(answer)) if may_become_task => {
                    return Round::ToTask(call, answer);
                }
                Next::Signal(Signal::ContinueAsTask(answer)) => {
                    let _ = answer.send(false);
                }
            }
        };
        // Questions asked together (from tasks the tool joined) go in one
        // round.
        let mut asks = vec![first];
        while let Some(signal) = call.signalled() {
            match signal {
                Signal::Ask(ask) => asks.push(*ask),
                // Asked beside a question: the question's round comes
                // first, and the tool may ask again after it.
                Signal::ContinueAsTask(answer) => {
                    let _ = answer.send(false);
                }
            }
        }
        let mut requests = BTreeMap::new();
        let mut questions = Vec::new();
        for ask in asks {
            let key = format!("ask-{}", self.asked.fetch_add(1, Ordering::Relaxed));
            requests.insert(key.clone(), ask.request);
            questions.push((key, ask.answer));
        }
        let handle = fresh_handle();
        let waiting = Waiting {
            call,
            questions,
            tool: tool.to_owned(),
            caller,
            since: Instant::now(),
        };
        self.park(handle.clone(), waiting, wait);
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

    /// Cancels the call waiting under `handle`, whose client will never
    /// learn the handle (its request ended before the answer went out).
    pub(crate) fn abandon(&self, handle: &str) {
        let abandoned = lock(&self.waiting).remove(handle);
        if let Some(waiting) = abandoned {
            waiting.cancel();
        }
    }

    /// Keeps `waiting` under `handle` for at most `wait`, cancelling the
    /// longest waiting of its caller past [`MOST_WAITING_PER_CALLER`] and
    /// of all past [`MOST_WAITING`].
    fn park(self: &Arc<Self>, handle: String, waiting: Waiting, wait: Duration) {
        let mut ended = Vec::new();
        {
            let mut parked = lock(&self.waiting);
            let caller = waiting.caller.clone();
            let theirs = |other: &Waiting| other.caller == caller;
            if parked.values().filter(|other| theirs(other)).count() >= MOST_WAITING_PER_CALLER {
                ended.extend(longest_waiting(&mut parked, theirs));
            }
            if parked.len() >= MOST_WAITING {
                ended.extend(longest_waiting(&mut parked, |_| true));
                tracing::warn!(
                    "{MOST_WAITING} MCP calls wait for their clients' answers; the one waiting longest is cancelled"
                );
            }
            parked.insert(handle.clone(), waiting);
        }
        ended.into_iter().for_each(Waiting::cancel);
        let rounds: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(rounds) = rounds.upgrade() {
                rounds.abandon(&handle);
            }
        });
    }

    /// How many calls wait for answers.
    #[cfg(test)]
    pub(crate) fn waiting(&self) -> usize {
        lock(&self.waiting).len()
    }
}

/// Takes out of `parked` the call among `which` that has waited longest.
fn longest_waiting(
    parked: &mut HashMap<String, Waiting>,
    which: impl Fn(&Waiting) -> bool,
) -> Option<Waiting> {
    let oldest = parked
        .iter()
        .filter(|(_, waiting)| which(waiting))
        .min_by_key(|(_, waiting)| waiting.since)
        .map(|(handle, _)| handle.clone())?;
    parked.remove(&oldest)
}

/// The call's result, or, if its task died, an error result naming why.
pub(crate) fn finished(tool: &str, result: Result<ToolCallResult, String>) -> ToolCallResult {
    result.unwrap_or_else(|reason| ToolCallResult {
        call_id: String::new(),
        tool_name: tool.to_owned(),
        outcome: Err(crate::ToolError::execution(format!(
            "the call's task ended without a result: {reason}"
        ))),
    })
}

/// A handle nobody can guess: 128 bits from the operating system.
pub(crate) fn fresh_handle() -> String {
    let mut bytes = [0u8; 16];
    if let Err(error) = getrandom::fill(&mut bytes) {
        // No randomness from the OS: a handle still unique in this process,
        // from std's randomly seeded hasher.
        tracing::warn!("no random bytes for an MCP request state: {error}");
        use std::hash::BuildHasher;
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let count = COUNT.fetch_add(1, Ordering::Relaxed);
        let hashed = std::collections::hash_map::RandomState::new().hash_one(count);
        bytes[..8].copy_from_slice(&hashed.to_le_bytes());
        bytes[8..].copy_from_slice(&count.to_le_bytes());
    }
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A form question, for tests of the calls that ask.
#[cfg(test)]
pub(crate) fn question() -> InputRequest {
    serde_json::from_value(serde_json::json!({
        "method": "elicitation/create",
        "params": {"mode": "form", "message": "Who?", "requestedSchema": {"type": "object", "properties": {}}}
    }))
    .unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::ToolCallResult;

    use super::question;

    fn said(text: String) -> ToolCallResult {
        ToolCallResult {
            call_id: "c0".to_owned(),
            tool_name: "who".to_owned(),
            outcome: Ok(crate::ToolOutput::text(text)),
        }
    }

    /// A call that asks one question and answers with the name given, or
    /// with "cancelled" (also sent on `cancelled`) once its token fires.
    fn asking_call(cancelled: Option<oneshot::Sender<()>>) -> InFlight {
        let token = CancellationToken::new();
        let seen = token.clone();
        InFlight::start(
            |asker| {
                Box::pin(async move {
                    // A cancelled call's questions go with it: the token
                    // is looked at first.
                    tokio::select! {
                        biased;
                        () = seen.cancelled() => {
                            if let Some(cancelled) = cancelled {
                                let _ = cancelled.send(());
                            }
                            said("cancelled".to_owned())
                        }
                        answer = asker.ask(question()) => said(match answer {
                            Ok(value) => value["content"]["name"].as_str().unwrap_or("?").to_owned(),
                            Err(error) => error.to_string(),
                        }),
                    }
                })
            },
            token,
            Arc::new(ClientLog::default()),
        )
    }

    const LONG: Duration = Duration::from_secs(600);

    /// A call that asks waits under a handle; a retry of another caller or
    /// another tool is refused and changes nothing; the caller's retry
    /// with the answer finishes it.
    #[tokio::test]
    async fn a_call_that_asks_waits_for_its_own_caller_and_goes_on_with_the_answer() {
        let rounds = Arc::new(Rounds::default());
        let never = CancellationToken::new();
        let call = asking_call(None);
        let Round::Asked(asked) = rounds
            .drive(call, "who", Some("ada".into()), &never, LONG, false)
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
        let Round::Done(result) = rounds
            .drive(call, "who", Some("ada".into()), &never, LONG, false)
            .await
        else {
            panic!("the call finished");
        };
        assert_eq!(result.outcome.unwrap().text.as_deref(), Some("Ada"));
    }

    /// A retry that leaves a question unanswered gives the tool an error
    /// naming it, not a hang.
    #[tokio::test]
    async fn a_retry_without_the_answer_gives_the_tool_an_error() {
        let rounds = Arc::new(Rounds::default());
        let never = CancellationToken::new();
        let Round::Asked(asked) = rounds
            .drive(asking_call(None), "who", None, &never, LONG, false)
            .await
        else {
            panic!("the call asked");
        };
        let call = rounds
            .resume(&asked.request_state.unwrap(), "who", None, None)
            .unwrap();
        let Round::Done(result) = rounds.drive(call, "who", None, &never, LONG, false).await else {
            panic!("the call finished");
        };
        let text = result.outcome.unwrap().text.unwrap_or_default();
        assert!(text.contains("did not answer `ask-"), "{text}");
    }

    /// A call whose client never comes back is cancelled after the wait,
    /// and its tool sees it while nothing else happens on the server.
    #[tokio::test(start_paused = true)]
    async fn a_call_nobody_answers_is_cancelled_after_its_wait() {
        let rounds = Arc::new(Rounds::default());
        let never = CancellationToken::new();
        let (cancelled, seen) = oneshot::channel();
        let wait = Duration::from_secs(5);
        let Round::Asked(_) = rounds
            .drive(
                asking_call(Some(cancelled)),
                "who",
                None,
                &never,
                wait,
                false,
            )
            .await
        else {
            panic!("the call asked");
        };
        assert_eq!(rounds.waiting(), 1);
        tokio::time::timeout(wait * 2, seen).await.unwrap().unwrap();
        assert_eq!(rounds.waiting(), 0);
    }

    /// One caller's calls past its share are cancelled, the longest
    /// waiting first; another caller's are not touched.
    #[tokio::test]
    async fn one_caller_cannot_keep_more_than_its_share_of_calls_waiting() {
        let rounds = Arc::new(Rounds::default());
        let never = CancellationToken::new();
        let (cancelled, first_cancelled) = oneshot::channel();
        let mut first = Some(cancelled);
        let bob = rounds
            .drive(
                asking_call(None),
                "who",
                Some("bob".into()),
                &never,
                LONG,
                false,
            )
            .await;
        assert!(matches!(bob, Round::Asked(_)));
        for _ in 0..=MOST_WAITING_PER_CALLER {
            let round = rounds
                .drive(
                    asking_call(first.take()),
                    "who",
                    Some("ada".into()),
                    &never,
                    LONG,
                    false,
                )
                .await;
            assert!(matches!(round, Round::Asked(_)));
            // Each waits a little longer than the one before.
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        first_cancelled.await.unwrap();
        assert_eq!(rounds.waiting(), MOST_WAITING_PER_CALLER + 1);
    }

    /// A request cancelled while its call runs cancels the call and
    /// answers with what the call made of it.
    #[tokio::test]
    async fn a_cancelled_request_cancels_its_call() {
        let rounds = Arc::new(Rounds::default());
        let cancelled = CancellationToken::new();
        cancelled.cancel();
        let Round::Done(result) = rounds
            .drive(asking_call(None), "who", None, &cancelled, LONG, false)
            .await
        else {
            panic!("a cancelled request parks nothing");
        };
        assert_eq!(result.outcome.unwrap().text.as_deref(), Some("cancelled"));
        assert_eq!(rounds.waiting(), 0);
    }

    #[test]
    fn handles_differ() {
        assert_ne!(fresh_handle(), fresh_handle());
        assert_eq!(fresh_handle().len(), 32);
    }
}

//! The HTTP side: an axum router that runs an agent in sessions and
//! streams each run to the front end in the protocol it speaks.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, MethodRouter};
use axum::Router;
use futures::channel::mpsc::{unbounded, UnboundedReceiver};
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::json;

use super::ag_ui::{AgUiStream, RunAgentInput};
use super::ai_sdk::{ChatRequest, UiMessageStream, STREAM_HEADER};
use super::input::{parse_approval_id, Answer, Turn, UiInputError};
use crate::run::{
    Agent, Envelope, MemoryStore, RunOutcome, RunState, Session, SessionId, SessionStore, WaitKind,
};

/// Serves an agent to chat front ends: the AI SDK's `useChat` at
/// `POST /api/chat` and AG-UI clients at `POST /ag-ui`
/// ([`router`](Self::router)), or either where you mount it
/// ([`ai_sdk`](Self::ai_sdk), [`ag_ui`](Self::ag_ui)).
///
/// Each chat (the AI SDK's chat id, AG-UI's thread id) is a session of
/// the store: the server keeps the conversation, and reads from each
/// request only what is new, the user's last message or the answers to
/// approvals. A run that needs an approval pauses, is kept in the store,
/// and ends its stream asking for it (`tool-approval-request`, an AG-UI
/// `interrupt`); the answer, in the front end's next request, continues
/// it in whichever process gets it.
///
/// ```
/// use behest::run::ScriptedTurn;
/// use behest::ui::ChatUi;
/// use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};
///
/// let agent = Agent::new(
///     ScriptedModel::new([ScriptedTurn::text("Hello!")]),
///     ToolRuntime::new(ToolRegistry::new()),
/// );
/// let app: axum::Router = ChatUi::new(agent).router();
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct ChatUi {
    agent: Agent,
    store: Arc<dyn SessionStore>,
    /// The session a request's chat runs in, or `None` to refuse it.
    session_for: Arc<SessionFor>,
    /// The largest request body taken.
    body_limit: usize,
    /// The chats with a run going on in this process.
    running: Arc<Mutex<HashSet<String>>>,
}

/// Maps a request's headers and chat id to the session it runs in.
type SessionFor = dyn Fn(&HeaderMap, &str) -> Option<String> + Send + Sync;

impl std::fmt::Debug for ChatUi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatUi")
            .field("body_limit", &self.body_limit)
            .finish_non_exhaustive()
    }
}

/// What the run of one request tells the stream.
enum Step {
    /// An event of the run.
    Event(Envelope),
    /// How it ended, or why the request failed.
    End(Result<Ended, String>),
}

/// How a request's run ended.
enum Ended {
    /// The run ran (or went on) to this outcome.
    Outcome(RunOutcome),
    /// The answers were kept: the run still waits for others, as this
    /// state says.
    Kept(Box<RunState>),
}

impl ChatUi {
    /// Serves `agent`, keeping its chats in memory (a
    /// [`MemoryStore`]): lost when the process ends.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            store: Arc::new(MemoryStore::new()),
            session_for: Arc::new(|_: &HeaderMap, chat: &str| Some(chat.to_owned())),
            body_limit: 32 * 1024 * 1024,
            running: Arc::default(),
        }
    }

    /// Keeps the chats in `store` (SQLite, PostgreSQL: `behest-sessions`),
    /// so that any replica sharing it continues a paused run.
    #[must_use]
    pub fn store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = store;
        self
    }

    /// Which session a request's chat runs in: by default the chat's own
    /// id, which anyone who knows it can use. Name a session of the
    /// caller's (from a header your authentication layer set, say), or
    /// `None` to refuse the request with `403`.
    ///
    /// ```
    /// # use behest::ui::ChatUi;
    /// # fn scoped(ui: ChatUi) -> ChatUi {
    /// ui.session_for(|headers, chat| {
    ///     let user = headers.get("x-user")?.to_str().ok()?;
    ///     Some(format!("{user}.{chat}"))
    /// })
    /// # }
    /// ```
    #[must_use]
    pub fn session_for(
        mut self,
        map: impl Fn(&HeaderMap, &str) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.session_for = Arc::new(map);
        self
    }

    /// The largest request body taken, in bytes (default 32 MiB): the AI
    /// SDK sends the whole chat, images included, with every message.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// A router with both protocols: `POST /api/chat` (AI SDK) and
    /// `POST /ag-ui` (AG-UI).
    pub fn router(&self) -> Router {
        Router::new()
            .route("/api/chat", self.ai_sdk())
            .route("/ag-ui", self.ag_ui())
    }

    /// The AI SDK's UI message stream, for `useChat` (`DefaultChatTransport`).
    pub fn ai_sdk(&self) -> MethodRouter {
        post(ai_sdk)
            .layer(DefaultBodyLimit::max(self.body_limit))
            .with_state(self.clone())
    }

    /// AG-UI events, for an AG-UI client (`HttpAgent`).
    pub fn ag_ui(&self) -> MethodRouter {
        post(ag_ui)
            .layer(DefaultBodyLimit::max(self.body_limit))
            .with_state(self.clone())
    }

    /// Runs what `turn` asks in `session`, on a task of its own (a run
    /// the front end stops reading still ends and is written), and gives
    /// its events, then its end. One run per chat at a time in this
    /// process: another request meanwhile is told so.
    fn drive(&self, session: String, turn: Turn) -> UnboundedReceiver<Step> {
        let (steps, received) = unbounded();
        let id = match SessionId::new(session.clone()) {
            Ok(id) => id,
            Err(error) => {
                let _ = steps.unbounded_send(Step::End(Err(error.to_string())));
                return received;
            }
        };
        if !crate::sync::lock(&self.running).insert(session.clone()) {
            let _ = steps.unbounded_send(Step::End(Err(
                "this chat has a run going on: wait for its answer, then send again".to_owned(),
            )));
            return received;
        }
        let running = Running {
            chats: self.running.clone(),
            chat: session,
        };
        let events = steps.clone();
        let session = self
            .agent
            .session(self.store.clone(), id)
            .on(move |envelope, _| {
                let _ = events.unbounded_send(Step::Event(envelope));
            });
        let ending = steps.clone();
        let run = tokio::spawn(async move {
            let _running = running;
            let end = match turn {
                Turn::Say(message) => session
                    .run([message])
                    .await
                    .map(Ended::Outcome)
                    .map_err(|error| error.to_string()),
                Turn::Answer(answers) => answer(&session, answers).await,
            };
            let _ = steps.unbounded_send(Step::End(end));
        });
        // A run that panicked still ends its stream, with the reason.
        tokio::spawn(async move {
            if let Err(error) = run.await {
                let _ = ending.unbounded_send(Step::End(Err(format!("the run stopped: {error}"))));
            }
        });
        received
    }

    /// The session a request's chat runs in, or why it is refused.
    fn session(&self, headers: &HeaderMap, chat: &str) -> Result<String, Refusal> {
        (self.session_for)(headers, chat).ok_or_else(|| Refusal {
            status: StatusCode::FORBIDDEN,
            error: format!("the chat `{chat}` is not one this caller may use"),
        })
    }
}

/// A chat's mark as running, taken off when its run's task ends.
struct Running {
    chats: Arc<Mutex<HashSet<String>>>,
    chat: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        crate::sync::lock(&self.chats).remove(&self.chat);
    }
}

/// Gives the answers to the approvals the session's paused run still waits
/// for; the one that gives the run its last answer goes on with it. A
/// front end sends every approval of its last message again, answered or
/// not: those already answered are passed over, and only a request that
/// answers none is refused.
async fn answer(session: &Session, answers: Vec<Answer>) -> Result<Ended, String> {
    let paused = session.paused().await.map_err(|error| error.to_string())?;
    let waiting = |id: &str| -> Option<(String, String)> {
        let (run, path) = parse_approval_id(id).ok()?;
        let state = &paused.iter().find(|paused| paused.run_id() == run)?.state;
        state
            .waits_by_path()
            .into_iter()
            .any(|(at, wait)| at == path && wait.kind == WaitKind::Approval && !wait.is_answered())
            .then(|| (run.to_owned(), path.to_owned()))
    };
    let fresh: Vec<(String, String, Answer)> = answers
        .iter()
        .filter_map(|answer| waiting(&answer.id).map(|(run, path)| (run, path, answer.clone())))
        .collect();
    if fresh.is_empty() {
        let ids: Vec<&str> = answers.iter().map(|answer| answer.id.as_str()).collect();
        return Err(UiInputError::Approval(ids.join("`, `")).to_string());
    }
    let mut last_run = String::new();
    for (run, path, answer) in fresh {
        let given = if answer.approved {
            session.approve(&run, &path).await
        } else {
            let reason = answer
                .reason
                .as_deref()
                .unwrap_or("the person denied the call");
            session.deny(&run, &path, reason).await
        };
        if let Some(outcome) = given.map_err(|error| error.to_string())? {
            return Ok(Ended::Outcome(outcome));
        }
        last_run = run;
    }
    let paused = session.paused().await.map_err(|error| error.to_string())?;
    paused
        .into_iter()
        .find(|paused| paused.run_id() == last_run)
        .map(|paused| Ended::Kept(Box::new(paused.state)))
        .ok_or_else(|| format!("the run `{last_run}` went on elsewhere"))
}

/// Refuses a body that is not JSON: a form or `text/plain` POST from
/// another site (which needs no preflight) starts no run.
fn json_only(headers: &HeaderMap) -> Result<(), Refusal> {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|kind| kind.to_str().ok())
        .is_some_and(|kind| {
            kind.split(';')
                .next()
                .is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
        });
    if json {
        Ok(())
    } else {
        Err(Refusal {
            status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
            error: "send the request as `content-type: application/json`".to_owned(),
        })
    }
}

/// A request refused before any run: its status and why.
pub(super) struct Refusal {
    pub status: StatusCode,
    pub error: String,
}

impl Refusal {
    /// A request that asks what cannot be done: `400`.
    fn bad(error: UiInputError) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            error: error.to_string(),
        }
    }
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        failure(self.status, self.error)
    }
}

/// A front end's request, in whichever protocol.
trait UiRequest: serde::de::DeserializeOwned {
    /// The request's name, for the error that it is not one.
    const NAME: &'static str;
    /// The chat (AI SDK) or thread (AG-UI) it belongs to.
    fn chat(&self) -> &str;
    /// What it asks of the run.
    fn turn(&self) -> Result<Turn, UiInputError>;
}

impl UiRequest for ChatRequest {
    const NAME: &'static str = "the AI SDK's chat request";
    fn chat(&self) -> &str {
        &self.id
    }
    fn turn(&self) -> Result<Turn, UiInputError> {
        ChatRequest::turn(self)
    }
}

impl UiRequest for RunAgentInput {
    const NAME: &'static str = "AG-UI's RunAgentInput";
    fn chat(&self) -> &str {
        &self.thread_id
    }
    fn turn(&self) -> Result<Turn, UiInputError> {
        RunAgentInput::turn(self)
    }
}

/// Reads a request: JSON only, of the protocol's shape, asking something
/// of a chat this caller may use; its turn and its session.
fn read<R: UiRequest>(
    ui: &ChatUi,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(R, Turn, String), Refusal> {
    json_only(headers)?;
    let request: R = serde_json::from_slice(body).map_err(|error| {
        Refusal::bad(UiInputError::Body {
            protocol: R::NAME,
            error,
        })
    })?;
    let turn = request.turn().map_err(Refusal::bad)?;
    let session = ui.session(headers, request.chat())?;
    Ok((request, turn, session))
}

async fn ai_sdk(State(ui): State<ChatUi>, headers: HeaderMap, body: Bytes) -> Response {
    let (request, turn, session) = match read::<ChatRequest>(&ui, &headers, &body) {
        Ok(read) => read,
        Err(refused) => return refused.into_response(),
    };
    // An answer goes on with the message that asked; a new message gets
    // a new answer.
    let message_id = match &turn {
        Turn::Answer(_) => request
            .message_id
            .clone()
            .or_else(|| request.messages.last().map(|message| message.id.clone()))
            .unwrap_or_else(|| crate::run::fresh_id("msg")),
        Turn::Say(_) => crate::run::fresh_id("msg"),
    };
    let mut stream = UiMessageStream::new(message_id);
    if let Turn::Answer(answers) = &turn {
        // Calls of nested agents an earlier stream showed: their results
        // end their parts in this one.
        for answer in answers {
            if let Ok((_, path)) = parse_approval_id(&answer.id) {
                stream.answered(path);
            }
        }
    }
    let start = stream.start();
    let frames = frames(ui.drive(session, turn), start, move |step| match step {
        Step::Event(envelope) => stream.event(&envelope),
        Step::End(Ok(Ended::Outcome(outcome))) => stream.finish(&outcome),
        Step::End(Ok(Ended::Kept(_))) => stream.kept(),
        Step::End(Err(error)) => stream.refused(&error),
    });
    let mut response = sse(frames.chain(futures::stream::once(async {
        Bytes::from_static(b"data: [DONE]\n\n")
    })));
    response
        .headers_mut()
        .insert(STREAM_HEADER.0, HeaderValue::from_static(STREAM_HEADER.1));
    response
}

async fn ag_ui(State(ui): State<ChatUi>, headers: HeaderMap, body: Bytes) -> Response {
    let (input, turn, session) = match read::<RunAgentInput>(&ui, &headers, &body) {
        Ok(read) => read,
        Err(refused) => return refused.into_response(),
    };
    let mut stream = AgUiStream::new(&input.thread_id, &input.run_id);
    let start = stream.start();
    sse(frames(
        ui.drive(session, turn),
        start,
        move |step| match step {
            Step::Event(envelope) => stream.event(&envelope),
            Step::End(Ok(Ended::Outcome(outcome))) => stream.finish(&outcome),
            Step::End(Ok(Ended::Kept(state))) => stream.kept(&state),
            Step::End(Err(error)) => stream.refused(&error),
        },
    ))
}

/// The SSE frames of a run: `start`, then what each step makes, up to and
/// with its end.
fn frames<T: Serialize + Send + 'static>(
    steps: UnboundedReceiver<Step>,
    start: Vec<T>,
    mut encode: impl FnMut(Step) -> Vec<T> + Send + 'static,
) -> impl Stream<Item = Bytes> + Send + 'static {
    let body = steps.scan(false, move |ended, step| {
        if *ended {
            return futures::future::ready(None);
        }
        *ended = matches!(step, Step::End(_));
        futures::future::ready(Some(encode(step)))
    });
    futures::stream::once(async move { start })
        .chain(body)
        .filter(|values| futures::future::ready(!values.is_empty()))
        .map(|values| Bytes::from(sse_frames(&values)))
}

/// Each chunk or event as a server-sent event (`data: {json}` and a blank
/// line), written straight into one buffer: the body's bytes for a server
/// of your own that uses the encoders.
///
/// ```
/// use behest::ui::ai_sdk::UiChunk;
///
/// let bytes = behest::ui::sse_frames(&[UiChunk::StartStep]);
/// assert_eq!(bytes, b"data: {\"type\":\"start-step\"}\n\n");
/// ```
pub fn sse_frames<T: Serialize>(values: &[T]) -> Vec<u8> {
    let mut text = Vec::with_capacity(96 * values.len());
    for value in values {
        text.extend_from_slice(b"data: ");
        // A value of these types always serializes: its maps have string
        // keys and its numbers are finite.
        if serde_json::to_writer(&mut text, value).is_err() {
            text.extend_from_slice(b"{}");
        }
        text.extend_from_slice(b"\n\n");
    }
    text
}

/// A streamed response of SSE frames.
fn sse(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let body = Body::from_stream(frames.map(Ok::<_, Infallible>));
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::HeaderName::from_static("x-accel-buffering"), "no"),
        ],
        body,
    )
        .into_response()
}

/// A request refused: `status`, and `{"error": why}`.
pub(super) fn failure(status: StatusCode, error: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "error": error }).to_string(),
    )
        .into_response()
}

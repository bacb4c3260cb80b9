//! The HTTP side: an axum router that runs an agent in sessions and
//! streams each run to the front end in the protocol it speaks.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{post, MethodRouter};
use axum::Router;
use futures::channel::mpsc::{unbounded, UnboundedReceiver};
use futures::{Stream, StreamExt};
use serde::Serialize;
use serde_json::json;

use super::ag_ui::{AgUiStream, RunAgentInput};
use super::ai_sdk::{ChatRequest, UiMessageStream, STREAM_HEADER};
use super::input::{parse_approval_id, Turn, UiInputError};
use crate::run::{Agent, Envelope, MemoryStore, RunOutcome, Session, SessionId, SessionStore};

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
}

impl std::fmt::Debug for ChatUi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatUi").finish_non_exhaustive()
    }
}

/// What the run of one request tells the stream.
enum Step {
    /// An event of the run.
    Event(Envelope),
    /// How it ended: its outcome, `None` when the answers were kept
    /// while the run still waits for others, or why the request failed.
    End(Result<Option<RunOutcome>, String>),
}

impl ChatUi {
    /// Serves `agent`, keeping its chats in memory (a
    /// [`MemoryStore`]): lost when the process ends.
    pub fn new(agent: Agent) -> Self {
        Self {
            agent,
            store: Arc::new(MemoryStore::new()),
        }
    }

    /// Keeps the chats in `store` (SQLite, PostgreSQL: `behest-sessions`),
    /// so that any replica sharing it continues a paused run.
    #[must_use]
    pub fn store(mut self, store: Arc<dyn SessionStore>) -> Self {
        self.store = store;
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
        post(ai_sdk).with_state(self.clone())
    }

    /// AG-UI events, for an AG-UI client (`HttpAgent`).
    pub fn ag_ui(&self) -> MethodRouter {
        post(ag_ui).with_state(self.clone())
    }

    /// Runs what `turn` asks in the session `chat`, on a task of its own
    /// (a run the front end stops reading still ends and is written),
    /// and gives its events, then its end.
    fn drive(&self, chat: &str, turn: Turn) -> UnboundedReceiver<Step> {
        let (steps, received) = unbounded();
        let id = match SessionId::new(chat) {
            Ok(id) => id,
            Err(error) => {
                let _ = steps.unbounded_send(Step::End(Err(error.to_string())));
                return received;
            }
        };
        let events = steps.clone();
        let session = self
            .agent
            .session(self.store.clone(), id)
            .on(move |envelope, _| {
                let _ = events.unbounded_send(Step::Event(envelope));
            });
        tokio::spawn(async move {
            let end = match turn {
                Turn::Say(message) => session
                    .run([message])
                    .await
                    .map(Some)
                    .map_err(|error| error.to_string()),
                Turn::Answer(answers) => answer(&session, answers).await,
            };
            let _ = steps.unbounded_send(Step::End(end));
        });
        received
    }
}

/// Gives each answer to its paused run; the one that gives a run its last
/// answer goes on with it.
async fn answer(
    session: &Session,
    answers: Vec<super::input::Answer>,
) -> Result<Option<RunOutcome>, String> {
    let mut outcome = None;
    for answer in answers {
        let (run, call) = parse_approval_id(&answer.id).map_err(|error| error.to_string())?;
        let given = if answer.approved {
            session.approve(run, call).await
        } else {
            let reason = answer
                .reason
                .as_deref()
                .unwrap_or("the person denied the call");
            session.deny(run, call, reason).await
        };
        if let Some(ended) = given.map_err(|error| error.to_string())? {
            outcome = Some(ended);
        }
    }
    Ok(outcome)
}

async fn ai_sdk(State(ui): State<ChatUi>, body: Bytes) -> Response {
    let request: ChatRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return refuse(UiInputError::Body {
                protocol: "the AI SDK's chat request",
                error,
            })
        }
    };
    let turn = match request.turn() {
        Ok(turn) => turn,
        Err(error) => return refuse(error),
    };
    // An answer goes on with the message that asked; a new message gets
    // a new answer.
    let message_id = match &turn {
        Turn::Answer(_) => request
            .message_id
            .clone()
            .or_else(|| request.messages.last().map(|message| message.id.clone()))
            .unwrap_or_else(|| new_id("msg")),
        Turn::Say(_) => new_id("msg"),
    };
    let mut stream = UiMessageStream::new(message_id);
    let start = stream.start();
    let frames = frames(ui.drive(&request.id, turn), start, move |step| match step {
        Step::Event(envelope) => stream.event(&envelope),
        Step::End(Ok(Some(outcome))) => stream.finish(&outcome),
        Step::End(Ok(None)) => stream.kept(),
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

async fn ag_ui(State(ui): State<ChatUi>, body: Bytes) -> Response {
    let input: RunAgentInput = match serde_json::from_slice(&body) {
        Ok(input) => input,
        Err(error) => {
            return refuse(UiInputError::Body {
                protocol: "AG-UI's RunAgentInput",
                error,
            })
        }
    };
    let turn = match input.turn() {
        Ok(turn) => turn,
        Err(error) => return refuse(error),
    };
    let mut stream = AgUiStream::new(&input.thread_id, &input.run_id);
    let start = stream.start();
    sse(frames(
        ui.drive(&input.thread_id, turn),
        start,
        move |step| match step {
            Step::Event(envelope) => stream.event(&envelope),
            Step::End(Ok(Some(outcome))) => stream.finish(&outcome),
            Step::End(Ok(None)) => stream.kept(),
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

/// A request refused before any run: 400 with the reason as JSON.
fn refuse(error: UiInputError) -> Response {
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        json!({ "error": error.to_string() }).to_string(),
    )
        .into_response()
}

/// A new message id, unique in the process and unlikely across processes.
fn new_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "{prefix}_{nanos:x}_{}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

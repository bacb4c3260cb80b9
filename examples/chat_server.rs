//! A chat backend: each user's conversation is a session kept in a
//! database, each message a new HTTP request (to any replica), and a
//! refund waits for a person's approval, given in a later request.
//!
//! Run: `cargo run --example chat_server`. It keeps its sessions in
//! `chat.db` (SQLite); for PostgreSQL, set
//! `DATABASE_URL=postgres://user@host/database`. `PORT` sets the port
//! (default 3000). Then, in another terminal:
//!
//! ```text
//! $ curl -s localhost:3000/sessions/ada/messages -H 'content-type: application/json' \
//!     -d '{"text": "Hello, I am Ada"}'
//! {"reply":"You said: Hello, I am Ada (message 1 of this conversation).","run":null,"waiting":[]}
//! $ curl -s localhost:3000/sessions/ada/messages -H 'content-type: application/json' \
//!     -d '{"text": "Please refund order 42"}'
//! {"reply":null,"run":"run-…","waiting":[{"call_id":"call-2","tool":"refund","arguments":{"order":42}}]}
//! $ curl -s -X POST localhost:3000/sessions/ada/runs/run-…/calls/call-2/approve
//! {"reply":"Done: order 42 refunded.","run":null,"waiting":[]}
//! $ curl -s localhost:3000/sessions/ada
//! {"messages":[…],"version":3,"paused":[]}
//! ```
//!
//! (`…/deny` with `{"reason": "…"}` denies.) Offline, the model is a
//! stand-in that reads the conversation; for a real one, swap the line
//! that makes it (for example `behest::models::openai::Chat::new("gpt-4.1-mini")`,
//! with the `models` feature and `OPENAI_API_KEY`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use behest::prelude::*;
use behest::run::{
    ControlError, Model, ModelError, ModelRequest, RunOutcome, SessionError, SessionId,
    SessionStore,
};
use behest_sessions::{PostgresStore, SqliteStore};
use serde_json::{json, Value};

/// Refund an order.
#[tool]
fn refund(order: u32) -> String {
    // What the service does, once per approved refund.
    println!("refunded order {order}");
    format!("order {order} refunded")
}

/// A stand-in for a real model: it refunds the order a message names,
/// reports a tool's result, and otherwise says what it heard.
struct Support;

impl Model for Support {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let conversation = request.conversation;
        if let Some(Message::ToolResult(result)) = conversation.last() {
            return Ok(AssistantMessage::text(format!("Done: {}.", result.content)));
        }
        let users = conversation
            .iter()
            .filter(|message| matches!(message, Message::User { .. }))
            .count();
        let said = match conversation.last() {
            Some(Message::User { text }) => text.as_str(),
            _ => "",
        };
        let order = said
            .split(|c: char| !c.is_ascii_digit())
            .find_map(|word| word.parse::<u32>().ok());
        if let (true, Some(order)) = (said.contains("refund"), order) {
            let call = ToolCall::new(
                format!("call-{users}"),
                "refund",
                json!({ "order": order }).to_string(),
            );
            return Ok(AssistantMessage::tool_calls([call]));
        }
        Ok(AssistantMessage::text(format!(
            "You said: {said} (message {users} of this conversation)."
        )))
    }
}

/// The service's state: the agent, as every replica builds it, and the
/// store they share.
#[derive(Clone)]
struct App {
    agent: Agent,
    store: Arc<dyn SessionStore>,
}

impl App {
    fn session(&self, id: String) -> Result<behest::run::Session, Failure> {
        Ok(self.agent.session(self.store.clone(), SessionId::new(id)?))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store: Arc<dyn SessionStore> = match std::env::var("DATABASE_URL") {
        Ok(url) if url.starts_with("postgres") => Arc::new(PostgresStore::connect(&url).await?),
        Ok(path) => Arc::new(SqliteStore::open(path).await?),
        Err(_) => Arc::new(SqliteStore::open("chat.db").await?),
    };
    let tools = ToolRegistry::new().with(Refund)?;
    let agent = Agent::new(Support, ToolRuntime::new(tools))
        .instructions("You help customers with their orders.")
        .require_approval("refund");
    let app = Router::new()
        .route("/sessions/{id}", get(history))
        .route("/sessions/{id}/messages", post(message))
        .route(
            "/sessions/{id}/runs/{run}/calls/{call}/approve",
            post(approve),
        )
        .route("/sessions/{id}/runs/{run}/calls/{call}/deny", post(deny))
        .with_state(App { agent, store });
    let port = std::env::var("PORT").unwrap_or_else(|_| "3000".to_owned());
    let listener = tokio::net::TcpListener::bind(format!("127.0.0.1:{port}")).await?;
    println!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await?;
    Ok(())
}

async fn history(State(app): State<App>, Path(id): Path<String>) -> Result<Json<Value>, Failure> {
    let id = SessionId::new(id)?;
    let loaded = app.store.load(&id).await?;
    let paused: Vec<Value> = loaded
        .paused
        .iter()
        .map(|run| waiting(&run.state))
        .collect();
    Ok(Json(json!({
        "messages": loaded.messages,
        "version": loaded.version,
        "paused": paused,
    })))
}

async fn message(
    State(app): State<App>,
    Path(id): Path<String>,
    Json(body): Json<Value>,
) -> Result<Json<Value>, Failure> {
    let Some(text) = body["text"].as_str() else {
        return Err(Failure(
            StatusCode::BAD_REQUEST,
            "give {\"text\": \"…\"}".to_owned(),
        ));
    };
    let outcome = app.session(id)?.run([Message::user(text)]).await?;
    answer(Some(outcome))
}

async fn approve(
    State(app): State<App>,
    Path((id, run, call)): Path<(String, String, String)>,
) -> Result<Json<Value>, Failure> {
    answer(app.session(id)?.approve(&run, &call).await?)
}

async fn deny(
    State(app): State<App>,
    Path((id, run, call)): Path<(String, String, String)>,
    body: Option<Json<Value>>,
) -> Result<Json<Value>, Failure> {
    let reason = body
        .as_ref()
        .and_then(|Json(body)| body["reason"].as_str())
        .unwrap_or("a person said no");
    answer(app.session(id)?.deny(&run, &call, reason).await?)
}

/// The reply, or the calls the run waits for; `None` when the answer was
/// kept and the run waits for others.
fn answer(outcome: Option<RunOutcome>) -> Result<Json<Value>, Failure> {
    match outcome {
        None => Ok(Json(
            json!({ "reply": null, "run": null, "waiting": [], "kept": true }),
        )),
        Some(RunOutcome::Paused { state }) => Ok(Json(waiting(&state))),
        Some(RunOutcome::Failed { error, .. }) => Err(Failure(
            StatusCode::BAD_GATEWAY,
            format!("the run failed: {error}"),
        )),
        Some(outcome) => Ok(Json(json!({
            "reply": outcome.text(),
            "run": null,
            "waiting": [],
        }))),
    }
}

fn waiting(state: &behest::run::RunState) -> Value {
    // Every call that waits, at any depth of the agents, by the path it
    // is answered by.
    let waits: Vec<Value> = state
        .waits_by_path()
        .into_iter()
        .filter(|(_, wait)| !wait.is_answered())
        .map(|(path, wait)| {
            json!({
                "call_id": path,
                "tool": wait.call.tool_name,
                "arguments": wait.call.arguments,
            })
        })
        .collect();
    json!({ "reply": null, "run": state.run_id(), "waiting": waits })
}

/// An error as the client reads it: a status and a sentence.
struct Failure(StatusCode, String);

impl From<SessionError> for Failure {
    fn from(error: SessionError) -> Self {
        let status = match &error {
            SessionError::BadId { .. } => StatusCode::BAD_REQUEST,
            SessionError::NoRun { .. } | SessionError::Answer(ControlError::UnknownCall { .. }) => {
                StatusCode::NOT_FOUND
            }
            SessionError::TooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            SessionError::Conflict { .. }
            | SessionError::Busy { .. }
            | SessionError::Claimed { .. }
            | SessionError::Answer(_) => StatusCode::CONFLICT,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        Self(status, error.to_string())
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

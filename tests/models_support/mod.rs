//! A scripted HTTP server on 127.0.0.1 for the model clients' tests: it
//! answers each request with the next canned reply and records what it
//! was sent.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

/// One canned reply.
#[derive(Clone)]
pub enum Reply {
    /// A status, headers and a body.
    Whole {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Server-sent events, sent in pieces of `chunk` bytes; the body stops
    /// after `cut` bytes when set (a connection closed mid-stream).
    Events {
        text: String,
        chunk: usize,
        cut: Option<usize>,
    },
    /// No answer for this long.
    Silent(Duration),
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn json(body: &Value) -> Self {
        Self::Whole {
            status: 200,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// A status with a JSON error body.
    pub fn error(status: u16, body: &Value) -> Self {
        Self::Whole {
            status,
            headers: Vec::new(),
            body: body.to_string(),
        }
    }

    /// With a header.
    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        if let Self::Whole { headers, .. } = &mut self {
            headers.push((name, value.to_owned()));
        }
        self
    }

    /// `events` as server-sent events: `event:` lines when `named`, and a
    /// `data: [DONE]` line at the end when `done` (Chat Completions).
    pub fn events(events: &[Value], named: bool, done: bool) -> Self {
        let mut text = String::new();
        for event in events {
            if named {
                if let Some(name) = event.get("type").and_then(Value::as_str) {
                    text.push_str(&format!("event: {name}\n"));
                }
            }
            text.push_str(&format!("data: {event}\n\n"));
        }
        if done {
            text.push_str("data: [DONE]\n\n");
        }
        Self::Events {
            text,
            chunk: usize::MAX,
            cut: None,
        }
    }

    /// Sends the events in pieces of `size` bytes.
    pub fn in_chunks(mut self, size: usize) -> Self {
        if let Self::Events { chunk, .. } = &mut self {
            *chunk = size.max(1);
        }
        self
    }

    /// Ends the body after `at` bytes.
    pub fn cut_at(mut self, at: usize) -> Self {
        if let Self::Events { cut, .. } = &mut self {
            *cut = Some(at);
        }
        self
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Clone, Default)]
struct Shared {
    replies: Arc<Mutex<VecDeque<Reply>>>,
    received: Arc<Mutex<Vec<Received>>>,
}

/// The running server.
pub struct Server {
    pub addr: SocketAddr,
    shared: Shared,
}

impl Server {
    /// Starts a server on an ephemeral port of 127.0.0.1 that answers with
    /// `replies` in order (a 500 once they run out).
    pub async fn start(replies: impl IntoIterator<Item = Reply>) -> Self {
        let shared = Shared::default();
        shared.replies.lock().unwrap().extend(replies);
        let app = axum::Router::new()
            .fallback(answer)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self { addr, shared }
    }

    /// The base URL, with `/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// What the server received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

async fn answer(
    State(shared): State<Shared>,
    uri: Uri,
    headers: HeaderMap,
    body: String,
) -> Response {
    shared.received.lock().unwrap().push(Received {
        path: uri.to_string(),
        headers,
        body: serde_json::from_str(&body).unwrap_or(Value::Null),
    });
    let reply = shared.replies.lock().unwrap().pop_front();
    match reply {
        None => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from(
                r#"{"error":{"message":"no more replies scripted"}}"#,
            ))
            .unwrap(),
        Some(Reply::Whole {
            status,
            headers,
            body,
        }) => {
            let mut response = Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .header("x-request-id", "req_test_1");
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).unwrap()
        }
        Some(Reply::Events { text, chunk, cut }) => {
            let bytes = text.into_bytes();
            let end = cut.unwrap_or(bytes.len()).min(bytes.len());
            let pieces: Vec<Result<Vec<u8>, std::io::Error>> = bytes[..end]
                .chunks(chunk.min(end.max(1)))
                .map(|piece| Ok(piece.to_vec()))
                .collect();
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(futures::stream::iter(pieces)))
                .unwrap()
        }
        Some(Reply::Silent(wait)) => {
            tokio::time::sleep(wait).await;
            Response::builder().status(200).body(Body::empty()).unwrap()
        }
    }
}

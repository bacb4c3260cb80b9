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
use futures::StreamExt;
use serde_json::Value;

/// How a body cut short goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterCut {
    /// It ends, as if complete.
    Ends,
    /// The connection breaks: the body is not finished.
    Breaks,
    /// Nothing more comes, and the connection stays open.
    Stalls,
}

/// One canned reply.
#[derive(Clone)]
pub enum Reply {
    /// A status, headers and a body.
    Whole {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Server-sent events, sent in pieces of `chunk` bytes (or split at
    /// `splits`, when not empty), `pace` apart; after `cut` bytes, when
    /// set, the body does what `after_cut` says.
    Events {
        text: String,
        chunk: usize,
        splits: Vec<usize>,
        pace: Duration,
        cut: Option<usize>,
        after_cut: AfterCut,
    },
    /// A binary stream (AWS event-stream frames) of this content type, sent
    /// in pieces of `chunk` bytes; only its first `cut` bytes, when set.
    Binary {
        bytes: Vec<u8>,
        content_type: &'static str,
        chunk: usize,
        cut: Option<usize>,
    },
    /// No answer for this long.
    Silent(Duration),
    /// The reply the service would give to the request received: a stand-in
    /// that checks what the real service checks.
    Decide(Arc<dyn Fn(&Received) -> Reply + Send + Sync>),
}

impl Reply {
    /// A reply decided by the request, as the service would answer it.
    pub fn decide(answer: impl Fn(&Received) -> Reply + Send + Sync + 'static) -> Self {
        Self::Decide(Arc::new(answer))
    }
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
            splits: Vec::new(),
            pace: Duration::ZERO,
            cut: None,
            after_cut: AfterCut::Ends,
        }
    }

    /// AWS event-stream frames, whole.
    pub fn frames(bytes: Vec<u8>) -> Self {
        Self::Binary {
            bytes,
            content_type: "application/vnd.amazon.eventstream",
            chunk: usize::MAX,
            cut: None,
        }
    }

    /// A body of server-sent events as written.
    pub fn sse(text: &str) -> Self {
        let mut reply = Self::events(&[], false, false);
        if let Self::Events { text: body, .. } = &mut reply {
            *body = text.to_owned();
        }
        reply
    }

    /// The events' text (for a `Reply::events`).
    pub fn text(&self) -> &str {
        match self {
            Self::Events { text, .. } => text,
            _ => "",
        }
    }

    /// A binary stream sent in pieces of `size` bytes.
    pub fn binary_chunks(mut self, size: usize) -> Self {
        if let Self::Binary { chunk, .. } = &mut self {
            *chunk = size;
        }
        self
    }

    /// A binary stream that ends after its first `at` bytes.
    pub fn binary_cut_at(mut self, at: usize) -> Self {
        if let Self::Binary { cut, .. } = &mut self {
            *cut = Some(at);
        }
        self
    }

    /// The same events with the lines ended by `\r\n`.
    pub fn crlf(mut self) -> Self {
        if let Self::Events { text, .. } = &mut self {
            *text = text.replace('\n', "\r\n");
        }
        self
    }

    /// Sends the events in pieces that end at these byte offsets.
    pub fn split_at(mut self, at: impl IntoIterator<Item = usize>) -> Self {
        if let Self::Events { splits, .. } = &mut self {
            *splits = at.into_iter().collect();
        }
        self
    }

    /// Waits this long before each piece.
    pub fn paced(mut self, every: Duration) -> Self {
        if let Self::Events { pace, .. } = &mut self {
            *pace = every;
        }
        self
    }

    /// After `at` bytes, the connection breaks.
    pub fn broken_at(self, at: usize) -> Self {
        self.cut_then(at, AfterCut::Breaks)
    }

    /// After `at` bytes, nothing more comes.
    pub fn stalled_at(self, at: usize) -> Self {
        self.cut_then(at, AfterCut::Stalls)
    }

    fn cut_then(mut self, at: usize, then: AfterCut) -> Self {
        if let Self::Events { cut, after_cut, .. } = &mut self {
            *cut = Some(at);
            *after_cut = then;
        }
        self
    }

    /// Sends the events in pieces of `size` bytes.
    pub fn in_chunks(mut self, size: usize) -> Self {
        if let Self::Events { chunk, .. } = &mut self {
            *chunk = size.max(1);
        }
        self
    }

    /// Ends the body after `at` bytes.
    pub fn cut_at(self, at: usize) -> Self {
        self.cut_then(at, AfterCut::Ends)
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
    /// The body's bytes, as sent (what a signature covers).
    pub raw: Vec<u8>,
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

    /// Queues another reply.
    pub fn push(&self, reply: Reply) {
        self.shared.replies.lock().unwrap().push_back(reply);
    }

    /// What the server received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }
}

async fn answer(
    State(shared): State<Shared>,
    method: axum::http::Method,
    uri: Uri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    shared.received.lock().unwrap().push(Received {
        method: method.to_string(),
        path: uri.to_string(),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: body.to_vec(),
    });
    let mut reply = shared.replies.lock().unwrap().pop_front();
    if let Some(Reply::Decide(answer)) = &reply {
        let received = shared.received.lock().unwrap().last().cloned().unwrap();
        reply = Some(answer(&received));
    }
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
        Some(Reply::Events {
            text,
            chunk,
            splits,
            pace,
            cut,
            after_cut,
        }) => {
            let bytes = text.into_bytes();
            let end = cut.unwrap_or(bytes.len()).min(bytes.len());
            let mut bounds: Vec<usize> = if splits.is_empty() {
                (1..=end.div_ceil(chunk.max(1)))
                    .map(|i| (i.saturating_mul(chunk)).min(end))
                    .collect()
            } else {
                splits
                    .into_iter()
                    .filter(|&at| at > 0 && at < end)
                    .collect()
            };
            bounds.push(end);
            bounds.sort_unstable();
            bounds.dedup();
            let mut start = 0;
            let mut pieces: Vec<Result<Vec<u8>, std::io::Error>> = Vec::new();
            for bound in bounds {
                pieces.push(Ok(bytes[start..bound].to_vec()));
                start = bound;
            }
            if after_cut == AfterCut::Breaks && cut.is_some() {
                pieces.push(Err(std::io::Error::other("connection broken")));
            }
            let body = futures::stream::iter(pieces).then(move |piece| async move {
                // Even a zero sleep waits for the timer's next tick. The
                // break waits for what came before it to be sent: the
                // server drops unsent bytes with the connection.
                let wait = match &piece {
                    Err(_) => pace.max(Duration::from_millis(50)),
                    Ok(_) => pace,
                };
                if !wait.is_zero() {
                    tokio::time::sleep(wait).await;
                }
                piece
            });
            let body = if after_cut == AfterCut::Stalls && cut.is_some() {
                body.chain(futures::stream::pending()).boxed()
            } else {
                body.boxed()
            };
            Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(body))
                .unwrap()
        }
        Some(Reply::Binary {
            bytes,
            content_type,
            chunk,
            cut,
        }) => {
            let end = cut.unwrap_or(bytes.len()).min(bytes.len());
            let pieces: Vec<Result<Vec<u8>, std::io::Error>> = bytes[..end]
                .chunks(chunk.max(1))
                .map(|piece| Ok(piece.to_vec()))
                .collect();
            Response::builder()
                .status(200)
                .header("content-type", content_type)
                .header("x-amzn-requestid", "bedrock-req-1")
                .body(Body::from_stream(futures::stream::iter(pieces)))
                .unwrap()
        }
        Some(Reply::Silent(wait)) => {
            tokio::time::sleep(wait).await;
            Response::builder().status(200).body(Body::empty()).unwrap()
        }
        Some(Reply::Decide(_)) => Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Body::from(
                r#"{"error":{"message":"a decision decided on another"}}"#,
            ))
            .unwrap(),
    }
}

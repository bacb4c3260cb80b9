//! The 1 MB Chat answer that `model_streams` and `stream_ratios` read,
//! whole and streamed, the local server that sends it and the clients that
//! read it.

use std::hint::black_box;
use std::net::SocketAddr;

use behest::models::openai::Chat;
use behest::{DeltaSink, Message, Model};
use serde_json::json;
use tokio::runtime::Runtime;

const PIECE: &str =
    "The quick brown fox jumps over the lazy dog, again and again, for a long while. ";

pub fn whole_body() -> String {
    let text = PIECE.repeat(1_000_000 / PIECE.len());
    json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": text}}]})
    .to_string()
}

pub fn streamed_body() -> String {
    let mut body = String::new();
    for _ in 0..1_000_000 / PIECE.len() {
        let chunk = json!({"choices": [{"index": 0, "delta": {"content": PIECE}}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str(
        "data: {\"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\n",
    );
    body.push_str("data: [DONE]\n\n");
    body
}

/// Serves the answer on a free port of 127.0.0.1, whole at
/// `/whole/chat/completions` and as server-sent events at
/// `/streamed/chat/completions`, from a task of the calling runtime.
async fn serve_answers() -> SocketAddr {
    let (whole, streamed) = (whole_body(), streamed_body());
    let app = axum::Router::new()
        .route(
            "/whole/chat/completions",
            axum::routing::post(move || {
                let body = whole.clone();
                async move { ([("content-type", "application/json")], body) }
            }),
        )
        .route(
            "/streamed/chat/completions",
            axum::routing::post(move || {
                let body = streamed.clone();
                async move { ([("content-type", "text/event-stream")], body) }
            }),
        );
    serve(app).await
}

/// Serves `app` on a free port of 127.0.0.1, from a task of the calling
/// runtime.
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A runtime whose one worker runs the local server, the client running
/// on the thread that blocks.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// The server of the answer and the two clients that read it, on a
/// [`runtime`] of their own.
pub struct Reads {
    pub rt: Runtime,
    whole: Chat,
    streamed: Chat,
    conversation: [Message; 1],
    deltas: DeltaSink,
}

impl Reads {
    pub fn new() -> Self {
        let rt = runtime();
        let addr = rt.block_on(serve_answers());
        Self {
            rt,
            whole: Chat::new("m")
                .base_url(format!("http://{addr}/whole"))
                .stream(false),
            streamed: Chat::new("m").base_url(format!("http://{addr}/streamed")),
            conversation: [Message::user("hi")],
            deltas: DeltaSink::new(|delta| {
                black_box(delta);
            }),
        }
    }

    /// (a): the answer read whole, one JSON body.
    pub async fn whole(&self) {
        let message = self.whole.respond(&self.conversation, &[]).await.unwrap();
        assert!(message.text.unwrap().len() > 900_000);
    }

    /// (b): the answer streamed, each event parsed and pushed into the
    /// assembler, each piece sent to a delta sink.
    pub async fn streamed(&self) {
        let message = self
            .streamed
            .respond_streaming(&self.conversation, &[], &self.deltas)
            .await
            .unwrap();
        assert!(message.text.unwrap().len() > 900_000);
    }
}

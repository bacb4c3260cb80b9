//! The 1 MB Chat answer that `model_streams` and `stream_ratios` read,
//! whole and streamed, and the local server that sends it.

use std::net::SocketAddr;

use serde_json::json;

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
pub async fn serve_answers() -> SocketAddr {
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

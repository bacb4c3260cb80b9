//! The 1 MB Chat answer that `model_streams` and `stream_ratios` read,
//! whole and streamed, the same answer from Bedrock's Converse (whole JSON,
//! and AWS event-stream frames), the local server that sends them and the
//! clients that read them.

use std::hint::black_box;
use std::net::SocketAddr;

use behest::models::bedrock::Converse;
use behest::models::openai::Chat;
use behest::models::AwsCredentials;
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

/// The answer as Converse gives it whole.
pub fn converse_whole_body() -> String {
    let text = PIECE.repeat(1_000_000 / PIECE.len());
    json!({"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 10, "outputTokens": 250_000, "totalTokens": 250_010},
        "metrics": {"latencyMs": 1}})
    .to_string()
}

/// One event-stream frame of a Converse event.
fn frame(kind: &str, payload: &serde_json::Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message as Frame};
    let frame = Frame::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            ":event-type",
            HeaderValue::String(kind.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String("event".into()),
        ));
    let mut bytes = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&frame, &mut bytes).unwrap();
    bytes
}

/// An answer of `pieces` text pieces as ConverseStream sends it, each
/// payload padded as Bedrock pads them.
pub fn converse_stream_body(pieces: usize) -> Vec<u8> {
    let pad = "abcdefghijklmnopqrstuvwxyzABCDEFGH";
    let mut body = frame("messageStart", &json!({"role": "assistant", "p": pad}));
    for _ in 0..pieces {
        body.extend(frame(
            "contentBlockDelta",
            &json!({"contentBlockIndex": 0, "delta": {"text": PIECE}, "p": pad}),
        ));
    }
    body.extend(frame(
        "contentBlockStop",
        &json!({"contentBlockIndex": 0, "p": pad}),
    ));
    body.extend(frame(
        "messageStop",
        &json!({"stopReason": "end_turn", "p": pad}),
    ));
    body.extend(frame(
        "metadata",
        &json!({"usage": {"inputTokens": 10, "outputTokens": 4, "totalTokens": 14},
            "metrics": {"latencyMs": 1}, "p": pad}),
    ));
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
    let (converse_whole, converse_streamed) = (
        converse_whole_body(),
        converse_stream_body(1_000_000 / PIECE.len()),
    );
    // About a thousand tokens.
    let short = converse_stream_body(60);
    let app = app
        .route(
            "/model/m/converse",
            axum::routing::post(move || {
                let body = converse_whole.clone();
                async move { ([("content-type", "application/json")], body) }
            }),
        )
        .route(
            "/model/m/converse-stream",
            axum::routing::post(move || {
                let body = converse_streamed.clone();
                async move {
                    (
                        [("content-type", "application/vnd.amazon.eventstream")],
                        body,
                    )
                }
            }),
        )
        .route(
            "/model/short/converse-stream",
            axum::routing::post(move || {
                let body = short.clone();
                async move {
                    (
                        [("content-type", "application/vnd.amazon.eventstream")],
                        body,
                    )
                }
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
    converse_whole: Converse,
    converse_streamed: Converse,
    /// A short turn of a typical conversation, signed (SigV4) and with an
    /// API key (no signature).
    signed: Converse,
    unsigned: Converse,
    typical: Vec<Message>,
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
            converse_whole: converse(addr, "m").stream(false),
            converse_streamed: converse(addr, "m"),
            signed: converse(addr, "short"),
            unsigned: converse(addr, "short").api_key("ABSKbenchkey"),
            typical: typical_conversation(),
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

    /// (c): Converse's answer whole, one JSON body.
    pub async fn converse_whole(&self) {
        let message = self
            .converse_whole
            .respond(&self.conversation, &[])
            .await
            .unwrap();
        assert!(message.text.unwrap().len() > 900_000);
    }

    /// (d): ConverseStream's frames, each checked, its payload parsed and
    /// pushed into the assembler, each piece sent to a delta sink.
    pub async fn converse_streamed(&self) {
        let message = self
            .converse_streamed
            .respond_streaming(&self.conversation, &[], &self.deltas)
            .await
            .unwrap();
        assert!(message.text.unwrap().len() > 900_000);
    }

    /// (e): a turn of a 40-message conversation (11 KB out) answered in
    /// about a thousand tokens, signed or not.
    pub async fn short_turn(&self, signed: bool) {
        let client = if signed { &self.signed } else { &self.unsigned };
        let message = client
            .respond_streaming(&self.typical, &[], &self.deltas)
            .await
            .unwrap();
        assert!(message.text.is_some());
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

/// A Converse client of the local server, with credentials to sign with.
fn converse(addr: SocketAddr, model: &str) -> Converse {
    Converse::new(model)
        .region("us-east-1")
        .base_url(format!("http://{addr}"))
        .credentials(AwsCredentials::new(
            "AKIDBENCH",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        ))
}

/// A conversation of 40 messages of a few hundred bytes each.
fn typical_conversation() -> Vec<Message> {
    let mut conversation = vec![Message::system("Answer briefly. ".repeat(20))];
    for turn in 0..20 {
        conversation.push(Message::user(format!(
            "Question {turn}: {}",
            PIECE.repeat(3)
        )));
        conversation.push(Message::Assistant(behest::AssistantMessage::text(
            PIECE.repeat(3),
        )));
    }
    conversation.push(Message::user("And now?"));
    conversation
}

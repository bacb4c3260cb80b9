//! The 1 MB Chat answer that `model_streams` and `stream_ratios` read,
//! whole and streamed, the same answer from Bedrock's Converse (whole JSON,
//! and AWS event-stream frames), the local server that sends them and the
//! clients that read them.

use std::hint::black_box;
use std::net::SocketAddr;

#[path = "../../tests/support/eventstream.rs"]
mod eventstream;

use behest::models::bedrock::Converse;
use behest::models::openai::Chat;
use behest::models::AwsCredentials;
use behest::{DeltaSink, Message, Model};
use rustls::pki_types::pem::PemObject;
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
    eventstream::frame("event", kind, payload)
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

/// The content type of AWS event-stream frames.
const EVENT_STREAM: &str = "application/vnd.amazon.eventstream";

/// A POST route that answers every request with `body` as `content_type`,
/// a copy of it each time, as a server writes each answer anew.
fn answering<B>(content_type: &'static str, body: B) -> axum::routing::MethodRouter
where
    B: axum::response::IntoResponse + Clone + Send + Sync + 'static,
{
    axum::routing::post(move || {
        let body = body.clone();
        async move { ([("content-type", content_type)], body) }
    })
}

/// Serves the answer on a free port of 127.0.0.1, whole at
/// `/whole/chat/completions` and as server-sent events at
/// `/streamed/chat/completions`, and Converse's at `/model/m/…` and
/// `/model/short/…`, from a task of the calling runtime.
async fn serve_answers() -> SocketAddr {
    let app = axum::Router::new()
        .route(
            "/whole/chat/completions",
            answering("application/json", whole_body()),
        )
        .route(
            "/streamed/chat/completions",
            answering("text/event-stream", streamed_body()),
        )
        .route(
            "/model/m/converse",
            answering("application/json", converse_whole_body()),
        )
        .route(
            "/model/m/converse-stream",
            answering(EVENT_STREAM, converse_stream_body(1_000_000 / PIECE.len())),
        )
        .route(
            "/model/short/converse-stream",
            answering(EVENT_STREAM, short_answer()),
        );
    serve(app).await
}

/// The short Converse answer over TLS, at `/model/short/converse-stream`.
async fn serve_short_over_tls() -> SocketAddr {
    let app = axum::Router::new().route(
        "/model/short/converse-stream",
        answering(EVENT_STREAM, short_answer()),
    );
    serve_tls(app).await
}

/// A short turn's answer: about a thousand tokens.
fn short_answer() -> Vec<u8> {
    converse_stream_body(60)
}

/// Serves `app` on a free port of 127.0.0.1, from a task of the calling
/// runtime.
pub async fn serve(app: axum::Router) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// Serves `app` over TLS (the certificate of `benches/data`) on a free port
/// of 127.0.0.1, from a task of the calling runtime.
pub async fn serve_tls(app: axum::Router) -> SocketAddr {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let data = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data");
    let certificates =
        rustls::pki_types::CertificateDer::pem_file_iter(data.join("localhost-cert.pem"))
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
    let key =
        rustls::pki_types::PrivateKeyDer::from_pem_file(data.join("localhost-key.pem")).unwrap();
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certificates, key)
        .unwrap();
    let listener = TlsListener {
        tcp: tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        acceptor: tokio_rustls::TlsAcceptor::from(std::sync::Arc::new(config)),
    };
    let addr = listener.tcp.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

/// A TCP listener whose connections are TLS.
struct TlsListener {
    tcp: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((tcp, addr)) = self.tcp.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(tcp).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A client that trusts the local TLS server's certificate, and no other.
fn tls_client() -> reqwest::Client {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let pem = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data/localhost-cert.pem"),
    )
    .unwrap();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tls_certs_only([reqwest::Certificate::from_pem(&pem).unwrap()])
        .build()
        .unwrap()
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
    /// The same over TLS, as every Bedrock request goes.
    signed_tls: Converse,
    unsigned_tls: Converse,
    typical: Vec<Message>,
    tools: Vec<behest::ToolSpec>,
    conversation: [Message; 1],
    deltas: DeltaSink,
}

impl Reads {
    pub fn new() -> Self {
        let rt = runtime();
        let addr = rt.block_on(serve_answers());
        let tls = rt.block_on(serve_short_over_tls());
        let over_tls = |model: Converse| {
            model
                .base_url(format!("https://localhost:{}", tls.port()))
                .http_client(tls_client())
        };
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
            signed_tls: over_tls(converse(addr, "short")),
            unsigned_tls: over_tls(converse(addr, "short").api_key("ABSKbenchkey")),
            typical: typical_conversation(),
            tools: typical_tools(),
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

    /// (e): an agent's turn: a 40-message conversation and ten tools
    /// (15 KB out) answered in about a thousand tokens, signed or not,
    /// over TLS or not.
    pub async fn short_turn(&self, signed: bool) {
        self.turn_of(if signed { &self.signed } else { &self.unsigned })
            .await;
    }

    /// (e) over TLS.
    pub async fn short_turn_tls(&self, signed: bool) {
        self.turn_of(if signed {
            &self.signed_tls
        } else {
            &self.unsigned_tls
        })
        .await;
    }

    async fn turn_of(&self, client: &Converse) {
        let message = client
            .respond_streaming(&self.typical, &self.tools, &self.deltas)
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

/// Ten tools of three parameters each, as an agent offers them.
fn typical_tools() -> Vec<behest::ToolSpec> {
    (0..10)
        .map(|tool| {
            behest::ToolSpec::new(
                format!("tool_{tool}"),
                format!("Tool {tool}: looks up a record by its id and returns its fields."),
                json!({
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "The record's id."},
                        "fields": {"type": "array", "items": {"type": "string"},
                            "description": "The fields to return."},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                            "description": "How many records at most."}
                    },
                    "required": ["id"],
                    "additionalProperties": false
                }),
            )
        })
        .collect()
}

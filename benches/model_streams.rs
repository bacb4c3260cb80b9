//! What the model clients cost beyond the wire.
//!
//! `assemble/*`: a Chat Completions answer of about 1 MB of text from a
//! local server on 127.0.0.1, read by the `Chat` client: (a) whole, one
//! JSON body; (b) streamed, the same text as ~12 000 server-sent events
//! (each parsed and pushed into the stream assembler, each piece sent to
//! a delta sink). Report (b)/(a). The same for Bedrock: (c) Converse's
//! whole answer; (d) ConverseStream's AWS event-stream frames, each checked
//! and read. Report (d)/(c). `turn/c_*` and `turn/d_*`: an agent's Bedrock turn
//! (40 messages, ten tools), signed with SigV4 (d) and with an API key (c).
//! Report (d)/(c).
//!
//! `turn/*`: one turn against a local server on 127.0.0.1 that answers a
//! short text: (a) a bare reqwest POST and the body read; (b) a whole run:
//! an `Agent` with the `Chat` client (not streamed), the run loop and its
//! events. Report (b)/(a).
//!
//! Run: `cargo bench --bench model_streams --features models`.

use behest::models::openai::Chat;
use behest::{Agent, Message, ToolRegistry, ToolRuntime};
use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use stream_cases::{runtime, serve, Reads};

#[path = "stream_cases/mod.rs"]
mod stream_cases;

fn assemble(c: &mut Criterion) {
    let reads = Reads::new();
    let mut group = c.benchmark_group("assemble");
    group.sample_size(20);
    group.bench_function("a_whole_1mb", |b| {
        b.to_async(&reads.rt).iter(|| reads.whole())
    });
    group.bench_function("b_streamed_1mb", |b| {
        b.to_async(&reads.rt).iter(|| reads.streamed())
    });
    group.bench_function("c_converse_whole_1mb", |b| {
        b.to_async(&reads.rt).iter(|| reads.converse_whole())
    });
    group.bench_function("d_converse_streamed_1mb", |b| {
        b.to_async(&reads.rt).iter(|| reads.converse_streamed())
    });
    group.finish();
    let mut group = c.benchmark_group("turn");
    group.bench_function("c_bedrock_api_key", |b| {
        b.to_async(&reads.rt).iter(|| reads.short_turn(false))
    });
    group.bench_function("d_bedrock_signed", |b| {
        b.to_async(&reads.rt).iter(|| reads.short_turn(true))
    });
    group.bench_function("e_bedrock_api_key_tls", |b| {
        b.to_async(&reads.rt).iter(|| reads.short_turn_tls(false))
    });
    group.bench_function("f_bedrock_signed_tls", |b| {
        b.to_async(&reads.rt).iter(|| reads.short_turn_tls(true))
    });
    group.finish();
}

fn turn(c: &mut Criterion) {
    let rt = runtime();
    let answer = json!({"choices": [{"index": 0, "finish_reason": "stop",
        "message": {"role": "assistant", "content": "hello"}}]})
    .to_string();
    let app = axum::Router::new().fallback(move || {
        let answer = answer.clone();
        async move { ([("content-type", "application/json")], answer) }
    });
    let addr = rt.block_on(serve(app));
    let url = format!("http://{addr}/v1");
    let agent = Agent::new(
        Chat::new("m").base_url(url.clone()).stream(false),
        ToolRuntime::new(ToolRegistry::new()),
    );
    // A first turn installs the TLS crypto provider the bare client needs too.
    let first = rt.block_on(async { agent.invoke([Message::user("hi")]).await });
    assert_eq!(first.text(), Some("hello"));
    let client = reqwest::Client::new();
    let mut group = c.benchmark_group("turn");
    group.bench_function("a_bare_http", |b| {
        b.to_async(&rt).iter(|| async {
            let body = json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]});
            client
                .post(format!("{url}/chat/completions"))
                .header("content-type", "application/json")
                .body(body.to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    });
    group.bench_function("b_agent_run", |b| {
        b.to_async(&rt).iter(|| async {
            let outcome = agent.invoke([Message::user("hi")]).await;
            assert_eq!(outcome.text(), Some("hello"));
            outcome
        })
    });
    group.finish();
}

criterion_group!(benches, assemble, turn);
criterion_main!(benches);

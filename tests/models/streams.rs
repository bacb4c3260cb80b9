//! Streamed answers of every client format against a local server on
//! 127.0.0.1, cut where the network may cut them (inside a UTF-8
//! character, between `\r` and `\n`, anywhere), and the stream faults:
//! a broken connection, a pause past the timeout, a stream that outlasts
//! the timeout while its pieces keep coming, cancellation mid-stream.

#![cfg(feature = "models")]

#[allow(dead_code)]
use crate::models_support;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use behest::models::anthropic::Messages;
use behest::models::gemini::Gemini;
use behest::models::openai::{Chat, Responses};
use behest::models::RetryPolicy;
use behest::run::ReasoningPlace;
use behest::{
    AssistantMessage, EventKind, Message, Model, ModelError, RunError, RunOutcome, ToolRegistry,
    ToolRuntime,
};
use models_support::{Reply, Server};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Text the cuts can fall inside of: two-, three- and four-byte characters.
const TEXT: [&str; 2] = ["Grüße aus Köln, ", "日本語 🙂 done"];

#[derive(Clone, Copy, Debug)]
enum Format {
    Chat,
    Responses,
    Anthropic,
    Gemini,
}

const FORMATS: [Format; 4] = [
    Format::Chat,
    Format::Responses,
    Format::Anthropic,
    Format::Gemini,
];

/// A stream of `format` with reasoning, text in two pieces and a tool call
/// whose arguments come in two pieces.
fn stream(format: Format) -> Reply {
    match format {
        Format::Chat => {
            let chunk = |delta: Value, finish: Option<&str>| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
            Reply::events(
                &[
                    chunk(
                        json!({"role": "assistant", "reasoning_content": "Überlegt."}),
                        None,
                    ),
                    chunk(json!({"content": TEXT[0]}), None),
                    chunk(json!({"content": TEXT[1]}), None),
                    chunk(
                        json!({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                            "function": {"name": "add", "arguments": "{\"a\": 1,"}}]}),
                        None,
                    ),
                    chunk(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": " \"b\": 2}"}}]}),
                        None,
                    ),
                    chunk(json!({}), Some("tool_calls")),
                ],
                false,
                true,
            )
        }
        Format::Responses => Reply::events(
            &[
                json!({"type": "response.created", "response": {"id": "resp_1"}}),
                json!({"type": "response.output_item.done", "output_index": 0,
                    "item": {"type": "reasoning", "id": "rs_1",
                        "summary": [{"type": "summary_text", "text": "Überlegt."}],
                        "encrypted_content": "gAAAA-öpaque"}}),
                json!({"type": "response.output_text.delta", "output_index": 1, "delta": TEXT[0]}),
                json!({"type": "response.output_text.delta", "output_index": 1, "delta": TEXT[1]}),
                json!({"type": "response.output_item.added", "output_index": 2,
                    "item": {"type": "function_call", "id": "fc_2", "call_id": "call_1",
                        "name": "add", "arguments": ""}}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 2,
                    "delta": "{\"a\": 1,"}),
                json!({"type": "response.function_call_arguments.delta", "output_index": 2,
                    "delta": " \"b\": 2}"}),
                json!({"type": "response.completed", "response": {"id": "resp_1",
                    "usage": {"input_tokens": 9, "output_tokens": 4}}}),
            ],
            true,
            false,
        ),
        Format::Anthropic => Reply::events(
            &[
                json!({"type": "message_start", "message": {"id": "msg_1", "type": "message",
                    "role": "assistant", "content": [], "model": "m",
                    "usage": {"input_tokens": 9, "output_tokens": 1}}}),
                json!({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""}}),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "Überlegt."}}),
                json!({"type": "content_block_delta", "index": 0,
                    "delta": {"type": "signature_delta", "signature": "c2lnbmF0dXJl"}}),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1,
                    "content_block": {"type": "text", "text": ""}}),
                json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "text_delta", "text": TEXT[0]}}),
                json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "text_delta", "text": TEXT[1]}}),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "content_block_start", "index": 2,
                    "content_block": {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}}),
                json!({"type": "content_block_delta", "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1,"}}),
                json!({"type": "content_block_delta", "index": 2,
                    "delta": {"type": "input_json_delta", "partial_json": " \"b\": 2}"}}),
                json!({"type": "content_block_stop", "index": 2}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"output_tokens": 12}}),
                json!({"type": "message_stop"}),
            ],
            true,
            false,
        ),
        Format::Gemini => Reply::events(
            &[
                json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"text": "Überlegt.", "thought": true}]}}]}),
                json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"text": TEXT[0]}]}}]}),
                json!({"candidates": [{"content": {"role": "model", "parts": [
                    {"text": TEXT[1]},
                    {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}},
                        "thoughtSignature": "c2lnbmF0dXJl"}]},
                    "finishReason": "STOP"}],
                    "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4}}),
            ],
            false,
            false,
        ),
    }
}

fn client(format: Format, url: String) -> Arc<dyn Model> {
    let retry = RetryPolicy::none();
    match format {
        Format::Chat => Arc::new(Chat::new("m").base_url(url).retry(retry)),
        Format::Responses => Arc::new(Responses::new("m").base_url(url).retry(retry)),
        Format::Anthropic => Arc::new(Messages::new("m").base_url(url).retry(retry)),
        Format::Gemini => Arc::new(Gemini::new("m").base_url(url).retry(retry)),
    }
}

/// One streamed turn of `format`'s client against `server`.
async fn read(format: Format, server: &Server) -> Result<AssistantMessage, ModelError> {
    client(format, server.url())
        .respond_dyn(&[Message::user("x")], &[])
        .await
        .map(without_generated_ids)
}

/// Gemini's made-up call ids differ per answer; everything else must match.
fn without_generated_ids(mut message: AssistantMessage) -> AssistantMessage {
    for call in &mut message.tool_calls {
        if call.call_id.starts_with("gemini-call-") {
            call.call_id = "gemini-call".into();
        }
    }
    for piece in &mut message.reasoning {
        if let ReasoningPlace::Call { call_id } = &mut piece.place {
            if call_id.starts_with("gemini-call-") {
                *call_id = "gemini-call".into();
            }
        }
    }
    message
}

/// The whole (not streamed) answer that says what [`stream`] says.
fn whole(format: Format) -> Value {
    let text = TEXT.concat();
    match format {
        Format::Chat => json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [{
            "index": 0, "finish_reason": "tool_calls",
            "message": {"role": "assistant", "content": text, "reasoning_content": "Überlegt.",
                "tool_calls": [{"id": "call_1", "type": "function",
                    "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]}}]}),
        Format::Responses => json!({"id": "resp_1", "status": "completed", "output": [
            {"type": "reasoning", "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "Überlegt."}],
                "encrypted_content": "gAAAA-öpaque"},
            {"type": "message", "role": "assistant",
                "content": [{"type": "output_text", "text": text}]},
            {"type": "function_call", "id": "fc_2", "call_id": "call_1", "name": "add",
                "arguments": "{\"a\": 1, \"b\": 2}"}],
            "usage": {"input_tokens": 9, "output_tokens": 4}}),
        Format::Anthropic => json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "m", "stop_reason": "tool_use", "content": [
                {"type": "thinking", "thinking": "Überlegt.", "signature": "c2lnbmF0dXJl"},
                {"type": "text", "text": text},
                {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}}],
            "usage": {"input_tokens": 9, "output_tokens": 12}}),
        Format::Gemini => json!({"candidates": [{"content": {"role": "model", "parts": [
                {"text": "Überlegt.", "thought": true},
                {"text": text},
                {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}},
                    "thoughtSignature": "c2lnbmF0dXJl"}]},
            "finishReason": "STOP"}],
            "usageMetadata": {"promptTokenCount": 9, "candidatesTokenCount": 4}}),
    }
}

/// Each client's streamed answer is the message its whole answer gives.
#[tokio::test]
async fn streamed_and_whole_answers_are_the_same_message() {
    let server = Server::start([]).await;
    for format in FORMATS {
        server.push(stream(format));
        let streamed = read(format, &server).await.unwrap();
        server.push(Reply::json(&whole(format)));
        let retry = RetryPolicy::none();
        let url = server.url();
        let whole_client: Arc<dyn Model> = match format {
            Format::Chat => Arc::new(Chat::new("m").base_url(url).retry(retry).stream(false)),
            Format::Responses => {
                Arc::new(Responses::new("m").base_url(url).retry(retry).stream(false))
            }
            Format::Anthropic => {
                Arc::new(Messages::new("m").base_url(url).retry(retry).stream(false))
            }
            Format::Gemini => Arc::new(Gemini::new("m").base_url(url).retry(retry).stream(false)),
        };
        let whole = whole_client
            .respond_dyn(&[Message::user("x")], &[])
            .await
            .map(without_generated_ids)
            .unwrap();
        assert_eq!(streamed, whole, "{format:?}");
    }
}

/// A runtime and a server for the property test's cases, made once.
fn shared() -> &'static (tokio::runtime::Runtime, Server, Vec<AssistantMessage>) {
    static SHARED: OnceLock<(tokio::runtime::Runtime, Server, Vec<AssistantMessage>)> =
        OnceLock::new();
    SHARED.get_or_init(|| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (server, whole) = runtime.block_on(async {
            let server = Server::start([]).await;
            let mut whole = Vec::new();
            for format in FORMATS {
                server.push(stream(format));
                let message = read(format, &server).await.unwrap();
                assert_eq!(message.text.as_deref(), Some(TEXT.concat().as_str()));
                assert_eq!(message.tool_calls.len(), 1, "{format:?}");
                assert!(!message.reasoning.is_empty(), "{format:?}");
                whole.push(message);
            }
            (server, whole)
        });
        (runtime, server, whole)
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Any cuts, with `\n` or `\r\n` line ends, give each format's
    /// client the message the uncut stream gives.
    #[test]
    fn streams_cut_anywhere_assemble_to_the_same_message(
        format in 0..FORMATS.len(),
        crlf in any::<bool>(),
        cuts in proptest::collection::vec(any::<proptest::sample::Index>(), 1..12),
    ) {
        let (runtime, server, whole) = shared();
        let format_index = format;
        let format = FORMATS[format];
        let reply = if crlf { stream(format).crlf() } else { stream(format) };
        let length = reply.text().len();
        let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(length)).collect();
        server.push(reply.split_at(cuts.clone()));
        let message = runtime.block_on(read(format, server));
        prop_assert_eq!(
            message.as_ref().ok(),
            Some(&whole[format_index]),
            "{:?} cut at {:?}: {:?}", format, cuts, message
        );
    }
}

/// Every offset that falls inside a character or between `\r` and `\n`,
/// one cut at a time, for each format.
#[tokio::test]
async fn every_cut_inside_a_character_or_a_line_end_reads_the_same() {
    let server = Server::start([]).await;
    let mut checked = 0;
    for format in FORMATS {
        server.push(stream(format));
        let whole = read(format, &server).await.unwrap();
        let reply = stream(format).crlf();
        let bytes = reply.text().as_bytes().to_vec();
        let awkward = (1..bytes.len()).filter(|&at| {
            let inside_character = bytes[at] & 0b1100_0000 == 0b1000_0000;
            let inside_line_end = bytes[at - 1] == b'\r' && bytes[at] == b'\n';
            inside_character || inside_line_end
        });
        for at in awkward {
            server.push(reply.clone().split_at([at]));
            let message = read(format, &server).await;
            assert_eq!(
                message.as_ref().ok(),
                Some(&whole),
                "{format:?} cut at {at}: {message:?}"
            );
            checked += 1;
        }
    }
    assert!(checked > 100, "only {checked} cuts");
}

/// A connection that breaks mid-stream is a clear, typed error, and the
/// run keeps no part of the turn.
#[tokio::test]
async fn a_connection_broken_mid_stream_fails_the_run_and_keeps_nothing_of_the_turn() {
    let server = Server::start([]).await;
    for format in FORMATS {
        let reply = stream(format);
        let middle = reply.text().find(TEXT[1]).unwrap();
        server.push(reply.broken_at(middle));
        let agent = behest::Agent::from_arc(
            client(format, server.url()),
            ToolRuntime::new(ToolRegistry::new()),
        );
        let outcome = agent.invoke([Message::user("x")]).await;
        let RunOutcome::Failed {
            error: RunError::Model(error),
            transcript,
            ..
        } = &outcome
        else {
            panic!("{format:?}: {outcome:?}")
        };
        assert!(
            error.message.contains("stream broke off"),
            "{format:?}: {error}"
        );
        assert_eq!(transcript, &[Message::user("x")], "{format:?}");
    }
}

/// The timeout bounds each pause, not the whole stream: a stream that
/// lasts longer than it is read while its pieces keep coming, comment
/// lines a server sends to keep it open included; one that stops coming
/// fails with the pause named.
#[tokio::test]
async fn a_stream_may_outlast_the_timeout_but_not_pause_past_it() {
    let timeout = Duration::from_secs(1);
    let pace = Duration::from_millis(150);
    let server = Server::start([]).await;
    let reply = stream(Format::Chat);
    let length = reply.text().len();
    let model = Chat::new("m")
        .base_url(server.url())
        .timeout(timeout)
        .retry(RetryPolicy::none());

    // Each slow reply must be read whole, however long it takes.
    let read_slowly = |slow: Reply, what: &'static str| {
        server.push(slow);
        let model = &model;
        async move {
            let started = Instant::now();
            let message = model.respond(&[Message::user("x")], &[]).await.unwrap();
            assert!(started.elapsed() > timeout, "{what} was not slow enough");
            assert_eq!(message.text.as_deref(), Some(TEXT.concat().as_str()));
        }
    };
    let pieces = 12;
    let slow = reply
        .clone()
        .split_at((1..pieces).map(|i| i * length / pieces))
        .paced(pace);
    read_slowly(slow, "the stream").await;

    // Only keep-alive comments, for longer than the timeout, then the turn.
    let keep_alive = ": keep-alive\n\n";
    let comments = 10;
    let body = format!("{}{}", keep_alive.repeat(comments), reply.text());
    let slow = Reply::sse(&body)
        .split_at((1..=comments).map(|i| i * keep_alive.len()))
        .paced(pace);
    read_slowly(slow, "the comments").await;

    server.push(reply.stalled_at(length / 2));
    let error = model.respond(&[Message::user("x")], &[]).await.unwrap_err();
    assert!(error.message.contains("paused"), "{error}");
}

/// Cancelling a run while its turn streams ends it at once, with no part
/// of the turn in the transcript.
#[tokio::test]
async fn cancelling_a_run_mid_stream_ends_it_at_once() {
    let server = Server::start([]).await;
    let reply = stream(Format::Anthropic);
    let middle = reply.text().find(TEXT[1]).unwrap();
    server.push(reply.stalled_at(middle));
    let agent = behest::Agent::from_arc(
        client(Format::Anthropic, server.url()),
        ToolRuntime::new(ToolRegistry::new()),
    );
    let invocation = agent.invoke([Message::user("x")]);
    let control = invocation.control();
    let streamed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = streamed.clone();
    invocation.on(move |envelope, _| {
        if let EventKind::ModelDelta(_) = envelope.kind {
            // The first piece has arrived: the stream is open.
            seen.store(true, std::sync::atomic::Ordering::SeqCst);
            control.cancel();
        }
    });
    let started = Instant::now();
    let outcome = invocation.await;
    assert!(streamed.load(std::sync::atomic::Ordering::SeqCst));
    let RunOutcome::Cancelled { transcript, .. } = &outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(transcript, &[Message::user("x")]);
    // The server stalls for ever; only cancellation ends the run.
    assert!(started.elapsed() < Duration::from_secs(10));
}

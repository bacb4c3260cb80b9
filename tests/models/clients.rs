//! The model clients against a local HTTP server on 127.0.0.1: request
//! bodies and headers, whole and streamed answers giving the same message,
//! retries, errors, timeouts, streams that break off, cancellation, and
//! runs end to end. No test reaches the network.
#![cfg(feature = "models")]

use behest::providers::StreamAssembler;

#[allow(dead_code)]
use crate::models_support;
use crate::tracing_support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use behest::models::anthropic::Messages;
use behest::models::gemini::Gemini;
use behest::models::openai::{Chat, Responses};
use behest::models::{RetryPolicy, ToolChoice};
use behest::{
    tool, Agent, EventKind, Message, Model, ModelDelta, ModelError, RunError, RunOutcome,
    ToolRegistry, ToolRuntime, ToolSpec,
};
use models_support::{Reply, Server};
use serde_json::{json, Value};

/// Add two numbers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn specs() -> Vec<ToolSpec> {
    ToolRegistry::new()
        .with(Add)
        .unwrap()
        .specs()
        .cloned()
        .collect()
}

fn user(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

fn chat_response(arguments: &str) -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "add", "arguments": arguments}}]
        }}]
    })
}

fn chat_chunks(arguments: &[&str]) -> Vec<Value> {
    let mut chunks = vec![
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": null,
        "tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "add", "arguments": ""}}]}}]}),
    ];
    for piece in arguments {
        chunks.push(json!({"choices": [{"index": 0, "delta": {
            "tool_calls": [{"index": 0, "function": {"arguments": piece}}]}}]}));
    }
    chunks.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    chunks
}

fn chat_text(text: &str) -> Value {
    json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}]})
}

fn no_retries() -> RetryPolicy {
    RetryPolicy::none()
}

#[tokio::test]
async fn chat_whole_and_streamed_answers_are_the_same_message() {
    let server = Server::start([
        Reply::json(&chat_response(r#"{"a":1,"b":2}"#)),
        Reply::events(
            &chat_chunks(&[r#"{"a":"#, r#"1,"b""#, r#":2}"#]),
            false,
            true,
        )
        .in_chunks(7),
    ])
    .await;
    let whole = Chat::new("m")
        .api_key("sk-test")
        .base_url(server.url())
        .stream(false);
    let streamed = Chat::new("m").api_key("sk-test").base_url(server.url());
    let a = whole.respond(&user("add"), &specs()).await.unwrap();
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let seen = deltas.clone();
    let sink = behest::DeltaSink::new(move |delta| seen.lock().unwrap().push(delta));
    let b = streamed
        .respond_streaming(&user("add"), &specs(), &sink)
        .await
        .unwrap();
    assert_eq!(a, b);
    assert_eq!(a.tool_calls[0].tool_name, "add");
    let arguments: String = deltas
        .lock()
        .unwrap()
        .iter()
        .filter_map(|delta| match delta {
            ModelDelta::ToolCall { arguments, .. } => Some(arguments.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(arguments, r#"{"a":1,"b":2}"#);
}

#[tokio::test]
async fn chat_requests_carry_what_the_api_requires() {
    let server = Server::start([Reply::json(&chat_text("hi"))]).await;
    let model = Chat::new("gpt-test")
        .api_key("sk-secret-value")
        .base_url(server.url())
        .header("OpenAI-Organization", "org-1")
        .temperature(0.5)
        .max_tokens(100)
        .tool_choice(ToolChoice::Tool("add".into()))
        .parallel_tool_calls(false)
        .body_field("seed", json!(7))
        .stream(false);
    let answer = model.respond(&user("hello"), &specs()).await.unwrap();
    assert_eq!(answer.text.as_deref(), Some("hi"));
    let received = server.received();
    assert_eq!(received.len(), 1);
    let request = &received[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.headers["authorization"], "Bearer sk-secret-value");
    assert_eq!(request.headers["openai-organization"], "org-1");
    let body = &request.body;
    assert_eq!(body["model"], "gpt-test");
    assert_eq!(
        body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
    assert_eq!(body["tools"][0]["type"], "function");
    assert_eq!(body["tools"][0]["function"]["name"], "add");
    assert_eq!(
        body["tool_choice"],
        json!({"type": "function", "function": {"name": "add"}})
    );
    assert_eq!(body["parallel_tool_calls"], false);
    assert_eq!(body["temperature"], 0.5);
    // A compatible server (this one) reads `max_tokens`.
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(body["seed"], 7);
    assert!(body.get("stream").is_none());
    // The key is in no `Debug`.
    assert!(!format!("{model:?}").contains("sk-secret-value"));
}

/// A 429 is waited out as the server asks, in `retry-after-ms` or in
/// `Retry-After` seconds (below the policy's cap), then tried again. The
/// wait is a lower bound here, not a speed claim; it is checked exactly on
/// tokio's paused clock in `models::http`'s tests (over real sockets the
/// paused clock could jump past the request's own timeout while a reply
/// is in flight, so this one reads the real clock).
#[tokio::test]
async fn a_rate_limit_is_waited_out_as_the_server_asks() {
    let limited = json!({"error": {"message": "Rate limit reached", "type": "rate_limit_error"}});
    // Backoff alone would wait at most 500 ms before the second attempt.
    for (header, value, wait) in [
        ("retry-after-ms", "200", Duration::from_millis(200)),
        ("retry-after", "1", Duration::from_secs(1)),
    ] {
        let server = Server::start([
            Reply::error(429, &limited).header(header, value),
            Reply::json(&chat_text("ok")),
        ])
        .await;
        let model = Chat::new("m")
            .base_url(server.url())
            .stream(false)
            .retry(RetryPolicy::default());
        let started = Instant::now();
        let answer = model.respond(&user("x"), &[]).await.unwrap();
        assert_eq!(answer.text.as_deref(), Some("ok"), "{header}");
        assert_eq!(server.received().len(), 2, "{header}");
        assert!(started.elapsed() >= wait, "{header}");
    }
}

#[tokio::test]
async fn server_errors_are_retried_with_backoff() {
    let failing = json!({"error": {"message": "upstream failed", "type": "server_error"}});
    let server = Server::start([
        Reply::error(500, &failing),
        Reply::error(503, &failing),
        Reply::json(&chat_text("finally")),
    ])
    .await;
    let mut policy = RetryPolicy::default();
    policy.initial_backoff = Duration::from_millis(10);
    let model = Chat::new("m")
        .base_url(server.url())
        .stream(false)
        .retry(policy);
    let answer = model.respond(&user("x"), &[]).await.unwrap();
    assert_eq!(answer.text.as_deref(), Some("finally"));
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn an_unauthorized_request_is_not_retried_and_says_why() {
    let refused = json!({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}});
    let server = Server::start([Reply::error(401, &refused), Reply::json(&chat_text("no"))]).await;
    let model = Chat::new("m")
        .api_key("sk-leak-check")
        .base_url(server.url())
        .stream(false);
    let error = model.respond(&user("x"), &[]).await.unwrap_err();
    assert_eq!(server.received().len(), 1);
    assert_eq!(error.status, Some(401));
    assert!(!error.retryable);
    assert_eq!(error.kind.as_deref(), Some("invalid_request_error"));
    assert_eq!(error.request_id.as_deref(), Some("req_test_1"));
    assert!(
        error.message.contains("Incorrect API key provided"),
        "{error}"
    );
    assert!(!format!("{error:?} {error}").contains("sk-leak-check"));
}

#[tokio::test]
async fn a_stream_cut_short_is_an_error_and_no_partial_message_is_kept() {
    let events = Reply::events(&chat_chunks(&[r#"{"a":1,"b":2}"#]), false, true);
    let Reply::Events { text, .. } = &events else {
        unreachable!()
    };
    // Inside the arguments' escaped JSON, before the turn finishes.
    let cut = text.find(r#"\"b"#).unwrap();
    let server = Server::start([events.clone().cut_at(cut)]).await;
    let registry = ToolRegistry::new().with(Add).unwrap();
    let model = Chat::new("m").base_url(server.url()).retry(no_retries());
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("add")])
        .await;
    let RunOutcome::Failed {
        error: RunError::Model(error),
        transcript,
        ..
    } = outcome
    else {
        panic!("{outcome:?}")
    };
    assert!(error.message.contains("stream"), "{error}");
    assert_eq!(transcript, [Message::user("add")]);
}

#[tokio::test]
async fn a_malformed_event_is_an_error() {
    let server = Server::start([Reply::sse("data: {\"choices\": [\n\n")]).await;
    let model = Chat::new("m").base_url(server.url()).retry(no_retries());
    let error = model.respond(&user("x"), &[]).await.unwrap_err();
    assert!(error.message.contains("not JSON"), "{error}");
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let server = Server::start([Reply::Silent(Duration::from_secs(30))]).await;
    let model = Chat::new("m")
        .base_url(server.url())
        .timeout(Duration::from_millis(200))
        .retry(no_retries())
        .stream(false);
    let error: ModelError = model.respond(&user("x"), &[]).await.unwrap_err();
    assert!(error.message.contains("in time"), "{error}");
    // A whole answer may be under way (and billed): not asked again. A
    // stream's head comes at once: its timeout may be retried.
    assert!(!error.retryable);
    let server = Server::start([Reply::Silent(Duration::from_secs(30))]).await;
    let streamed = Chat::new("m")
        .base_url(server.url())
        .timeout(Duration::from_millis(200))
        .retry(no_retries());
    let error: ModelError = streamed.respond(&user("x"), &[]).await.unwrap_err();
    assert!(error.retryable);
}

#[tokio::test]
async fn cancelling_a_run_aborts_the_request_at_once() {
    let server = Server::start([Reply::Silent(Duration::from_secs(30))]).await;
    let model = Chat::new("m").base_url(server.url());
    let invocation =
        Agent::new(model, ToolRuntime::new(ToolRegistry::new())).invoke([Message::user("x")]);
    let control = invocation.control();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        control.cancel();
    });
    let started = Instant::now();
    let outcome = invocation.await;
    assert!(
        matches!(outcome, RunOutcome::Cancelled { .. }),
        "{outcome:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[tokio::test]
async fn a_run_streams_deltas_and_completes_with_a_chat_model() {
    let server = Server::start([
        Reply::events(&chat_chunks(&[r#"{"a":2,"#, r#""b":3}"#]), false, true),
        Reply::events(
            &[
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "5"}}]}),
                json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
            ],
            false,
            true,
        ),
    ])
    .await;
    let registry = ToolRegistry::new().with(Add).unwrap();
    let model = Chat::new("m").base_url(server.url());
    let invocation =
        Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("add 2 and 3")]);
    let deltas = Arc::new(Mutex::new(0));
    let count = deltas.clone();
    invocation.on(move |envelope, _| {
        if let EventKind::ModelDelta(_) = envelope.kind {
            *count.lock().unwrap() += 1;
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("5"), "{outcome:?}");
    assert!(*deltas.lock().unwrap() >= 3);
    // The second request carries the call and its result.
    let second = &server.received()[1].body;
    let messages = second["messages"].as_array().unwrap();
    assert_eq!(messages[1]["tool_calls"][0]["id"], "call_1");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(messages[2]["tool_call_id"], "call_1");
    assert_eq!(messages[2]["content"], "5");
}

#[tokio::test]
async fn responses_anthropic_and_gemini_requests_carry_what_their_apis_require() {
    let responses_body = json!({"id": "resp_1", "output": [{"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": "hi"}]}]});
    let anthropic_body = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"});
    let gemini_body = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]}, "finishReason": "STOP"}]});
    let server = Server::start([
        Reply::json(&responses_body),
        Reply::json(&anthropic_body),
        Reply::json(&gemini_body),
    ])
    .await;
    let conversation = vec![Message::system("Be brief."), Message::user("hello")];
    let responses = Responses::new("o4-mini")
        .api_key("k1")
        .base_url(server.url())
        .stream(false);
    let anthropic = Messages::new("claude-t")
        .api_key("k2")
        .base_url(server.url())
        .stream(false);
    let gemini = Gemini::new("gemini-t")
        .api_key("k3")
        .base_url(server.url())
        .stream(false);
    for answer in [
        responses.respond(&conversation, &specs()).await,
        anthropic.respond(&conversation, &specs()).await,
        gemini.respond(&conversation, &specs()).await,
    ] {
        assert_eq!(answer.unwrap().text.as_deref(), Some("hi"));
    }
    let received = server.received();
    let (r, a, g) = (&received[0], &received[1], &received[2]);
    assert_eq!(r.path, "/v1/responses");
    assert_eq!(r.headers["authorization"], "Bearer k1");
    assert_eq!(r.body["model"], "o4-mini");
    assert_eq!(r.body["tools"][0]["name"], "add");
    assert_eq!(r.body["tools"][0]["strict"], false);
    assert_eq!(r.body["include"], json!(["reasoning.encrypted_content"]));
    assert!(r.body["input"].as_array().unwrap().len() >= 2);

    assert_eq!(a.path, "/v1/messages");
    assert_eq!(a.headers["x-api-key"], "k2");
    assert_eq!(a.headers["anthropic-version"], "2023-06-01");
    assert_eq!(a.body["model"], "claude-t");
    assert_eq!(a.body["system"], "Be brief.");
    assert!(a.body["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        a.body["messages"],
        json!([{"role": "user", "content": "hello"}])
    );
    assert_eq!(a.body["tools"][0]["name"], "add");
    assert!(a.body["tools"][0]["input_schema"].is_object());

    assert_eq!(g.path, "/v1/models/gemini-t:generateContent");
    assert_eq!(g.headers["x-goog-api-key"], "k3");
    assert_eq!(g.body["systemInstruction"]["parts"][0]["text"], "Be brief.");
    assert_eq!(g.body["contents"][0]["role"], "user");
    assert_eq!(g.body["tools"][0]["functionDeclarations"][0]["name"], "add");
    assert_eq!(
        g.body["toolConfig"]["functionCallingConfig"]["mode"],
        "AUTO"
    );
}

/// Recorded provider traffic, served as the providers send it: each
/// recorded stream as server-sent events, in chunks cut at every size from
/// 1 byte (inside UTF-8 characters, between `\r` and `\n`), assembles to
/// the message the providers' stream assembler makes of the events.
#[tokio::test]
async fn recorded_streams_assemble_the_same_in_any_chunking() {
    use behest::providers::{anthropic, gemini, openai};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/provider-fixtures");
    let mut checked = 0;
    for (folder, named, done) in [
        ("openai-chat", false, true),
        ("openai-responses", true, false),
        ("anthropic", true, false),
        ("gemini", false, false),
    ] {
        for entry in std::fs::read_dir(dir.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.starts_with("stream-") {
                continue;
            }
            let events: Vec<Value> =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let expected = match folder {
                "openai-chat" => assembled::<openai::chat::Stream>(&events),
                "openai-responses" => assembled::<openai::responses::Stream>(&events),
                "anthropic" => assembled::<anthropic::Stream>(&events),
                _ => assembled::<gemini::Stream>(&events),
            };
            for chunk in [1, 3, 64, usize::MAX] {
                let server =
                    Server::start([Reply::events(&events, named, done).in_chunks(chunk)]).await;
                let assembled = read_stream(folder, server.url())
                    .await
                    .unwrap_or_else(|error| {
                        panic!("{folder}/{name} in chunks of {chunk}: {error}")
                    });
                assert_eq!(
                    without_generated_ids(assembled),
                    without_generated_ids(expected.clone()),
                    "{folder}/{name} in chunks of {chunk}"
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 60, "only {checked} stream readings checked");
}

/// One turn of the client of `folder`'s format against `url`.
async fn read_stream(folder: &str, url: String) -> Result<behest::AssistantMessage, ModelError> {
    let conversation = user("x");
    match folder {
        "openai-chat" => {
            Chat::new("m")
                .base_url(url)
                .retry(no_retries())
                .respond(&conversation, &[])
                .await
        }
        "openai-responses" => {
            Responses::new("m")
                .base_url(url)
                .retry(no_retries())
                .respond(&conversation, &[])
                .await
        }
        "anthropic" => {
            Messages::new("m")
                .base_url(url)
                .retry(no_retries())
                .respond(&conversation, &[])
                .await
        }
        _ => {
            Gemini::new("m")
                .base_url(url)
                .retry(no_retries())
                .respond(&conversation, &[])
                .await
        }
    }
}

/// Gemini's made-up call ids differ per parse; everything else must match.
fn without_generated_ids(mut message: behest::AssistantMessage) -> behest::AssistantMessage {
    for call in &mut message.tool_calls {
        if call.call_id.starts_with("gemini-call-") {
            call.call_id = "gemini-call".into();
        }
    }
    for piece in &mut message.reasoning {
        if let behest::run::ReasoningPlace::Call { call_id } = &mut piece.place {
            if call_id.starts_with("gemini-call-") {
                *call_id = "gemini-call".into();
            }
        }
    }
    message
}

#[tokio::test]
async fn usage_is_read_traced_and_summed_over_a_run() {
    /// Field names and values of every `chat` span.
    #[derive(Clone, Default)]
    struct Fields(Arc<Mutex<Vec<(String, String)>>>);
    struct Visit<'a>(&'a mut Vec<(String, String)>);
    impl tracing::field::Visit for Visit<'_> {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            self.0.push((field.name().to_owned(), format!("{value:?}")));
        }
        fn record_i64(&mut self, field: &tracing::field::Field, value: i64) {
            self.0.push((field.name().to_owned(), value.to_string()));
            self.0
                .push((format!("{}: i64", field.name()), value.to_string()));
        }
    }
    impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Fields {
        fn on_new_span(
            &self,
            attrs: &tracing::span::Attributes<'_>,
            _: &tracing::span::Id,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            if attrs.metadata().name() == "chat" {
                attrs.record(&mut Visit(&mut self.0.lock().unwrap()));
            }
        }
        fn on_record(
            &self,
            _: &tracing::span::Id,
            values: &tracing::span::Record<'_>,
            _: tracing_subscriber::layer::Context<'_, S>,
        ) {
            values.record(&mut Visit(&mut self.0.lock().unwrap()));
        }
    }
    // Other tests' spans are recorded too; the model name below is this
    // test's own.
    static FIELDS: std::sync::OnceLock<Fields> = std::sync::OnceLock::new();
    let fields = tracing_support::installed(&FIELDS, Fields::default);

    let with_usage = |mut body: Value, input: u64, output: u64| {
        body["usage"] = json!({"prompt_tokens": input, "completion_tokens": output,
            "prompt_tokens_details": {"cached_tokens": 1}});
        body
    };
    let server = Server::start([
        Reply::json(&with_usage(chat_response(r#"{"a":1,"b":1}"#), 30, 10)),
        Reply::json(&with_usage(chat_text("2"), 50, 5)),
    ])
    .await;
    let registry = ToolRegistry::new().with(Add).unwrap();
    let model = Chat::new("gpt-usage").base_url(server.url()).stream(false);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("1+1")])
        .await;
    assert_eq!(outcome.text(), Some("2"), "{outcome:?}");
    let usage = outcome.usage();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.cached_tokens),
        (80, 15, 2)
    );
    let recorded = fields.0.lock().unwrap().clone();
    for (name, value) in [
        ("gen_ai.system", "\"openai\""),
        ("gen_ai.provider.name", "\"openai\""),
        ("gen_ai.request.model", "\"gpt-usage\""),
        ("gen_ai.usage.input_tokens", "30"),
        ("gen_ai.usage.output_tokens", "5"),
        ("gen_ai.usage.cache_read.input_tokens", "1"),
        // The conventions' names and types, as tracing-opentelemetry
        // exports them: the span's name, its kind, counts as integers.
        ("otel.name", "\"chat gpt-usage\""),
        ("otel.kind", "\"client\""),
        ("gen_ai.operation.name", "\"chat\""),
        ("gen_ai.usage.input_tokens: i64", "30"),
        ("gen_ai.usage.output_tokens: i64", "5"),
    ] {
        assert!(
            recorded.iter().any(|(n, v)| n == name && v == value),
            "{name} = {value} not in {recorded:?}"
        );
    }
}

#[tokio::test]
async fn a_run_recorded_against_a_server_replays_offline() {
    use behest::run::{Recorder, Recording};
    use behest::ScriptedModel;

    let server = Server::start([
        Reply::json(&chat_response(r#"{"a":20,"b":22}"#)),
        Reply::json(&chat_text("42")),
    ])
    .await;
    let file = std::env::temp_dir().join(format!("behest-recording-{}.json", std::process::id()));
    let registry = || ToolRegistry::new().with(Add).unwrap();
    let live = Recorder::to_file(
        Chat::new("m")
            .api_key("sk-not-recorded")
            .base_url(server.url())
            .stream(false),
        &file,
    );
    let recorded = Agent::new(live, ToolRuntime::new(registry()))
        .invoke([Message::user("20+22")])
        .await;
    assert_eq!(recorded.text(), Some("42"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("sk-not-recorded"));
    assert_eq!(Recording::load(&file).unwrap().turns.len(), 2);

    // Offline: no server, the same run.
    let replay = ScriptedModel::from_file(&file).unwrap();
    let replayed = Agent::new(replay, ToolRuntime::new(registry()))
        .invoke([Message::user("20+22")])
        .await;
    assert_eq!(replayed.text(), Some("42"), "{replayed:?}");
    assert_eq!(replayed.transcript(), recorded.transcript());
    std::fs::remove_file(&file).unwrap();
}

/// Anthropic with extended thinking and tools: the recorded streamed turn
/// (thinking, text, a `get_weather` call) runs the tool, and the next
/// request sends the thinking block back first and unchanged, as the API
/// requires.
#[tokio::test]
async fn an_anthropic_run_sends_its_thinking_back() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/provider-fixtures/anthropic/stream-thinking-tool-use-events.json");
    let events: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(events.iter().any(|event| {
        event["type"] == "content_block_start" && event["content_block"]["type"] == "thinking"
    }));
    let final_text = vec![
        json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": [], "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let server = Server::start([
        Reply::events(&events, true, false).in_chunks(97),
        Reply::events(&final_text, true, false),
    ])
    .await;

    /// Get the weather.
    #[tool]
    fn get_weather(city: String) -> String {
        format!("Sunny in {city}")
    }
    let registry = ToolRegistry::new().with(GetWeather).unwrap();
    let model = Messages::new("claude-test")
        .api_key("k")
        .base_url(server.url());
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("Weather in Tokyo?")])
        .await;
    assert_eq!(outcome.text(), Some("Sunny."), "{outcome:?}");
    let second = &server.received()[1].body;
    let assistant = &second["messages"][1];
    assert_eq!(assistant["role"], "assistant");
    let blocks = assistant["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "thinking", "{assistant:#}");
    assert!(blocks[0]["signature"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    assert!(blocks
        .iter()
        .any(|block| block["type"] == "tool_use" && block["name"] == "get_weather"));
    let results = &second["messages"][2]["content"];
    assert_eq!(results[0]["type"], "tool_result");
    assert_eq!(results[0]["content"], "Sunny in Tokyo, Japan");
}

#[tokio::test]
async fn events_framed_with_crlf_and_cut_anywhere_read_the_same() {
    let events = Reply::events(&chat_chunks(&[r#"{"a":"#, r#"4,"b":5}"#]), false, true).crlf();
    let mut replies = Vec::new();
    for chunk in [1, 2, 7] {
        replies.push(events.clone().in_chunks(chunk));
    }
    let server = Server::start(replies).await;
    for _ in 0..3 {
        let model = Chat::new("m").base_url(server.url()).retry(no_retries());
        let message = model.respond(&user("x"), &specs()).await.unwrap();
        assert_eq!(message.tool_calls[0].arguments, json!(r#"{"a":4,"b":5}"#));
    }
}

#[tokio::test]
async fn anthropic_overload_is_retried_and_a_stream_error_event_is_typed() {
    let overloaded =
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    let answer = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "content": [{"type": "text", "text": "fine"}], "stop_reason": "end_turn"});
    let mut policy = RetryPolicy::default();
    policy.initial_backoff = Duration::from_millis(5);
    let server = Server::start([
        Reply::error(529, &overloaded),
        Reply::json(&answer),
        Reply::events(
            &[
                json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant", "content": []}}),
                json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
            ],
            true,
            false,
        ),
    ])
    .await;
    let whole = Messages::new("c")
        .base_url(server.url())
        .stream(false)
        .retry(policy);
    let message = whole.respond(&user("x"), &[]).await.unwrap();
    assert_eq!(message.text.as_deref(), Some("fine"));
    assert_eq!(server.received().len(), 2);
    // Inside a stream the error is typed, and not retried: part of the
    // answer was already read.
    let streamed = Messages::new("c")
        .base_url(server.url())
        .retry(no_retries());
    let error = streamed.respond(&user("x"), &[]).await.unwrap_err();
    assert_eq!(error.kind.as_deref(), Some("overloaded_error"));
    assert!(error.message.contains("Overloaded"), "{error}");
    assert_eq!(server.received().len(), 3);
}

/// Tag a document.
#[tool(strict)]
fn tag(document: String, label: Option<String>) -> String {
    format!("{document} {label:?}")
}

#[tokio::test]
async fn a_strict_tool_goes_out_strict_through_a_client_in_a_run() {
    let server = Server::start([Reply::json(&chat_text("done"))]).await;
    let registry = ToolRegistry::new().with(Tag).unwrap().with(Add).unwrap();
    let model = Chat::new("m").base_url(server.url()).stream(false);
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("tag it")])
        .await;
    assert_eq!(outcome.text(), Some("done"));
    let tools = server.received()[0].body["tools"].clone();
    assert_eq!(tools[0]["function"]["name"], "tag");
    assert_eq!(tools[0]["function"]["strict"], true, "{tools:#}");
    assert_eq!(
        tools[0]["function"]["parameters"]["required"],
        json!(["document", "label"])
    );
    assert_eq!(tools[1]["function"]["strict"], false);
}

/// Search the web.
#[behest::external_tool]
struct WebSearch {
    query: String,
}

/// The run every client is put through end to end: the model thinks,
/// calls `add` with a bad argument and `web_search` (external, answered by
/// a handler) in parallel, corrects `add`, then answers.
async fn run_the_scenario(model: impl Model) -> RunOutcome {
    let registry = ToolRegistry::new()
        .with(Add)
        .unwrap()
        .with(WebSearch::external_tool())
        .unwrap();
    let invocation = Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("go")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(behest::ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let search = WebSearch::from_call(&call).unwrap();
            let answer = behest::ToolOutput::text(format!("{}: a language", search.query));
            control.resolve(&call.call_id, Ok(answer)).unwrap();
        }
    });
    let outcome = invocation.await;
    assert_eq!(
        outcome.text(),
        Some("3, and rust is a language"),
        "{outcome:?}"
    );
    outcome
}

/// The scenario with Gemini (whole answers): calls without ids (Gemini
/// makes none) answered by name, a thought signature sent back on its part.
#[tokio::test]
async fn a_gemini_run_with_parallel_calls_a_correction_and_an_external_tool() {
    let call = |name: &str, args: Value| json!({"functionCall": {"name": name, "args": args}});
    let turn = |parts: Vec<Value>| json!({"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}]});
    let mut signed = call("add", json!({"a": 1, "b": "two"}));
    signed["thoughtSignature"] = json!("sig-gemini");
    let server = Server::start([
        Reply::json(&turn(vec![
            signed,
            call("web_search", json!({"query": "rust"})),
        ])),
        Reply::json(&turn(vec![call("add", json!({"a": 1, "b": 2}))])),
        Reply::json(&turn(vec![json!({"text": "3, and rust is a language"})])),
    ])
    .await;
    run_the_scenario(Gemini::new("g").base_url(server.url()).stream(false)).await;
    let received = server.received();
    assert_eq!(received.len(), 3);
    let contents = received[1].body["contents"].as_array().unwrap();
    assert_eq!(contents[1]["parts"][0]["thoughtSignature"], "sig-gemini");
    // The second request answers both calls, by name, with no made-up id.
    let answers: Vec<&Value> = contents
        .iter()
        .flat_map(|content| content["parts"].as_array().unwrap())
        .filter_map(|part| part.get("functionResponse"))
        .collect();
    assert_eq!(answers.len(), 2, "{:#}", received[1].body);
    assert_eq!(answers[0]["name"], "add");
    assert!(
        answers[0]["response"]["error"].to_string().contains("/b"),
        "{}",
        answers[0]
    );
    assert_eq!(answers[1]["name"], "web_search");
    assert!(answers[1]["response"]
        .to_string()
        .contains("rust: a language"));
    assert!(answers.iter().all(|answer| answer.get("id").is_none()));
}

/// The scenario with Chat Completions, streamed, from a server that
/// reasons in `reasoning_content` (DeepSeek, vLLM, Ollama): the reasoning
/// goes back on its turn.
#[tokio::test]
async fn a_streamed_chat_run_with_parallel_calls_a_correction_and_an_external_tool() {
    let chunk = |delta: Value, finish: Option<&str>| json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let call = |index: usize, id: &str, name: &str, arguments: &str| {
        json!({"tool_calls": [{"index": index, "id": id, "type": "function",
            "function": {"name": name, "arguments": arguments}}]})
    };
    let more = |index: usize, arguments: &str| json!({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]});
    let server = Server::start([
        Reply::events(
            &[
                chunk(
                    json!({"role": "assistant", "reasoning_content": "Two tools, "}),
                    None,
                ),
                chunk(json!({"reasoning_content": "at once."}), None),
                chunk(call(0, "call_a", "add", r#"{"a":1,"#), None),
                chunk(call(1, "call_s", "web_search", r#"{"query":"rust"}"#), None),
                chunk(more(0, r#""b":"two"}"#), None),
                chunk(json!({}), Some("tool_calls")),
            ],
            false,
            true,
        )
        .in_chunks(13),
        Reply::events(
            &[
                chunk(call(0, "call_b", "add", r#"{"a":1,"b":2}"#), None),
                chunk(json!({}), Some("tool_calls")),
            ],
            false,
            true,
        ),
        Reply::events(
            &[
                chunk(json!({"content": "3, and rust "}), None),
                chunk(json!({"content": "is a language"}), Some("stop")),
            ],
            false,
            true,
        ),
    ])
    .await;
    run_the_scenario(Chat::new("m").base_url(server.url())).await;
    let received = server.received();
    assert_eq!(received.len(), 3);
    let messages = received[1].body["messages"].as_array().unwrap();
    assert_eq!(messages[1]["reasoning_content"], "Two tools, at once.");
    assert_eq!(
        messages[1]["tool_calls"][0]["function"]["arguments"],
        r#"{"a":1,"b":"two"}"#
    );
    assert_eq!(messages[2]["tool_call_id"], "call_a");
    assert!(
        messages[2]["content"].as_str().unwrap().contains("/b"),
        "{}",
        messages[2]
    );
    assert_eq!(messages[3]["tool_call_id"], "call_s");
    assert_eq!(messages[3]["content"], "rust: a language");
}

/// The scenario with Responses, streamed: the reasoning item comes back
/// with its `encrypted_content` and goes back before the calls it led to.
#[tokio::test]
async fn a_streamed_responses_run_with_parallel_calls_a_correction_and_an_external_tool() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Two tools at once."}],
        "encrypted_content": "gAAAA-opaque"});
    let call_item = |index: usize, call_id: &str, name: &str| {
        json!({"type": "response.output_item.added", "output_index": index,
            "item": {"type": "function_call", "id": format!("fc_{index}"), "call_id": call_id,
                "name": name, "arguments": ""}})
    };
    let arguments_done = |index: usize, arguments: &str| {
        json!({"type": "response.function_call_arguments.done", "output_index": index,
            "arguments": arguments})
    };
    let completed = json!({"type": "response.completed", "response": {"id": "resp_1",
        "usage": {"input_tokens": 20, "output_tokens": 5}}});
    let server = Server::start([
        Reply::events(
            &[
                json!({"type": "response.created", "response": {"id": "resp_1"}}),
                json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
                call_item(1, "call_a", "add"),
                json!({"type": "response.function_call_arguments.delta", "output_index": 1,
                    "delta": r#"{"a":1,"#}),
                arguments_done(1, r#"{"a":1,"b":"two"}"#),
                call_item(2, "call_s", "web_search"),
                arguments_done(2, r#"{"query":"rust"}"#),
                completed.clone(),
            ],
            true,
            false,
        )
        .in_chunks(29),
        Reply::events(
            &[
                call_item(0, "call_b", "add"),
                arguments_done(0, r#"{"a":1,"b":2}"#),
                completed.clone(),
            ],
            true,
            false,
        ),
        Reply::events(
            &[
                json!({"type": "response.output_text.delta", "output_index": 0,
                    "delta": "3, and rust is a language"}),
                completed,
            ],
            true,
            false,
        ),
    ])
    .await;
    let outcome = run_the_scenario(Responses::new("m").base_url(server.url())).await;
    assert_eq!(outcome.usage().input_tokens, 60);
    let received = server.received();
    let input = received[1].body["input"].as_array().unwrap();
    let kinds: Vec<&str> = input
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "reasoning",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ],
        "{input:#?}"
    );
    assert_eq!(input[1]["encrypted_content"], "gAAAA-opaque");
    assert_eq!(input[4]["call_id"], "call_a");
    assert!(input[4]["output"].as_str().unwrap().contains("/b"));
    assert_eq!(input[5]["output"], "rust: a language");
}

/// The scenario with Anthropic (whole answers): the signed thinking block
/// goes back first in its turn, each result as a `tool_result`.
#[tokio::test]
async fn an_anthropic_run_with_parallel_calls_a_correction_and_an_external_tool() {
    let turn = |content: Value, stop: &str| {
        json!({"id": "msg_1", "type": "message", "role": "assistant", "content": content,
            "stop_reason": stop, "usage": {"input_tokens": 10, "output_tokens": 2}})
    };
    let server = Server::start([
        Reply::json(&turn(
            json!([
                {"type": "thinking", "thinking": "Two tools at once.", "signature": "sig-anthropic"},
                {"type": "tool_use", "id": "toolu_a", "name": "add", "input": {"a": 1, "b": "two"}},
                {"type": "tool_use", "id": "toolu_s", "name": "web_search", "input": {"query": "rust"}},
            ]),
            "tool_use",
        )),
        Reply::json(&turn(
            json!([{"type": "tool_use", "id": "toolu_b", "name": "add", "input": {"a": 1, "b": 2}}]),
            "tool_use",
        )),
        Reply::json(&turn(
            json!([{"type": "text", "text": "3, and rust is a language"}]),
            "end_turn",
        )),
    ])
    .await;
    run_the_scenario(Messages::new("c").base_url(server.url()).stream(false)).await;
    let received = server.received();
    let messages = received[1].body["messages"].as_array().unwrap();
    let blocks = messages[1]["content"].as_array().unwrap();
    assert_eq!(blocks[0]["type"], "thinking");
    assert_eq!(blocks[0]["signature"], "sig-anthropic");
    assert_eq!(blocks[0]["thinking"], "Two tools at once.");
    let results = messages[2]["content"].as_array().unwrap();
    assert_eq!(results[0]["tool_use_id"], "toolu_a");
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[1]["tool_use_id"], "toolu_s");
    assert_eq!(results[1]["content"], "rust: a language");
}

/// Errors reported inside Responses and Gemini streams are typed errors.
#[tokio::test]
async fn errors_inside_responses_and_gemini_streams_are_typed() {
    let server = Server::start([
        Reply::events(
            &[
                json!({"type": "response.created", "response": {"id": "resp_1"}}),
                json!({"type": "response.failed", "response": {"id": "resp_1", "status": "failed",
                    "error": {"code": "server_error", "message": "The model failed."}}}),
            ],
            true,
            false,
        ),
        Reply::events(
            &[
                json!({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down.",
                "param": null, "sequence_number": 1}),
            ],
            true,
            false,
        ),
        Reply::events(
            &[json!({"error": {"code": 503, "status": "UNAVAILABLE",
                "message": "The model is overloaded."}})],
            false,
            false,
        ),
    ])
    .await;
    let responses = Responses::new("m")
        .base_url(server.url())
        .retry(no_retries());
    let error = responses.respond(&user("x"), &[]).await.unwrap_err();
    assert_eq!(error.kind.as_deref(), Some("server_error"));
    assert!(error.message.contains("The model failed."), "{error}");
    assert!(error.retryable);
    // Responses' own `error` event: its `code` is the kind.
    let error = responses.respond(&user("x"), &[]).await.unwrap_err();
    assert_eq!(
        error.kind.as_deref(),
        Some("rate_limit_exceeded"),
        "{error:?}"
    );
    assert!(error.message.contains("Slow down."), "{error}");
    let gemini = Gemini::new("g").base_url(server.url()).retry(no_retries());
    let error = gemini.respond(&user("x"), &[]).await.unwrap_err();
    assert!(error.message.contains("overloaded"), "{error}");
    assert_eq!(error.kind.as_deref(), Some("UNAVAILABLE"));
    assert!(error.retryable);
    assert_eq!(server.received().len(), 3);
}

/// A typed answer.
#[derive(Debug, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Sum {
    total: i64,
    /// Working shown, if any.
    note: Option<String>,
}

/// Each client asks for a typed answer the provider's way: Chat's
/// `response_format`, Responses' `text.format`, Gemini's `responseSchema`
/// (no `final_answer` tool), Anthropic's a final tool; an answer that does
/// not match goes back with the reason and the corrected one is taken.
#[tokio::test]
async fn typed_answers_are_asked_for_the_way_each_provider_offers() {
    let chat_answer = |text: &str| json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]});
    let responses_answer = |text: &str| {
        json!({"id": "resp_1", "output": [{"type": "message", "role": "assistant",
        "content": [{"type": "output_text", "text": text}]}]})
    };
    let gemini_answer = |text: &str| json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]});
    let server = Server::start([
        Reply::json(&chat_answer(r#"{"total": "three", "note": null}"#)),
        Reply::json(&chat_answer(r#"{"total": 3, "note": null}"#)),
        Reply::json(&responses_answer(r#"{"total": 3, "note": "1 + 2"}"#)),
        Reply::json(&gemini_answer(r#"{"total": 3}"#)),
        Reply::json(&json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "final_answer", "input": {"total": 3}}],
            "stop_reason": "tool_use"})),
    ])
    .await;
    let ask = |model: Arc<dyn Model>| {
        let registry = ToolRegistry::new().with(Add).unwrap();
        let agent = Agent::from_arc(model, ToolRuntime::new(registry));
        async move { agent.output::<Sum>([Message::user("1 + 2?")]).await }
    };
    let url = server.url();
    let models: [Arc<dyn Model>; 4] = [
        // A server other than OpenAI's says it can.
        Arc::new(
            Chat::new("m")
                .base_url(&url)
                .stream(false)
                .structured_output(true),
        ),
        Arc::new(Responses::new("m").base_url(&url).stream(false)),
        Arc::new(
            Gemini::new("gemini-3-flash-preview")
                .base_url(&url)
                .stream(false),
        ),
        Arc::new(Messages::new("m").base_url(&url).stream(false)),
    ];
    let mut answers = Vec::new();
    for model in models {
        answers.push(ask(model).await.unwrap());
    }
    assert_eq!(
        answers[0],
        Sum {
            total: 3,
            note: None
        }
    );
    assert_eq!(answers[1].note.as_deref(), Some("1 + 2"));
    assert!(answers[2..].iter().all(|sum| sum.total == 3));

    let received = server.received();
    let names = |body: &Value, pointer: &str| -> Vec<String> {
        body.pointer(pointer)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|tool| {
                tool.pointer("/function/name")
                    .or_else(|| tool.get("name"))
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
            .collect()
    };
    // Chat: a strict json_schema, every property required, the optional
    // one nullable; no final tool.
    let chat = &received[0].body;
    let format = &chat["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "final_answer");
    assert_eq!(format["json_schema"]["strict"], true);
    assert!(
        !format["json_schema"]["description"]
            .as_str()
            .unwrap()
            .contains("tool"),
        "{format}"
    );
    let schema = &format["json_schema"]["schema"];
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["note", "total"]));
    assert_eq!(names(chat, "/tools"), ["add"]);
    // The mismatch went back as a user message with the reason.
    let corrected = received[1].body["messages"].as_array().unwrap();
    let last = corrected.last().unwrap();
    assert_eq!(last["role"], "user");
    assert!(
        last["content"].as_str().unwrap().contains("`/total`"),
        "{last}"
    );
    // Responses: `text.format`.
    let responses = &received[2].body;
    assert_eq!(responses["text"]["format"]["type"], "json_schema");
    assert_eq!(responses["text"]["format"]["name"], "final_answer");
    assert_eq!(responses["text"]["format"]["strict"], true);
    assert_eq!(names(responses, "/tools"), ["add"]);
    // Gemini: JSON out, in the schema's Gemini form.
    let gemini = &received[3].body;
    let generation = &gemini["generationConfig"];
    assert_eq!(generation["responseMimeType"], "application/json");
    assert_eq!(generation["responseSchema"]["type"], "object");
    assert!(generation["responseSchema"]["properties"]["total"].is_object());
    assert_eq!(
        generation["responseSchema"]["properties"]["note"]["nullable"],
        true
    );
    // Anthropic: the final tool, beside the agent's.
    let anthropic = &received[4].body;
    assert_eq!(names(anthropic, "/tools"), ["add", "final_answer"]);
    assert!(anthropic.get("response_format").is_none());
}

/// Where a response schema may not combine with tools (a server other than
/// OpenAI's, unless told; Gemini before 3; switched off; a forced tool
/// call), a typed run gets the `final_answer` tool instead.
#[tokio::test]
async fn typed_runs_fall_back_to_the_final_tool_where_structured_output_may_fail() {
    let chat_final = json!({"choices": [{"index": 0, "message": {
        "role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "final_answer", "arguments": "{\"total\": 3, \"note\": null}"}}]},
        "finish_reason": "tool_calls"}]});
    let gemini_final = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "final_answer", "args": {"total": 3}}}]}, "finishReason": "STOP"}]});
    let responses_final = json!({"id": "resp_1", "output": [{"type": "function_call",
        "id": "fc_1", "call_id": "c1", "name": "final_answer",
        "arguments": "{\"total\": 3, \"note\": null}"}]});
    let server = Server::start([
        Reply::json(&chat_final),
        Reply::json(&chat_final),
        Reply::json(&responses_final),
        Reply::json(&gemini_final),
    ])
    .await;
    let url = server.url();
    let models: [Arc<dyn Model>; 4] = [
        Arc::new(Chat::new("m").base_url(&url).stream(false)),
        Arc::new(
            Chat::new("m")
                .base_url(&url)
                .stream(false)
                .structured_output(false),
        ),
        Arc::new(
            Responses::new("m")
                .base_url(&url)
                .stream(false)
                .tool_choice(ToolChoice::Required),
        ),
        Arc::new(Gemini::new("gemini-2.5-flash").base_url(&url).stream(false)),
    ];
    for model in models {
        let agent = Agent::from_arc(model, ToolRuntime::new(ToolRegistry::new()));
        let sum: Sum = agent.output([Message::user("1 + 2?")]).await.unwrap();
        assert_eq!(sum.total, 3);
    }
    let received = server.received();
    for request in &received[..2] {
        assert!(request.body.get("response_format").is_none());
        assert_eq!(request.body["tools"][0]["function"]["name"], "final_answer");
    }
    assert!(received[2].body.get("text").is_none());
    assert_eq!(received[2].body["tools"][0]["name"], "final_answer");
    assert!(received[3].body["generationConfig"]
        .get("responseSchema")
        .is_none());
    assert_eq!(
        received[3].body["tools"][0]["functionDeclarations"][0]["name"],
        "final_answer"
    );
}

/// Every recorded request's conversation and tools, sent through its
/// client: the body the client writes reads back as the same conversation
/// and the same tools (names, descriptions) as the recording, and passes an
/// independent check of what the provider's API requires.
#[tokio::test]
async fn recorded_requests_go_out_as_the_providers_require() {
    use behest::providers::{anthropic, gemini, openai};

    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/provider-fixtures");
    let mut checked = 0;
    for folder in ["openai-chat", "openai-responses", "anthropic", "gemini"] {
        for entry in std::fs::read_dir(dir.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.starts_with("request-") {
                continue;
            }
            let recorded: Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let label = format!("{folder}/{name}");
            let (conversation, tools) = decode_request(folder, &recorded)
                .unwrap_or_else(|error| panic!("{label}: {error}"));
            let server = Server::start([text_answer(folder)]).await;
            let url = server.url();
            let answer = match folder {
                "openai-chat" => {
                    Chat::new("m")
                        .base_url(url)
                        .stream(false)
                        .respond(&conversation, &tools)
                        .await
                }
                "openai-responses" => {
                    Responses::new("m")
                        .base_url(url)
                        .stream(false)
                        .respond(&conversation, &tools)
                        .await
                }
                "anthropic" => {
                    Messages::new("m")
                        .base_url(url)
                        .stream(false)
                        .respond(&conversation, &tools)
                        .await
                }
                _ => {
                    Gemini::new("m")
                        .base_url(url)
                        .stream(false)
                        .respond(&conversation, &tools)
                        .await
                }
            };
            answer.unwrap_or_else(|error| panic!("{label}: {error}"));
            let sent = &server.received()[0].body;
            let (again, sent_tools) =
                decode_request(folder, sent).unwrap_or_else(|error| panic!("{label}: {error}"));
            assert_eq!(
                with_turnless_ids(&again),
                with_turnless_ids(&conversation),
                "{label}: the conversation sent"
            );
            let summary = |specs: &[ToolSpec]| -> Vec<(String, String)> {
                specs
                    .iter()
                    .map(|s| (s.name.clone(), s.description.clone()))
                    .collect()
            };
            assert_eq!(
                summary(&sent_tools),
                summary(&tools),
                "{label}: the tools sent"
            );
            if let Err(problem) = provider_requirements(folder, sent) {
                panic!("{label}: {problem}\n{sent:#}");
            }
            checked += 1;
        }
    }
    assert!(checked >= 30, "only {checked} recorded requests checked");

    /// A request's conversation and tools, read with behest's readers.
    fn decode_request(
        folder: &str,
        request: &Value,
    ) -> Result<(Vec<Message>, Vec<ToolSpec>), behest::providers::ParseError> {
        let list = |key: &str| request[key].as_array().cloned().unwrap_or_default();
        let (conversation, tools) = match folder {
            "openai-chat" => (
                openai::chat::from_messages(&list("messages"))?,
                openai::chat::parse_tools(request),
            ),
            "openai-responses" => {
                let mut conversation = Vec::new();
                if let Some(instructions) = request["instructions"].as_str() {
                    conversation.push(Message::system(instructions));
                }
                conversation.extend(openai::responses::from_messages(&list("input"))?);
                (conversation, openai::responses::parse_tools(request))
            }
            "anthropic" => (
                anthropic::from_messages(request.get("system"), &list("messages"))?,
                anthropic::parse_tools(request),
            ),
            _ => (
                gemini::from_messages(request.get("systemInstruction"), &list("contents"))?,
                gemini::parse_tools(request),
            ),
        };
        // A request without tools declares none.
        let tools = if request.get("tools").is_some() {
            tools?
        } else {
            Vec::new()
        };
        Ok((conversation, tools))
    }
}

/// `conversation` as JSON, the numbers of made-up Gemini call ids
/// (`gemini-call-<index>`) masked.
fn with_turnless_ids(conversation: &[Message]) -> String {
    let text = serde_json::to_string(conversation).unwrap();
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("gemini-call-") {
        let (before, after) = rest.split_at(at + "gemini-call-".len());
        out.push_str(before);
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
        out.push('N');
    }
    out.push_str(rest);
    out
}

/// A whole text answer in `folder`'s format.
fn text_answer(folder: &str) -> Reply {
    Reply::json(&match folder {
        "openai-chat" => chat_text("ok"),
        "openai-responses" => json!({"id": "resp_1", "output": [{"type": "message",
            "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}]}),
        "anthropic" => json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}),
        _ => json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]},
            "finishReason": "STOP"}]}),
    })
}

/// What each provider's API requires of a request, checked on its own
/// terms (not with behest's readers): the fields it must have, and every
/// tool result answering a call of the turn before it.
fn provider_requirements(folder: &str, body: &Value) -> Result<(), String> {
    let array = |value: &Value, what: &str| -> Result<Vec<Value>, String> {
        value
            .as_array()
            .cloned()
            .ok_or(format!("{what} is not an array"))
    };
    let text = |value: &Value| value.as_str().map(str::to_owned);
    match folder {
        "openai-chat" => {
            text(&body["model"]).ok_or("no model")?;
            let mut open: Vec<String> = Vec::new();
            for message in array(&body["messages"], "messages")? {
                let role = text(&message["role"]).ok_or("a message without a role")?;
                match role.as_str() {
                    "system" | "developer" | "user" => {}
                    "assistant" => {
                        for call in message["tool_calls"].as_array().into_iter().flatten() {
                            if call["type"] != "function"
                                || !call["function"]["arguments"].is_string()
                            {
                                return Err(format!("a malformed tool call {call}"));
                            }
                            open.push(text(&call["id"]).ok_or("a call without an id")?);
                        }
                    }
                    "tool" => {
                        let id = text(&message["tool_call_id"])
                            .ok_or("a result without tool_call_id")?;
                        if !open.contains(&id) {
                            return Err(format!("the result of {id} answers no call"));
                        }
                    }
                    other => return Err(format!("role {other}")),
                }
            }
            for tool in body["tools"].as_array().into_iter().flatten() {
                if tool["type"] != "function" || text(&tool["function"]["name"]).is_none() {
                    return Err(format!("a malformed tool {tool}"));
                }
            }
        }
        "openai-responses" => {
            text(&body["model"]).ok_or("no model")?;
            let mut open: Vec<String> = Vec::new();
            for item in array(&body["input"], "input")? {
                match item["type"].as_str() {
                    Some("function_call") => {
                        if !item["arguments"].is_string() || text(&item["name"]).is_none() {
                            return Err(format!("a malformed call {item}"));
                        }
                        open.push(text(&item["call_id"]).ok_or("a call without call_id")?);
                    }
                    Some("function_call_output") => {
                        let id = text(&item["call_id"]).ok_or("an output without call_id")?;
                        if !open.contains(&id) || !item["output"].is_string() {
                            return Err(format!("the output of {id} answers no call"));
                        }
                    }
                    Some("reasoning") => {
                        if !item["summary"].is_array() {
                            return Err(format!("a reasoning item without summary {item}"));
                        }
                    }
                    Some("message") | None => {
                        text(&item["role"]).ok_or("a message without a role")?;
                    }
                    Some(other) => return Err(format!("an input item of type {other}")),
                }
            }
            for tool in body["tools"].as_array().into_iter().flatten() {
                if tool["type"] != "function" || text(&tool["name"]).is_none() {
                    return Err(format!("a malformed tool {tool}"));
                }
            }
        }
        "anthropic" => {
            text(&body["model"]).ok_or("no model")?;
            body["max_tokens"].as_u64().ok_or("no max_tokens")?;
            let messages = array(&body["messages"], "messages")?;
            let mut previous: Vec<String> = Vec::new();
            for (position, message) in messages.iter().enumerate() {
                let role = text(&message["role"]).ok_or("a message without a role")?;
                let expected = if position % 2 == 0 {
                    "user"
                } else {
                    "assistant"
                };
                if role != expected {
                    return Err(format!("message {position} is {role}, not {expected}"));
                }
                let blocks = match &message["content"] {
                    Value::String(_) => Vec::new(),
                    content => array(content, "content")?,
                };
                let mut calls = Vec::new();
                for block in &blocks {
                    match block["type"].as_str() {
                        Some("tool_use") => {
                            calls.push(text(&block["id"]).ok_or("a call without id")?)
                        }
                        Some("tool_result") => {
                            let id = text(&block["tool_use_id"]).ok_or("a result without id")?;
                            if !previous.contains(&id) {
                                return Err(format!(
                                    "the result of {id} answers no call of the turn before"
                                ));
                            }
                        }
                        _ => {}
                    }
                }
                previous = calls;
            }
            for tool in body["tools"].as_array().into_iter().flatten() {
                if text(&tool["name"]).is_none() || !tool["input_schema"].is_object() {
                    return Err(format!("a malformed tool {tool}"));
                }
            }
        }
        _ => {
            let mut previous: Vec<String> = Vec::new();
            for content in array(&body["contents"], "contents")? {
                let role = text(&content["role"]).ok_or("content without a role")?;
                if role != "user" && role != "model" {
                    return Err(format!("role {role}"));
                }
                let mut calls = Vec::new();
                for part in array(&content["parts"], "parts")? {
                    if let Some(call) = part.get("functionCall") {
                        calls.push(text(&call["name"]).ok_or("a call without a name")?);
                    }
                    if let Some(response) = part.get("functionResponse") {
                        let name = text(&response["name"]).ok_or("a response without a name")?;
                        if !previous.contains(&name) || !response["response"].is_object() {
                            return Err(format!("the response of {name} answers no call"));
                        }
                    }
                }
                if !calls.is_empty() || role == "model" {
                    previous = calls;
                }
            }
            for tools in body["tools"].as_array().into_iter().flatten() {
                for declaration in array(&tools["functionDeclarations"], "functionDeclarations")? {
                    text(&declaration["name"]).ok_or("a declaration without a name")?;
                }
            }
        }
    }
    Ok(())
}

/// A Gemini model named as the API names it (`models/…`) is not named
/// twice in the path.
#[tokio::test]
async fn a_gemini_model_named_with_its_models_prefix_keeps_one_in_the_path() {
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "hi"}]},
        "finishReason": "STOP"}]});
    let server = Server::start([Reply::json(&answer)]).await;
    let model = Gemini::new("models/gemini-2.5-flash")
        .base_url(server.url())
        .retry(no_retries())
        .stream(false);
    let message = model.respond(&user("x"), &[]).await.unwrap();
    assert_eq!(message.text.as_deref(), Some("hi"));
    assert_eq!(
        server.received()[0].path,
        "/v1/models/gemini-2.5-flash:generateContent"
    );
}

/// The message a format's assembler makes of `events`.
fn assembled<S: StreamAssembler>(events: &[Value]) -> behest::AssistantMessage {
    let mut stream = S::default();
    for event in events {
        stream.push(event).unwrap();
    }
    stream.finish()
}

//! The answers of OpenAI-compatible servers people run themselves
//! (`tests/data/compat-servers`, with their origins), replayed through the
//! `Chat` client from a local server: each turn's call is read as the
//! server meant it, whole and streamed.

use behest::models::openai::Chat;
use behest::{Message, Model, ToolCall};
use serde_json::{json, Value};

use crate::models_support::{Reply, Server};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/compat-servers")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// The call a turn made, its arguments decoded.
fn only_call(calls: &[ToolCall]) -> (String, String, Value) {
    assert_eq!(calls.len(), 1, "{calls:?}");
    let call = &calls[0];
    let arguments = match &call.arguments {
        Value::String(text) => serde_json::from_str(text).unwrap(),
        other => other.clone(),
    };
    (call.call_id.clone(), call.tool_name.clone(), arguments)
}

#[tokio::test]
async fn each_servers_answer_is_read_whole_and_streamed() {
    let paris = json!({ "city": "Paris" });
    let cases: [(&str, &str, Value); 6] = [
        ("ollama", "get_weather", paris.clone()),
        ("llamacpp", "get_weather", paris.clone()),
        ("vllm", "get_weather", paris.clone()),
        ("openrouter", "get_weather", paris.clone()),
        (
            "lmstudio",
            "get_current_weather",
            json!({ "location": "San Francisco" }),
        ),
        ("ollama", "get_weather", paris.clone()),
    ];
    let streams = [
        "ollama-stream.txt",
        "llamacpp-stream.txt",
        "vllm-stream.txt",
        "openrouter-stream.txt",
        "lmstudio-stream.txt",
        "ollama-stream-v0.8-to-v0.32.5.txt",
    ];
    let hi = [Message::user("Weather in Paris?")];
    for ((server_name, tool, arguments), stream) in cases.iter().zip(streams) {
        let server = Server::start([Reply::sse(&fixture(stream))]).await;
        let chat = Chat::new("local").base_url(server.url());
        let turn = chat
            .respond(&hi, &[])
            .await
            .unwrap_or_else(|error| panic!("{stream}: {error}"));
        let (id, name, read) = only_call(&turn.tool_calls);
        assert!(!id.is_empty(), "{stream}: the call has an id");
        assert_eq!((name.as_str(), &read), (*tool, arguments), "{stream}");
        assert!(
            turn.text.as_deref().unwrap_or_default().is_empty(),
            "{stream}: {turn:?}"
        );
        let _ = server_name;
    }
    for (name, tool, arguments) in [
        ("ollama-whole.json", "get_weather", paris.clone()),
        ("llamacpp-whole.json", "get_weather", paris.clone()),
        ("vllm-whole.json", "get_weather", paris.clone()),
        ("openrouter-whole.json", "get_weather", paris.clone()),
        (
            "lmstudio-whole.json",
            "search_products",
            json!({ "query": "dell", "category": "electronics", "max_price": 50 }),
        ),
    ] {
        let body: Value = serde_json::from_str(&fixture(name)).unwrap();
        let server = Server::start([Reply::json(&body)]).await;
        let chat = Chat::new("local").base_url(server.url()).stream(false);
        let turn = chat
            .respond(&hi, &[])
            .await
            .unwrap_or_else(|error| panic!("{name}: {error}"));
        let (_, read_tool, read) = only_call(&turn.tool_calls);
        assert_eq!((read_tool.as_str(), &read), (tool, &arguments), "{name}");
        let usage = turn.usage.expect("usage");
        assert!(
            usage.input_tokens > 0 && usage.output_tokens > 0,
            "{name}: {usage:?}"
        );
    }
}

/// OpenRouter ends a failing stream with a chunk that carries the error
/// (HTTP 200 all along): the turn fails with the provider's message.
#[tokio::test]
async fn an_error_inside_a_200_stream_fails_the_turn_with_its_message() {
    let server = Server::start([Reply::sse(&fixture("openrouter-stream-error.txt"))]).await;
    let chat = Chat::new("openai/gpt-4o-mini")
        .base_url(server.url())
        .retry(behest::models::RetryPolicy::none());
    let error = chat.respond(&[Message::user("Hi")], &[]).await.unwrap_err();
    assert!(
        error.message.contains("Network connection lost."),
        "{error}"
    );
}

/// What goes back to these servers: text as a string beside calls (never
/// `null`), and a call without arguments as `{}` (Ollama refuses `""`).
#[tokio::test]
async fn what_goes_back_is_what_every_server_takes() {
    let server = Server::start([Reply::json(&json!({"choices": [{"index": 0,
        "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}))])
    .await;
    let chat = Chat::new("local").base_url(server.url()).stream(false);
    let conversation = [
        Message::user("What time is it?"),
        Message::Assistant(behest::AssistantMessage::tool_calls([ToolCall::new(
            "c1", "now", "",
        )])),
        Message::ToolResult(behest::conversation::ToolResultMessage::new(
            "c1", "now", "12:00",
        )),
    ];
    chat.respond(&conversation, &[]).await.unwrap();
    let sent = &server.received()[0].body["messages"][1];
    assert_eq!(sent["content"], "");
    assert_eq!(sent["tool_calls"][0]["function"]["arguments"], "{}");
}

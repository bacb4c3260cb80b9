//! behest's request bodies cross-checked with the official Python SDKs
//! (`openai`, `anthropic` on PyPI), when `BEHEST_PYTHON` has them (`.ci/run`
//! installs them): each body of a turn with everything a run sends (a
//! system prompt, an image, a tool call and its result, tools, deferred
//! ones and the provider's tool search, sampling settings, streaming) is
//!
//! - valid against the SDK's own type of the request's parameters
//!   (`CompletionCreateParamsStreaming`, `ResponseCreateParamsStreaming`,
//!   `MessageCreateParamsStreaming`), read by pydantic;
//! - taken by the SDK's method as its keyword arguments (an unknown field
//!   is a `TypeError` there);
//! - sent by the SDK as behest sends it: the same path, the same body, and
//!   the headers behest sets with the values the SDK gives them.

use behest::conversation::{ContentPart, MediaSource, ToolResultMessage};
use behest::models::anthropic::Messages;
use behest::models::openai::{Chat, Responses};
use behest::models::{Client, Format};
use behest::{AssistantMessage, Message, ModelRequest, ModelSettings, Tool, ToolCall};
use serde_json::{json, Value};

/// Get the weather of a city.
#[behest::tool]
fn get_weather(
    /// The city.
    city: String,
    /// Celsius or Fahrenheit.
    unit: Option<String>,
) -> String {
    format!("12 °C in {city} ({unit:?})")
}

/// A turn's conversation with every kind of message a run sends.
fn conversation() -> Vec<Message> {
    vec![
        Message::system("Answer briefly."),
        Message::UserParts {
            parts: vec![
                ContentPart::text("What is the weather where this photo was taken?"),
                ContentPart::Image {
                    source: MediaSource::base64("image/png", "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="),
                },
            ],
        },
        Message::Assistant(
            AssistantMessage::text("Looks like Oslo. Checking.").with_tool_calls([ToolCall::new(
                "call_1",
                "get_weather",
                json!({"city": "Oslo"}),
            )]),
        ),
        Message::ToolResult(ToolResultMessage::new("call_1", "get_weather", "12 °C")),
        Message::user("And tomorrow?"),
    ]
}

/// The SDKs' check, for one body of each kind.
const SCRIPT: &str = r#"
import json, sys
import httpx, pydantic

case = json.load(sys.stdin)
kind, body, headers = case["kind"], case["body"], case["headers"]
sent = []

def answer(request):
    sent.append(request)
    if kind == "messages":
        events = 'event: message_stop\ndata: {"type": "message_stop"}\n\n'
    else:
        events = "data: [DONE]\n\n"
    return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=events)

http = httpx.Client(transport=httpx.MockTransport(answer))

def force(value):
    # pydantic checks an iterable's items as they are read.
    if isinstance(value, dict):
        return {key: force(item) for key, item in value.items()}
    if isinstance(value, (str, bytes)):
        return value
    if hasattr(value, "__iter__"):
        return [force(item) for item in value]
    return value

if kind == "chat":
    import openai
    from openai.types.chat import completion_create_params as params
    kind_type = params.CompletionCreateParamsStreaming
    client = openai.OpenAI(api_key="k", base_url="http://sdk.test/v1", http_client=http)
    call = client.chat.completions.create
elif kind == "responses":
    import openai
    from openai.types.responses import response_create_params as params
    kind_type = params.ResponseCreateParamsStreaming
    client = openai.OpenAI(api_key="k", base_url="http://sdk.test/v1", http_client=http)
    call = client.responses.create
else:
    import anthropic
    from anthropic.types import message_create_params as params
    kind_type = params.MessageCreateParamsStreaming
    client = anthropic.Anthropic(api_key="k", base_url="http://sdk.test", http_client=http)
    call = client.messages.create

# The adapter lives while the items are read: they are checked lazily.
adapter = pydantic.TypeAdapter(kind_type)
force(adapter.validate_python(body))
known = set(kind_type.__annotations__)
unknown = sorted(set(body) - known)
assert not unknown, f"fields the SDK does not know: {unknown}"
stream = call(**body)
list(stream)
request = sent[0]
assert request.method == "POST"
assert request.url.path == case["path"], (request.url.path, case["path"])
assert json.loads(request.content) == body, json.loads(request.content)
for name, value in headers.items():
    assert request.headers.get(name) == value, (name, request.headers.get(name), value)
print("agreed")
"#;

fn sdks_agree(kind: &str, path: &str, body: &Value, headers: Value) {
    let case = json!({"kind": kind, "path": path, "body": body, "headers": headers});
    let said = crate::python::run(
        &format!("{kind}: the SDK disagrees"),
        SCRIPT,
        &case.to_string(),
        &[],
    );
    assert_eq!(said, "agreed");
}

/// The body `client` writes for a turn of [`conversation`] with the
/// weather tool and sampling settings.
fn body_of<F: Format>(client: Client<F>) -> Value {
    let conversation = conversation();
    let tools = [GetWeather.spec()];
    let settings = ModelSettings::new()
        .max_tokens(256)
        .temperature(0.3)
        .top_p(0.9);
    let mut request = ModelRequest::new(&conversation, &tools);
    request.settings = Some(&settings);
    client.request_body(&request).unwrap()
}

/// The names of the tools a `ToolSearch` defers: every one (the weather
/// tool).
fn deferred() -> std::sync::Arc<std::collections::HashSet<String>> {
    let registry = behest::ToolRegistry::new().with(GetWeather).unwrap();
    behest::run::ToolSearch::new(&registry, |_| true).deferred_names()
}

#[test]
#[cfg_attr(
    not(behest_python_sdks),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the openai and anthropic SDKs (.ci/run installs them)"
)]
fn chat_bodies_are_what_the_openai_sdk_sends() {
    let body = body_of(Chat::new("gpt-4.1").stop(["END"]).seed(7));
    sdks_agree(
        "chat",
        "/v1/chat/completions",
        &body,
        json!({"content-type": "application/json"}),
    );
}

#[test]
#[cfg_attr(
    not(behest_python_sdks),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the openai and anthropic SDKs (.ci/run installs them)"
)]
fn responses_bodies_are_what_the_openai_sdk_sends() {
    let body = body_of(
        Responses::new("gpt-4.1")
            .prompt_cache_key("behest-cross-check")
            .tool_search(deferred().iter()),
    );
    assert_eq!(body["tools"][1], json!({"type": "tool_search"}));
    sdks_agree(
        "responses",
        "/v1/responses",
        &body,
        json!({"content-type": "application/json"}),
    );
}

#[test]
#[cfg_attr(
    not(behest_python_sdks),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with the openai and anthropic SDKs (.ci/run installs them)"
)]
fn messages_bodies_are_what_the_anthropic_sdk_sends() {
    let body = body_of(
        Messages::new("claude-sonnet-4-5")
            .stop(["END"])
            .prompt_caching(true)
            .tool_search(deferred().iter()),
    );
    assert_eq!(body["tools"][0]["defer_loading"], true);
    sdks_agree(
        "messages",
        "/v1/messages",
        &body,
        json!({"content-type": "application/json", "anthropic-version": "2023-06-01"}),
    );
}

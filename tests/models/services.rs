//! The model clients against local stand-ins that answer as the real
//! services do: the same status, body and error text the services send
//! for the requests they refuse, and the answer shapes the compatible
//! servers really send. Each test fails if the client sends what the
//! service refuses, or reads an answer wrong.
#![cfg(feature = "models")]

#[allow(dead_code)]
use crate::models_support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::conversation::ToolResultMessage;
use behest::models::anthropic::Messages;
use behest::models::gemini::Gemini;
use behest::models::openai::{Chat, Responses};
use behest::models::RetryPolicy;
use behest::{
    tool, Agent, AssistantMessage, DeltaSink, Message, Model, ModelDelta, ModelRequest,
    ScriptedModel, ScriptedTurn, Tool, ToolCall, ToolRegistry, ToolRuntime,
};
use models_support::{Received, Reply, Server};
use serde_json::{json, Value};

/// Get the weather of a city.
#[tool]
fn get_weather(city: String) -> String {
    format!("Sunny in {city}.")
}

fn weather_runtime() -> ToolRuntime {
    ToolRuntime::new(ToolRegistry::new().with(GetWeather).unwrap())
}

fn responses_text(text: &str) -> Value {
    json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": text, "annotations": []}]}
    ]})
}

fn chat_text(text: &str) -> Value {
    json!({"id": "chatcmpl-1", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
    ]})
}

fn anthropic_text(text: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2}})
}

fn gemini_text(text: &str) -> Value {
    json!({"candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP"}]})
}

/// OpenAI's 400 for `include` with a model that does not reason, as the
/// API sends it.
fn encrypted_content_refused() -> Value {
    json!({"error": {
        "message": "Encrypted content is not supported with this model.",
        "type": "invalid_request_error", "param": "include", "code": null
    }})
}

/// Models OpenAI documents as not reasoning: they refuse encrypted reasoning.
const NOT_REASONING: [&str; 4] = ["gpt-4o", "gpt-4o-mini", "gpt-4.1-mini", "gpt-5-chat-latest"];

/// The Responses API's check of `include`.
fn responses_service() -> Reply {
    Reply::decide(|request: &Received| {
        let model = request.body["model"].as_str().unwrap_or_default();
        let asks = request.body["include"].as_array().is_some_and(|include| {
            include
                .iter()
                .any(|item| item == "reasoning.encrypted_content")
        });
        if asks && NOT_REASONING.contains(&model) {
            Reply::error(400, &encrypted_content_refused())
        } else {
            Reply::json(&responses_text("ok"))
        }
    })
}

#[tokio::test]
async fn responses_asks_for_encrypted_reasoning_only_from_models_that_reason() {
    let server = Server::start([]).await;
    let ask = |model: &str| {
        Responses::new(model)
            .api_key("sk-test")
            .base_url(server.url())
            .stream(false)
    };
    for model in NOT_REASONING
        .into_iter()
        .chain(["gpt-5-mini", "o4-mini", "o3"])
    {
        server.push(responses_service());
        let answer = ask(model).respond(&[Message::user("hi")], &[]).await;
        assert_eq!(answer.unwrap().text.as_deref(), Some("ok"), "{model}");
    }
    let asked: Vec<bool> = server
        .received()
        .iter()
        .map(|request| request.body.get("include").is_some())
        .collect();
    assert_eq!(asked, [false, false, false, false, true, true, true]);
    // Forced on for a model that does not reason: the service's refusal
    // comes back with its own words; forced off, no include.
    server.push(responses_service());
    let refused = ask("gpt-4.1-mini")
        .encrypted_reasoning(true)
        .retry(RetryPolicy::none())
        .respond(&[Message::user("hi")], &[])
        .await
        .unwrap_err();
    assert_eq!(refused.status, Some(400));
    assert!(
        refused
            .message
            .contains("Encrypted content is not supported with this model"),
        "{refused}"
    );
    server.push(responses_service());
    ask("o4-mini")
        .encrypted_reasoning(false)
        .respond(&[Message::user("hi")], &[])
        .await
        .unwrap();
    assert!(server
        .received()
        .last()
        .unwrap()
        .body
        .get("include")
        .is_none());
}

/// Gemini's OpenAI-compatible endpoint streams each call whole, without
/// `index`, with its thought signature in `extra_content`.
fn gemini_compatible_calls() -> Reply {
    let call = |id: &str, city: &str, signature: &str| {
        json!({"extra_content": {"google": {"thought_signature": signature}},
            "function": {"arguments": json!({"city": city}).to_string(), "name": "get_weather"},
            "id": id, "type": "function"})
    };
    Reply::events(
        &[
            json!({"choices": [{"delta": {"role": "assistant", "tool_calls": [
                call("function-call-1", "Paris", "sig-paris"),
                call("function-call-2", "Oslo", "sig-oslo"),
            ]}, "index": 0}], "model": "gemini-3-pro-preview", "object": "chat.completion.chunk"}),
            json!({"choices": [{"delta": {"role": "assistant"}, "finish_reason": "tool_calls", "index": 0}],
                "model": "gemini-3-pro-preview", "object": "chat.completion.chunk",
                "usage": {"completion_tokens": 20, "prompt_tokens": 30, "total_tokens": 50}}),
        ],
        false,
        true,
    )
}

/// Gemini 3's check that every call sent back carries its signature.
fn gemini_compatible_next_turn() -> Reply {
    Reply::decide(|request: &Received| {
        let calls: Vec<&Value> = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|message| message["tool_calls"].as_array())
            .flatten()
            .collect();
        let signed = calls.iter().all(|call| {
            call.pointer("/extra_content/google/thought_signature")
                .is_some()
        });
        if calls.is_empty() || !signed {
            Reply::error(
                400,
                &json!([{"error": {"code": 400,
                "message": "Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:get_weather` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.",
                "status": "INVALID_ARGUMENT"}}]),
            )
        } else {
            Reply::events(
                &[
                    json!({"choices": [{"delta": {"role": "assistant", "content": "Sunny in both."}, "finish_reason": "stop", "index": 0}]}),
                ],
                false,
                true,
            )
        }
    })
}

#[tokio::test]
async fn chat_reads_gemini_s_compatible_stream_and_sends_signatures_back() {
    let server = Server::start([gemini_compatible_calls(), gemini_compatible_next_turn()]).await;
    let model = Chat::new("gemini-3-pro-preview")
        .api_key("key")
        .base_url(server.url());
    let deltas = Arc::new(Mutex::new(Vec::new()));
    let seen = deltas.clone();
    let invocation =
        Agent::new(model, weather_runtime()).invoke([Message::user("Paris and Oslo?")]);
    invocation.on(move |envelope, _| {
        if let behest::EventKind::ModelDelta(ModelDelta::ToolCall { index, name, .. }) =
            envelope.kind
        {
            seen.lock().unwrap().push((index, name));
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("Sunny in both."), "{outcome:?}");
    assert_eq!(
        *deltas.lock().unwrap(),
        [
            (0, Some("get_weather".to_owned())),
            (1, Some("get_weather".to_owned()))
        ]
    );
    let second = &server.received()[1].body;
    let calls = second["messages"][1]["tool_calls"].as_array().unwrap();
    assert_eq!(
        calls[0]["extra_content"]["google"]["thought_signature"],
        "sig-paris"
    );
    assert_eq!(
        calls[1]["extra_content"]["google"]["thought_signature"],
        "sig-oslo"
    );
    assert_eq!(second["messages"][2]["content"], "Sunny in Paris.");
}

/// A conversation whose model turn said nothing, after a tool result.
fn with_an_empty_turn() -> Vec<Message> {
    vec![
        Message::user("Weather in Paris?"),
        Message::Assistant(AssistantMessage::tool_calls([ToolCall::new(
            "call_1",
            "get_weather",
            json!({"city": "Paris"}),
        )])),
        Message::ToolResult(ToolResultMessage::new(
            "call_1",
            "get_weather",
            "Sunny in Paris.",
        )),
        Message::Assistant(AssistantMessage::default()),
        Message::user("And tomorrow?"),
    ]
}

#[tokio::test]
async fn an_empty_model_turn_goes_back_in_a_form_each_service_takes() {
    let anthropic = Server::start([Reply::decide(|request: &Received| {
        let empty = request.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .position(|message| message["content"].as_array().is_some_and(Vec::is_empty));
        match empty {
            Some(at) => Reply::error(400, &json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": format!("messages.{at}: all messages must have non-empty content except for the optional final assistant message")}})),
            None => Reply::json(&anthropic_text("Rain.")),
        }
    })])
    .await;
    let chat = Server::start([Reply::decide(|request: &Received| {
        let bad = request.body["messages"].as_array().unwrap().iter().position(|message| {
            message["role"] == "assistant" && message["content"].is_null() && message.get("tool_calls").is_none()
        });
        match bad {
            Some(at) => Reply::error(400, &json!({"error": {
                "message": "Invalid value for 'content': expected a string, got null.",
                "type": "invalid_request_error", "param": format!("messages.[{at}].content"), "code": null}})),
            None => Reply::json(&chat_text("Rain.")),
        }
    })])
    .await;
    let gemini = Server::start([Reply::decide(|request: &Received| {
        let empty = request.body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .position(|content| content["parts"].as_array().is_some_and(Vec::is_empty));
        match empty {
            Some(at) => Reply::error(400, &json!({"error": {"code": 400,
                "message": format!("* GenerateContentRequest.contents[{at}].parts: contents.parts must not be empty.\n"),
                "status": "INVALID_ARGUMENT"}})),
            None => Reply::json(&gemini_text("Rain.")),
        }
    })])
    .await;
    let conversation = with_an_empty_turn();
    let answers = [
        Messages::new("claude-sonnet-4-5")
            .api_key("k")
            .base_url(anthropic.url())
            .stream(false)
            .respond(&conversation, &[])
            .await,
        Chat::new("llama3.2")
            .base_url(chat.url())
            .stream(false)
            .respond(&conversation, &[])
            .await,
        Gemini::new("gemini-2.5-flash")
            .api_key("k")
            .base_url(gemini.url())
            .stream(false)
            .respond(&conversation, &[])
            .await,
    ];
    for answer in answers {
        assert_eq!(answer.unwrap().text.as_deref(), Some("Rain."));
    }
    // Chat keeps the turn, as an empty string.
    let sent = &chat.received()[0].body["messages"];
    assert_eq!(sent[3], json!({"role": "assistant", "content": ""}));
}

/// Gemini's 429 as the API sends it: the wait in the body's `RetryInfo`.
fn gemini_quota(quota_id: &str, delay: &str) -> Value {
    json!({"error": {"code": 429,
    "message": "You exceeded your current quota, please check your plan and billing details.",
    "status": "RESOURCE_EXHAUSTED",
    "details": [
        {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
            "quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
            "quotaId": quota_id,
            "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
            "quotaValue": "10"}]},
        {"@type": "type.googleapis.com/google.rpc.Help", "links": [{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": delay}
    ]}})
}

#[tokio::test(start_paused = true)]
async fn gemini_s_retry_delay_in_the_body_is_honoured() {
    let server = Server::start([
        Reply::error(
            429,
            &gemini_quota(
                "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
                "37s",
            ),
        ),
        Reply::json(&gemini_text("ok")),
    ])
    .await;
    let policy = RetryPolicy::default();
    assert!(policy.max_backoff >= Duration::from_secs(30));
    let model = Gemini::new("gemini-2.5-flash")
        .api_key("k")
        .base_url(server.url())
        .stream(false);
    let started = tokio::time::Instant::now();
    let answer = model.respond(&[Message::user("hi")], &[]).await.unwrap();
    assert_eq!(answer.text.as_deref(), Some("ok"));
    // The wait is the body's, within the policy's cap (30 s by default).
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(30), "{waited:?}");
    assert!(waited < Duration::from_secs(37), "{waited:?}");
    // A daily quota spent is not tried again.
    let server = Server::start([
        Reply::error(
            429,
            &gemini_quota("GenerateRequestsPerDayPerProjectPerModel-FreeTier", "3600s"),
        ),
        Reply::json(&gemini_text("never")),
    ])
    .await;
    let model = Gemini::new("gemini-2.5-flash")
        .api_key("k")
        .base_url(server.url())
        .stream(false);
    let error = model
        .respond(&[Message::user("hi")], &[])
        .await
        .unwrap_err();
    assert_eq!(error.status, Some(429));
    assert!(!error.retryable, "{error:?}");
    assert!(
        error.message.contains("You exceeded your current quota"),
        "{error}"
    );
    assert_eq!(server.received().len(), 1);
}

#[tokio::test]
async fn compatible_servers_get_the_max_tokens_they_read() {
    // Ollama's OpenAI-compatible endpoint reads `max_tokens` and ignores
    // `max_completion_tokens`: a stand-in that answers as long as it can
    // when the cap is not in the field it reads.
    let ollama = Server::start([Reply::decide(|request: &Received| {
        match request.body.get("max_tokens").and_then(Value::as_u64) {
            Some(cap) => Reply::json(&chat_text(&"word ".repeat(cap as usize))),
            None => Reply::json(&chat_text(&"word ".repeat(4096))),
        }
    })])
    .await;
    let model = Chat::new("llama3.2")
        .base_url(ollama.url())
        .max_tokens(3)
        .stream(false);
    let answer = model.respond(&[Message::user("hi")], &[]).await.unwrap();
    assert_eq!(answer.text.as_deref().map(str::len), Some(15));
    assert!(ollama.received()[0]
        .body
        .get("max_completion_tokens")
        .is_none());
    // OpenAI's own API gets its own name, which its reasoning models
    // require (they refuse `max_tokens`).
    let conversation = [Message::user("hi")];
    let openai = Chat::new("o4-mini").max_tokens(3);
    let body = openai
        .request_body(&ModelRequest::new(&conversation, &[]))
        .unwrap();
    assert_eq!(body["max_completion_tokens"], 3);
    assert!(body.get("max_tokens").is_none());
}

#[tokio::test]
async fn reasoning_in_a_reasoning_field_is_streamed_and_sent_back() {
    // Ollama and vLLM stream a Chat message's thinking as `reasoning`.
    let server = Server::start([
        Reply::events(
            &[
                json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "reasoning": "Think"}}]}),
                json!({"choices": [{"index": 0, "delta": {"content": "", "reasoning": "ing."}}]}),
                json!({"choices": [{"index": 0, "delta": {"content": "Four."}, "finish_reason": "stop"}]}),
            ],
            false,
            true,
        ),
        Reply::json(&chat_text("ok")),
    ])
    .await;
    let model = Chat::new("qwen3").base_url(server.url());
    let seen = Arc::new(Mutex::new(String::new()));
    let sink = {
        let seen = seen.clone();
        DeltaSink::new(move |delta| {
            if let ModelDelta::Reasoning(piece) = delta {
                seen.lock().unwrap().push_str(&piece);
            }
        })
    };
    let turn = model
        .respond_streaming(&[Message::user("2+2?")], &[], &sink)
        .await
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), "Thinking.");
    assert_eq!(turn.text.as_deref(), Some("Four."));
    let conversation = [
        Message::user("2+2?"),
        Message::Assistant(turn),
        Message::user("Sure?"),
    ];
    Chat::new("qwen3")
        .base_url(server.url())
        .stream(false)
        .respond(&conversation, &[])
        .await
        .unwrap();
    let sent = &server.received()[1].body["messages"][1];
    assert_eq!(sent["reasoning"], "Thinking.");
    assert!(sent.get("reasoning_content").is_none(), "{sent}");
}

#[tokio::test]
async fn deepseek_thinking_turns_without_reasoning_still_carry_the_field() {
    let server = Server::start([Reply::json(&chat_text("ok"))]).await;
    let thought = AssistantMessage::tool_calls([ToolCall::new(
        "c1",
        "get_weather",
        json!({"city": "Paris"}),
    )]);
    let with_reasoning = behest::providers::openai::chat::from_messages(&[json!({
        "role": "assistant", "content": "Let me check.", "reasoning_content": "The user asks about Paris."
    })])
    .unwrap();
    let conversation = [
        vec![Message::user("Paris?")],
        with_reasoning,
        vec![Message::user("And Oslo?"), Message::Assistant(thought)],
    ]
    .concat();
    let model = Chat::new("deepseek-reasoner")
        .api_key("k")
        .base_url(server.url())
        .stream(false);
    model.respond(&conversation, &[]).await.unwrap();
    let sent = &server.received()[0].body["messages"];
    assert_eq!(sent[1]["reasoning_content"], "The user asks about Paris.");
    assert_eq!(sent[3]["reasoning_content"], "");
}

#[tokio::test]
async fn no_key_follows_a_redirect() {
    let elsewhere = Server::start([Reply::json(&anthropic_text("stolen"))]).await;
    let target = format!("http://localhost:{}/v1/messages", elsewhere.addr.port());
    let redirecting = Server::start([Reply::Whole {
        status: 307,
        headers: vec![("location", target)],
        body: String::new(),
    }])
    .await;
    for model in [Box::new(
        Messages::new("claude-sonnet-4-5")
            .api_key("sk-ant-secret")
            .base_url(redirecting.url())
            .stream(false),
    ) as Box<dyn Model>]
    {
        let error = model
            .respond_dyn(&[Message::user("hi")], &[])
            .await
            .unwrap_err();
        assert_eq!(error.status, Some(307), "{error:?}");
    }
    let gemini_redirect = Server::start([Reply::Whole {
        status: 308,
        headers: vec![(
            "location",
            format!("http://localhost:{}/v1/x", elsewhere.addr.port()),
        )],
        body: String::new(),
    }])
    .await;
    let error = Gemini::new("gemini-2.5-flash")
        .api_key("AIza-secret")
        .base_url(gemini_redirect.url())
        .stream(false)
        .respond(&[Message::user("hi")], &[])
        .await
        .unwrap_err();
    assert_eq!(error.status, Some(308));
    assert!(
        elsewhere.received().is_empty(),
        "a key reached another host"
    );
}

#[tokio::test]
async fn a_generation_config_field_is_merged_with_the_client_s_own() {
    let server = Server::start([Reply::json(&gemini_text("ok"))]).await;
    let model = Gemini::new("gemini-2.5-flash")
        .api_key("k")
        .base_url(server.url())
        .max_tokens(100)
        .temperature(0.2)
        .body_field(
            "generationConfig",
            json!({"thinkingConfig": {"thinkingBudget": 0}}),
        )
        .stream(false);
    model.respond(&[Message::user("hi")], &[]).await.unwrap();
    let config = &server.received()[0].body["generationConfig"];
    assert_eq!(config["maxOutputTokens"], 100);
    assert_eq!(config["temperature"], 0.2);
    assert_eq!(config["thinkingConfig"]["thinkingBudget"], 0);
}

#[tokio::test]
async fn a_blocked_gemini_prompt_says_why_and_is_not_retried() {
    let blocked = json!({"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
        "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}, "modelVersion": "gemini-2.5-flash"});
    let server = Server::start([
        Reply::json(&blocked),
        Reply::events(std::slice::from_ref(&blocked), false, false),
        Reply::json(&gemini_text("never")),
    ])
    .await;
    for stream in [false, true] {
        let error = Gemini::new("gemini-2.5-flash")
            .api_key("k")
            .base_url(server.url())
            .stream(stream)
            .respond(&[Message::user("hi")], &[])
            .await
            .unwrap_err();
        assert!(
            error
                .message
                .contains("blocked the prompt (blockReason PROHIBITED_CONTENT)"),
            "{error}"
        );
        assert!(!error.retryable, "{error:?}");
    }
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn anthropic_cache_writes_are_counted() {
    let mut answer = anthropic_text("hi");
    answer["usage"] = json!({"input_tokens": 5, "output_tokens": 2,
        "cache_creation_input_tokens": 1200, "cache_read_input_tokens": 300});
    let server = Server::start([Reply::json(&answer)]).await;
    let model = Messages::new("claude-sonnet-4-5")
        .api_key("k")
        .base_url(server.url())
        .stream(false);
    let usage = model
        .respond(&[Message::user("hi")], &[])
        .await
        .unwrap()
        .usage
        .unwrap();
    assert_eq!(
        (
            usage.cache_write_tokens,
            usage.cached_tokens,
            usage.input_tokens
        ),
        (1200, 300, 5)
    );
    // Sums saturate rather than overflow.
    let huge = behest::Usage {
        input_tokens: u64::MAX,
        ..usage
    };
    assert_eq!((huge + usage).input_tokens, u64::MAX);
}

/// Runs `model` on one user message with the weather tool.
async fn run_once(model: impl Model) -> behest::RunOutcome {
    Agent::new(model, weather_runtime())
        .invoke([Message::user("Tell me everything about Paris.")])
        .await
}

/// The reason a run failed with `RunError::Incomplete`.
fn incomplete(outcome: &behest::RunOutcome) -> behest::StopReason {
    match outcome {
        behest::RunOutcome::Failed {
            error: behest::RunError::Incomplete { reason },
            ..
        } => reason.clone(),
        other => panic!("not an incomplete answer: {other:?}"),
    }
}

#[tokio::test]
async fn an_answer_cut_at_the_token_cap_does_not_complete_the_run() {
    let mut anthropic = anthropic_text("Paris is the capital of");
    anthropic["stop_reason"] = json!("max_tokens");
    let mut chat = chat_text("Paris is the capital of");
    chat["choices"][0]["finish_reason"] = json!("length");
    let mut responses = responses_text("Paris is the capital of");
    responses["status"] = json!("incomplete");
    responses["incomplete_details"] = json!({"reason": "max_output_tokens"});
    let gemini = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Paris is the capital of"}]},
        "finishReason": "MAX_TOKENS"}]});
    let server = Server::start([
        Reply::json(&anthropic),
        Reply::json(&chat),
        Reply::json(&responses),
        Reply::json(&gemini),
    ])
    .await;
    let url = server.url();
    let models: [Box<dyn Model>; 4] = [
        Box::new(
            Messages::new("claude-sonnet-4-5")
                .api_key("k")
                .base_url(&url)
                .stream(false),
        ),
        Box::new(
            Chat::new("gpt-4.1")
                .api_key("k")
                .base_url(&url)
                .stream(false),
        ),
        Box::new(
            Responses::new("gpt-4.1")
                .api_key("k")
                .base_url(&url)
                .stream(false),
        ),
        Box::new(
            Gemini::new("gemini-2.5-flash")
                .api_key("k")
                .base_url(&url)
                .stream(false),
        ),
    ];
    let mut reasons = Vec::new();
    for model in models {
        let outcome = Agent::from_arc(model.into(), weather_runtime())
            .invoke([Message::user("Tell me everything about Paris.")])
            .await;
        reasons.push(incomplete(&outcome));
    }
    let raw: Vec<&str> = reasons.iter().map(|reason| reason.raw.as_str()).collect();
    assert_eq!(
        raw,
        [
            "max_tokens",
            "length",
            "incomplete: max_output_tokens",
            "MAX_TOKENS"
        ]
    );
    assert!(reasons
        .iter()
        .all(|reason| reason.kind == behest::StopKind::MaxTokens));
    assert!(reasons[0]
        .to_string()
        .contains("cut at the output token cap"));
    // Without a cap set, Anthropic gets the model's own limit when it
    // streams, and no more than a whole answer can bring in time when not.
    assert_eq!(server.received()[0].body["max_tokens"], 8_192);
    let conversation = [Message::user("hi")];
    let streamed = Messages::new("claude-sonnet-4-5")
        .request_body(&ModelRequest::new(&conversation, &[]))
        .unwrap();
    assert_eq!(streamed["max_tokens"], 64_000);
}

#[tokio::test]
async fn a_streamed_cut_is_read_as_the_whole_one() {
    let events = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Paris is"}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "max_tokens", "stop_sequence": null}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Paris is"}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "content_filter"}]}),
    ];
    let server = Server::start([
        Reply::events(&events, true, false),
        Reply::events(&chunks, false, true),
    ])
    .await;
    let claude = run_once(
        Messages::new("claude-sonnet-4-5")
            .api_key("k")
            .base_url(server.url()),
    )
    .await;
    assert_eq!(incomplete(&claude).kind, behest::StopKind::MaxTokens);
    let gpt = run_once(Chat::new("gpt-4.1").api_key("k").base_url(server.url())).await;
    let reason = incomplete(&gpt);
    assert_eq!(
        (reason.kind, reason.raw.as_str()),
        (behest::StopKind::Filtered, "content_filter")
    );
}

#[tokio::test]
async fn a_paused_turn_is_sent_back_for_the_model_to_go_on() {
    // A turn paused in a server tool's work, as Anthropic sends it.
    let server_use = json!({"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
        "input": {"query": "weather paris"}});
    let server_result = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_01",
        "content": [{"type": "web_search_result", "url": "https://example.com/paris",
            "title": "Paris weather", "encrypted_content": "EqkC…", "page_age": null}]});
    let mut paused = anthropic_text("Searching. ");
    paused["content"] = json!([{"type": "text", "text": "Searching. "}, server_use, server_result]);
    paused["stop_reason"] = json!("pause_turn");
    let server = Server::start([
        Reply::json(&paused),
        Reply::decide(|request: &Received| {
            let last = request.body["messages"].as_array().unwrap().last().unwrap().clone();
            let ends_in_space = last["content"]
                .as_array()
                .unwrap()
                .iter()
                .any(|block| block["text"].as_str().is_some_and(|text| text.ends_with(' ')));
            if ends_in_space {
                Reply::error(400, &json!({"type": "error", "error": {"type": "invalid_request_error",
                    "message": "messages: final assistant content cannot end with trailing whitespace"}}))
            } else {
                Reply::json(&anthropic_text("Done."))
            }
        }),
    ])
    .await;
    let outcome = run_once(
        Messages::new("claude-sonnet-4-5")
            .api_key("k")
            .base_url(server.url())
            .stream(false),
    )
    .await;
    assert_eq!(outcome.text(), Some("Done."), "{outcome:?}");
    let second = &server.received()[1].body["messages"];
    assert_eq!(second.as_array().unwrap().len(), 2);
    let blocks = second[1]["content"].as_array().unwrap();
    assert!(blocks.contains(&server_use), "{blocks:?}");
    assert!(blocks.contains(&server_result), "{blocks:?}");
    assert!(
        blocks.contains(&json!({"type": "text", "text": "Searching."})),
        "{blocks:?}"
    );
}

#[tokio::test]
async fn a_finish_reason_behest_does_not_know_leaves_the_answer_standing() {
    let mut answer = chat_text("Paris is lovely.");
    answer["choices"][0]["finish_reason"] = json!("eos");
    let server = Server::start([Reply::json(&answer)]).await;
    let outcome = run_once(
        Chat::new("together-model")
            .base_url(server.url())
            .stream(false),
    )
    .await;
    assert_eq!(outcome.text(), Some("Paris is lovely."), "{outcome:?}");
}

#[tokio::test]
async fn refusals_are_the_turn_s_text_and_its_stop_reason() {
    let chat = json!({"choices": [{"index": 0, "finish_reason": "stop", "message": {
        "role": "assistant", "content": null, "refusal": "I'm sorry, I can't help with that."}}]});
    let responses = json!({"id": "resp_1", "object": "response", "status": "completed", "output": [
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
         "content": [{"type": "refusal", "refusal": "I'm sorry, I can't help with that."}]}]});
    let streamed = [
        json!({"type": "response.created", "response": {"id": "resp_2", "status": "in_progress", "output": []}}),
        json!({"type": "response.refusal.delta", "item_id": "msg_2", "output_index": 0, "content_index": 0, "delta": "I'm sorry"}),
        json!({"type": "response.refusal.delta", "item_id": "msg_2", "output_index": 0, "content_index": 0, "delta": ", no."}),
        json!({"type": "response.refusal.done", "item_id": "msg_2", "output_index": 0, "content_index": 0, "refusal": "I'm sorry, no."}),
        json!({"type": "response.completed", "response": {"id": "resp_2", "status": "completed", "output": []}}),
    ];
    let server = Server::start([
        Reply::json(&chat),
        Reply::json(&responses),
        Reply::events(&streamed, true, false),
    ])
    .await;
    let url = server.url();
    let chat = Chat::new("gpt-4.1")
        .api_key("k")
        .base_url(&url)
        .stream(false);
    let turn = chat.respond(&[Message::user("x")], &[]).await.unwrap();
    assert_eq!(
        turn.text.as_deref(),
        Some("I'm sorry, I can't help with that.")
    );
    assert_eq!(turn.stop.unwrap().kind, behest::StopKind::Refused);
    let outcome = run_once(
        Responses::new("gpt-4.1")
            .api_key("k")
            .base_url(&url)
            .stream(false),
    )
    .await;
    assert_eq!(incomplete(&outcome).kind, behest::StopKind::Refused);
    let streamed = Responses::new("gpt-4.1").api_key("k").base_url(&url);
    let turn = streamed.respond(&[Message::user("x")], &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("I'm sorry, no."));
    assert_eq!(turn.stop.unwrap().kind, behest::StopKind::Refused);
}

#[tokio::test]
async fn a_stream_cut_short_is_asked_again_and_observers_drop_what_they_showed() {
    let chunks = [
        json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Sunny "}}]}),
        json!({"choices": [{"index": 0, "delta": {"content": "in Paris."}}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}),
    ];
    let whole = Reply::events(&chunks, false, true);
    let first_piece = whole.text().find("in Paris").unwrap();
    let overloaded = [
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sun"}}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ];
    let anthropic_whole = [
        json!({"type": "message_start", "message": {"id": "msg_2", "type": "message", "role": "assistant",
            "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Sunny."}}),
        json!({"type": "content_block_stop", "index": 0}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 3}}),
        json!({"type": "message_stop"}),
    ];
    // The first piece whole, then an event garbled in transit.
    let garbled = format!("data: {}\n\ndata: {{\"choices\": [\n\n", chunks[0]);
    let server = Server::start([
        Reply::events(&chunks, false, true).broken_at(first_piece),
        Reply::events(&chunks, false, true).cut_at(first_piece),
        Reply::sse(&garbled),
        whole,
        Reply::events(&overloaded, true, false),
        Reply::events(&anthropic_whole, true, false),
    ])
    .await;
    let mut policy = RetryPolicy::default();
    policy.initial_backoff = Duration::from_millis(5);
    policy.max_retries = 3;
    let shown = Arc::new(Mutex::new(Vec::new()));
    let sink = {
        let shown = shown.clone();
        DeltaSink::new(move |delta| shown.lock().unwrap().push(delta))
    };
    let hi = [Message::user("Weather?")];
    let chat = Chat::new("gpt-4.1")
        .api_key("k")
        .base_url(server.url())
        .retry(policy.clone());
    let turn = chat.respond_streaming(&hi, &[], &sink).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Sunny in Paris."));
    let text = |deltas: &[ModelDelta]| -> Vec<String> {
        deltas
            .iter()
            .map(|delta| match delta {
                ModelDelta::Text(text) => text.clone(),
                ModelDelta::Restart => "<restart>".to_owned(),
                ModelDelta::Retry { attempt, .. } => format!("<retry {attempt}>"),
                other => format!("{other:?}"),
            })
            .collect()
    };
    assert_eq!(
        text(&shown.lock().unwrap()),
        [
            "Sunny ",
            "<restart>",
            "<retry 1>",
            "Sunny ",
            "<restart>",
            "<retry 2>",
            "Sunny ",
            "<restart>",
            "<retry 3>",
            "Sunny ",
            "in Paris."
        ]
    );
    shown.lock().unwrap().clear();
    let claude = Messages::new("claude-sonnet-4-5")
        .api_key("k")
        .base_url(server.url())
        .retry(policy);
    let turn = claude.respond_streaming(&hi, &[], &sink).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Sunny."));
    assert_eq!(
        text(&shown.lock().unwrap()),
        ["Sun", "<restart>", "<retry 1>", "Sunny."]
    );
    assert_eq!(server.received().len(), 6);
    // Out of retries, the cut is the error, and the stream is not taken
    // as whole.
    let server = Server::start([Reply::events(&chunks, false, true).cut_at(first_piece)]).await;
    let once = Chat::new("gpt-4.1")
        .api_key("k")
        .base_url(server.url())
        .retry(RetryPolicy::none());
    let error = once.respond(&hi, &[]).await.unwrap_err();
    assert!(
        error.message.contains("ended before the turn finished"),
        "{error}"
    );
}

#[tokio::test]
async fn settings_go_under_each_provider_s_names_and_runs_override_them() {
    let server = Server::start([]).await;
    let settings = behest::ModelSettings::new()
        .temperature(0.3)
        .top_p(0.9)
        .max_tokens(500)
        .stop(["END"])
        .seed(7)
        .reasoning_effort(behest::ReasoningEffort::Low)
        .thinking_budget(1024);
    let url = server.url();
    let conversation = [Message::user("hi")];
    let request = ModelRequest::new(&conversation, &[]);
    let body = |model: &dyn Fn(&ModelRequest<'_>) -> Value| model(&request);
    let chat = Chat::new("o4-mini").settings(settings.clone());
    let chat = body(&|request| chat.request_body(request).unwrap());
    assert_eq!(
        (
            &chat["temperature"],
            &chat["top_p"],
            &chat["max_completion_tokens"],
            &chat["stop"],
            &chat["seed"],
            &chat["reasoning_effort"]
        ),
        (
            &json!(0.3),
            &json!(0.9),
            &json!(500),
            &json!(["END"]),
            &json!(7),
            &json!("low")
        )
    );
    assert!(chat.get("thinking").is_none());
    let responses = Responses::new("o4-mini").settings(settings.clone());
    let responses = body(&|request| responses.request_body(request).unwrap());
    assert_eq!(responses["reasoning"], json!({"effort": "low"}));
    assert_eq!(responses["max_output_tokens"], 500);
    assert!(responses.get("stop").is_none() && responses.get("seed").is_none());
    let claude = Messages::new("claude-sonnet-4-5").settings(settings.clone());
    let claude = body(&|request| claude.request_body(request).unwrap());
    assert_eq!(claude["stop_sequences"], json!(["END"]));
    assert_eq!(
        claude["thinking"],
        json!({"type": "enabled", "budget_tokens": 1024})
    );
    assert_eq!(claude["max_tokens"], 500);
    assert!(claude.get("seed").is_none() && claude.get("reasoning_effort").is_none());
    let gemini = Gemini::new("gemini-2.5-flash").settings(settings.clone());
    let gemini = body(&|request| gemini.request_body(request).unwrap());
    assert_eq!(
        gemini["generationConfig"],
        json!({"temperature": 0.3, "topP": 0.9, "maxOutputTokens": 500, "stopSequences": ["END"],
            "seed": 7, "thinkingConfig": {"thinkingBudget": 1024}})
    );
    // A run's settings go over the client's, per setting.
    server.push(Reply::json(&chat_text("ok")));
    let model = Chat::new("gpt-4.1")
        .api_key("k")
        .base_url(&url)
        .temperature(0.1)
        .seed(3)
        .stream(false);
    let agent = Agent::new(model, weather_runtime())
        .model_settings(behest::ModelSettings::new().temperature(0.9));
    assert_eq!(agent.invoke([Message::user("hi")]).await.text(), Some("ok"));
    let sent = &server.received()[0].body;
    assert_eq!(
        (&sent["temperature"], &sent["seed"]),
        (&json!(0.9), &json!(3))
    );
}

#[tokio::test]
async fn a_client_of_the_user_s_own_carries_its_settings() {
    let server = Server::start([Reply::json(&chat_text("ok"))]).await;
    // reqwest's rustls needs a crypto provider installed before a client
    // is built, as behest's own does with ring.
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        "x-proxy-token",
        reqwest::header::HeaderValue::from_static("p-1"),
    );
    let own = reqwest::Client::builder()
        .default_headers(headers)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let model = Chat::new("llama3.2")
        .base_url(server.url())
        .http_client(own)
        .stream(false);
    model.respond(&[Message::user("hi")], &[]).await.unwrap();
    assert_eq!(server.received()[0].headers["x-proxy-token"], "p-1");
}

#[tokio::test]
async fn prompt_caching_marks_the_tools_the_system_and_the_conversation() {
    let server = Server::start([Reply::decide(|request: &Received| {
        // Anthropic allows four breakpoints.
        let marks = request.body.to_string().matches("cache_control").count();
        if marks > 4 {
            Reply::error(
                400,
                &json!({"type": "error", "error": {"type": "invalid_request_error",
                "message": "A maximum of 4 blocks with cache_control may be provided. Found 5."}}),
            )
        } else {
            Reply::json(&anthropic_text("ok"))
        }
    })])
    .await;
    let tools: Vec<behest::ToolSpec> = ToolRegistry::new()
        .with(GetWeather)
        .unwrap()
        .specs()
        .cloned()
        .collect();
    let model = Messages::new("claude-sonnet-4-5")
        .api_key("k")
        .base_url(server.url())
        .prompt_caching(true)
        .stream(false);
    let conversation = [
        Message::system("Be brief."),
        Message::user("Weather in Paris?"),
    ];
    model.respond(&conversation, &tools).await.unwrap();
    let body = &server.received()[0].body;
    let ephemeral = json!({"type": "ephemeral"});
    assert_eq!(body["tools"][0]["cache_control"], ephemeral);
    assert_eq!(
        body["system"][0],
        json!({"type": "text", "text": "Be brief.", "cache_control": ephemeral})
    );
    assert_eq!(
        body["messages"][0]["content"][0]["cache_control"],
        ephemeral
    );
}

#[test]
fn images_and_documents_go_as_each_provider_takes_them_and_come_back() {
    use behest::conversation::ContentPart;
    use behest::providers::{anthropic, gemini, openai};
    let png = "iVBORw0KGgo=";
    let pdf = "JVBERi0xLjc=";
    let conversation = vec![Message::user_parts([
        ContentPart::text("What do these say?"),
        ContentPart::image_url("https://example.com/receipt.jpg"),
        ContentPart::image_base64("image/png", png),
        ContentPart::document_base64("application/pdf", pdf),
    ])];
    let chat = openai::chat::messages(&conversation);
    assert_eq!(
        chat[0]["content"],
        json!([
            {"type": "text", "text": "What do these say?"},
            {"type": "image_url", "image_url": {"url": "https://example.com/receipt.jpg"}},
            {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}},
            {"type": "file", "file": {"filename": "document", "file_data": format!("data:application/pdf;base64,{pdf}")}},
        ])
    );
    let responses = openai::responses::messages(&conversation);
    assert_eq!(
        responses[0]["content"][1],
        json!({"type": "input_image", "image_url": "https://example.com/receipt.jpg", "detail": "auto"})
    );
    assert_eq!(responses[0]["content"][3]["type"], "input_file");
    let (_, claude) = anthropic::messages(&conversation);
    assert_eq!(
        claude[0]["content"][1],
        json!({"type": "image", "source": {"type": "url", "url": "https://example.com/receipt.jpg"}})
    );
    assert_eq!(
        claude[0]["content"][3],
        json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": pdf}})
    );
    let (_, contents) = gemini::messages(&conversation);
    assert_eq!(
        contents[0]["parts"][1],
        json!({"fileData": {"mimeType": "image/jpeg", "fileUri": "https://example.com/receipt.jpg"}})
    );
    assert_eq!(
        contents[0]["parts"][2],
        json!({"inlineData": {"mimeType": "image/png", "data": png}})
    );
    // Each format reads its own mapping back to the same parts (Gemini
    // learns the URL's media type from the mapping).
    assert_eq!(openai::chat::from_messages(&chat).unwrap(), conversation);
    assert_eq!(
        openai::responses::from_messages(&responses).unwrap(),
        conversation
    );
    assert_eq!(
        anthropic::from_messages(None, &claude).unwrap(),
        conversation
    );
    let Message::UserParts { parts } = &gemini::from_messages(None, &contents).unwrap()[0] else {
        panic!("parts expected");
    };
    assert_eq!(parts.len(), 4);
    assert_eq!(
        parts[3],
        ContentPart::document_base64("application/pdf", pdf)
    );
}

/// Draw a chart of the week's weather.
#[tool]
fn weather_chart(city: String) -> behest::ToolOutput {
    behest::ToolOutput::text(format!("The chart of {city}'s week.")).with_image(
        behest::tool::MediaSource::base64("image/png", "iVBORw0KGgo="),
    )
}

#[tokio::test]
async fn a_tool_s_image_reaches_the_providers_that_take_one() {
    use behest::providers::{anthropic, gemini, mcp, openai};
    let (result, conversation) = one_call(WeatherChart, json!({"city": "Paris"}), "Chart?").await;
    let image = behest::tool::MediaSource::base64("image/png", "iVBORw0KGgo=");
    assert_eq!(result.images, std::slice::from_ref(&image));
    let (_, claude) = anthropic::messages(&conversation);
    assert_eq!(
        claude[2]["content"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
    let responses = openai::responses::messages(&conversation);
    assert_eq!(
        responses[2]["output"][1],
        json!({"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"})
    );
    let (_, contents) = gemini::messages(&conversation);
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["parts"][0],
        json!({"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}})
    );
    // Chat's tool messages take text only.
    let chat = openai::chat::messages(&conversation);
    assert_eq!(chat[2]["content"], "The chart of Paris's week.");
    // Each format reads the image back.
    for back in [
        anthropic::from_messages(None, &claude).unwrap(),
        openai::responses::from_messages(&responses).unwrap(),
        gemini::from_messages(None, &contents).unwrap(),
    ] {
        let Some(Message::ToolResult(read)) = back.get(2) else {
            panic!("{back:?}")
        };
        assert_eq!(read.images, std::slice::from_ref(&image));
    }
    // MCP carries it as image content.
    let mcp_result = mcp::result(&behest::ToolCallResult {
        call_id: "c1".into(),
        tool_name: "weather_chart".into(),
        outcome: Ok(WeatherChart
            .execute(json!({"city": "Paris"}))
            .await
            .unwrap()),
    });
    assert_eq!(
        mcp_result["content"][1],
        json!({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
    );
}

/// Fetch an invoice as a PDF.
#[tool]
fn invoice(number: u32) -> behest::ToolOutput {
    behest::ToolOutput::text(format!("Invoice {number}, attached.")).with_attachment(
        behest::Attachment::blob_resource(
            format!("file:///invoices/{number}.pdf"),
            "application/pdf",
            "JVBERi0xLjc=",
        ),
    )
}

/// A PDF a tool returns (an embedded resource) reaches the providers that
/// take documents in a tool's result as a document, and each reads it back;
/// Chat, which takes text only, gets the line naming it.
#[tokio::test]
async fn a_tool_s_pdf_reaches_the_providers_that_take_documents() {
    use behest::providers::{anthropic, gemini, openai};
    let (result, conversation) = one_call(Invoice, json!({"number": 7}), "Invoice 7?").await;
    let pdf = behest::tool::MediaSource::base64("application/pdf", "JVBERi0xLjc=");
    assert_eq!(result.documents, std::slice::from_ref(&pdf));
    let (_, claude) = anthropic::messages(&conversation);
    assert_eq!(
        claude[2]["content"][0]["content"][1],
        json!({"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjc="}})
    );
    let responses = openai::responses::messages(&conversation);
    assert_eq!(responses[2]["output"][1]["type"], "input_file");
    let (_, contents) = gemini::messages(&conversation);
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["parts"][0],
        json!({"inlineData": {"mimeType": "application/pdf", "data": "JVBERi0xLjc="}})
    );
    let chat = openai::chat::messages(&conversation);
    assert_eq!(
        chat[2]["content"],
        "Invoice 7, attached.\n[resource: file:///invoices/7.pdf (application/pdf)]"
    );
    for back in [
        anthropic::from_messages(None, &claude).unwrap(),
        openai::responses::from_messages(&responses).unwrap(),
        gemini::from_messages(None, &contents).unwrap(),
    ] {
        let Some(Message::ToolResult(read)) = back.get(2) else {
            panic!("{back:?}")
        };
        assert_eq!(read.documents, std::slice::from_ref(&pdf), "{back:?}");
    }
}

#[tokio::test]
async fn the_service_s_word_on_retrying_is_taken() {
    // OpenAI and Anthropic send `x-should-retry`: a 409 they say not to
    // retry is not, a 400 they say to retry is.
    let conflict = json!({"error": {"message": "Conflict.", "type": "invalid_request_error"}});
    let server = Server::start([
        Reply::error(409, &conflict).header("x-should-retry", "false"),
        Reply::error(400, &conflict).header("x-should-retry", "true"),
        Reply::json(&chat_text("ok")),
    ])
    .await;
    let mut policy = RetryPolicy::default();
    policy.initial_backoff = Duration::from_millis(5);
    let model = Chat::new("gpt-4.1")
        .api_key("k")
        .base_url(server.url())
        .retry(policy)
        .stream(false);
    let error = model
        .respond(&[Message::user("hi")], &[])
        .await
        .unwrap_err();
    assert_eq!((error.status, error.retryable), (Some(409), false));
    let answer = model.respond(&[Message::user("hi")], &[]).await.unwrap();
    assert_eq!(answer.text.as_deref(), Some("ok"));
    assert_eq!(server.received().len(), 3);
}

/// A run in which the model calls `tool` once with `arguments`: the
/// call's result message, and the conversation up to it (the question,
/// the call, the result).
async fn one_call(
    tool: impl behest::Tool,
    arguments: Value,
    question: &str,
) -> (ToolResultMessage, Vec<Message>) {
    let name = tool.name().to_owned();
    let call = ScriptedTurn::tool_calls([ToolCall::new("c1", name, arguments)]);
    let runtime = ToolRuntime::new(ToolRegistry::new().with(tool).unwrap());
    let outcome = Agent::new(
        ScriptedModel::new([call, ScriptedTurn::text("Here.")]),
        runtime,
    )
    .invoke([Message::user(question)])
    .await;
    let Some(Message::ToolResult(result)) = outcome.transcript().get(2) else {
        panic!("{outcome:?}");
    };
    (result.clone(), outcome.transcript()[..3].to_vec())
}

/// A server of the OpenAI API that cannot stream a turn with tools answers
/// 200 and closes the stream at once (llama.cpp's server in some
/// versions): the run's error says what the server did and the setting
/// that avoids it, and the request is not asked again for the same.
#[tokio::test]
async fn a_server_that_cannot_stream_tool_calls_is_named_with_the_setting_that_avoids_it() {
    let server = Server::start([
        Reply::sse(""),
        Reply::json(&json!({
            "id": "chatcmpl-1", "object": "chat.completion", "model": "qwen2.5-0.5b",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": "Sunny in Paris."}}],
        })),
    ])
    .await;
    let streaming = Chat::new("qwen2.5-0.5b").base_url(server.url());
    let outcome = Agent::new(streaming, weather_runtime())
        .invoke([Message::user("Weather in Paris?")])
        .await;
    let error = match &outcome {
        behest::RunOutcome::Failed { error, .. } => error.to_string(),
        other => panic!("the run did not fail: {other:?}"),
    };
    assert!(error.contains("without a single byte"), "{error}");
    assert!(error.contains("cannot stream a turn with tools"), "{error}");
    assert!(error.contains(".stream(false)"), "{error}");
    assert_eq!(server.received().len(), 1, "not asked again");
    // With the setting the error names, the same server answers.
    let whole = Chat::new("qwen2.5-0.5b")
        .base_url(server.url())
        .stream(false);
    let outcome = Agent::new(whole, weather_runtime())
        .invoke([Message::user("Weather in Paris?")])
        .await;
    assert_eq!(outcome.text(), Some("Sunny in Paris."), "{outcome:?}");

    // A stream with something in it (a comment, the end marker) but no
    // turn is a stream cut short, which may be asked again: not this.
    let server = Server::start([Reply::sse(": OPENROUTER PROCESSING\n\ndata: [DONE]\n\n")]).await;
    let once = Chat::new("m")
        .base_url(server.url())
        .retry(RetryPolicy::none());
    let error = once.respond(&[Message::user("Hi")], &[]).await.unwrap_err();
    assert!(error.message.contains("ended before"), "{error}");
    assert!(error.retryable);
}

/// OpenAI's prompt cache: the key and the retention go on every request of
/// both APIs, and the cached tokens the answer reports are read apart.
#[tokio::test]
async fn openai_prompt_caching_is_asked_and_its_tokens_read() {
    use behest::models::openai::CacheRetention;

    let usage = json!({"prompt_tokens": 2048, "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": 1920}});
    let server = Server::start([
        Reply::json(&json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "Hi."}}], "usage": usage})),
        Reply::json(&json!({"id": "resp_1", "object": "response", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Hi.", "annotations": []}]}],
            "usage": {"input_tokens": 2048, "output_tokens": 5,
                "input_tokens_details": {"cached_tokens": 1920}}})),
    ])
    .await;
    let hi = [Message::user("Hi")];
    let chat = Chat::new("gpt-4.1-mini")
        .base_url(server.url())
        .stream(false)
        .prompt_cache_key("conversation-7")
        .prompt_cache_retention(CacheRetention::Day);
    let turn = chat.respond(&hi, &[]).await.unwrap();
    assert_eq!(turn.usage.unwrap().cached_tokens, 1920);
    let responses = Responses::new("gpt-5-mini")
        .base_url(server.url())
        .stream(false)
        .prompt_cache_key("conversation-7")
        .prompt_cache_retention(CacheRetention::InMemory);
    let turn = responses.respond(&hi, &[]).await.unwrap();
    assert_eq!(turn.usage.unwrap().cached_tokens, 1920);
    let received = server.received();
    assert_eq!(received[0].body["prompt_cache_key"], "conversation-7");
    assert_eq!(received[0].body["prompt_cache_retention"], "24h");
    assert_eq!(received[1].body["prompt_cache_key"], "conversation-7");
    assert_eq!(received[1].body["prompt_cache_retention"], "in_memory");
}

/// Gemini's explicit cache: created from a conversation's first messages
/// and the tools, used by requests that begin with them (which then leave
/// them out), its time changed, and deleted; a prompt too small for a
/// cache is Gemini's error of its kind.
#[tokio::test]
async fn a_gemini_cache_is_made_used_kept_longer_and_deleted() {
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Chapter 2."}]},
            "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 4300, "cachedContentTokenCount": 4213,
            "candidatesTokenCount": 5, "totalTokenCount": 4305}});
    let server = Server::start([
        Reply::json(&json!({"name": "cachedContents/abc123", "model": "models/gemini-2.5-flash",
            "createTime": "2026-12-06T15:00:00Z", "updateTime": "2026-12-06T15:00:00Z",
            "expireTime": "2026-12-06T15:10:00Z", "usageMetadata": {"totalTokenCount": 4213}})),
        Reply::json(&answer),
        Reply::json(&answer),
        Reply::json(&answer),
        Reply::json(&json!({"name": "cachedContents/abc123", "expireTime": "2026-12-06T15:30:00Z"})),
        Reply::json(&json!({})),
        Reply::error(400, &json!({"error": {"code": 400,
            "message": "Cached content is too small. total_token_count=12, min_total_token_count=1024",
            "status": "INVALID_ARGUMENT"}})),
    ])
    .await;
    let gemini = Gemini::new("gemini-2.5-flash")
        .api_key("g-key")
        .base_url(server.url())
        .stream(false);
    let prefix = [
        Message::system("Answer from the manual."),
        Message::user("THE MANUAL: …"),
    ];
    let tools = [GetWeather.spec()];
    let cache = gemini
        .create_cache(&prefix, &tools, Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(cache.name, "cachedContents/abc123");
    assert_eq!(cache.tokens, Some(4213));

    let cached = gemini.clone().cached_content(&cache);
    let mut asked = prefix.to_vec();
    asked.push(Message::user("Which chapter is on the weather?"));
    let turn = cached.respond(&asked, &tools).await.unwrap();
    assert_eq!(turn.usage.unwrap().cached_tokens, 4213);
    // A conversation that does not begin with what the cache holds goes
    // whole, without it.
    cached
        .respond(&[Message::user("Something else")], &tools)
        .await
        .unwrap();
    // Nor does one that offers other tools: Gemini takes no tools beside
    // a cache.
    cached.respond(&asked, &[]).await.unwrap();
    let longer = gemini
        .update_cache_ttl(&cache, Duration::from_secs(1800))
        .await
        .unwrap();
    assert_eq!(longer.expire_time.as_deref(), Some("2026-12-06T15:30:00Z"));
    gemini.delete_cache(&cache).await.unwrap();
    let small = gemini
        .create_cache(&[Message::user("tiny")], &[], Duration::from_secs(60))
        .await
        .unwrap_err();
    assert_eq!(small.kind.as_deref(), Some("INVALID_ARGUMENT"));
    assert!(small.message.contains("too small"), "{small}");

    let received = server.received();
    let made = &received[0];
    assert_eq!(
        (made.method.as_str(), made.path.as_str()),
        ("POST", "/v1/cachedContents")
    );
    assert_eq!(made.headers["x-goog-api-key"], "g-key");
    assert_eq!(made.body["model"], "models/gemini-2.5-flash");
    assert_eq!(made.body["ttl"], "600s");
    assert_eq!(
        made.body["systemInstruction"]["parts"][0]["text"],
        "Answer from the manual."
    );
    assert_eq!(made.body["contents"].as_array().unwrap().len(), 1);
    assert!(made.body["tools"].is_array());
    assert!(made.body.get("generationConfig").is_none());

    let used = &received[1].body;
    assert_eq!(used["cachedContent"], "cachedContents/abc123");
    assert_eq!(used["contents"].as_array().unwrap().len(), 1);
    assert_eq!(
        used["contents"][0]["parts"][0]["text"],
        "Which chapter is on the weather?"
    );
    for left_out in ["systemInstruction", "tools", "toolConfig"] {
        assert!(
            used.get(left_out).is_none(),
            "{left_out} sent beside the cache"
        );
    }
    let whole = &received[2].body;
    assert!(whole.get("cachedContent").is_none());
    assert!(whole["tools"].is_array());
    let other_tools = &received[3].body;
    assert!(other_tools.get("cachedContent").is_none());
    assert_eq!(other_tools["contents"].as_array().unwrap().len(), 2);
    assert!(other_tools["systemInstruction"].is_object());

    assert_eq!(received[4].method, "PATCH");
    assert_eq!(received[4].path, "/v1/cachedContents/abc123?updateMask=ttl");
    assert_eq!(received[4].body, json!({"ttl": "1800s"}));
    assert_eq!(received[5].method, "DELETE");
    assert_eq!(received[5].path, "/v1/cachedContents/abc123");
}

/// A plan, as a typed answer.
#[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
struct Trip {
    /// Where to.
    city: String,
    /// For how many days.
    days: u32,
}

/// Anthropic's structured outputs: a typed run asks for the answer's
/// schema in `output_config.format` (its objects closed) instead of the
/// `final_answer` tool, reads the answer from the text, and a strict tool
/// is declared `strict: true`.
#[tokio::test]
async fn anthropic_structured_output_and_strict_tools_go_on_the_wire() {
    let server = Server::start([Reply::json(&json!({
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "{\"city\": \"Lisbon\", \"days\": 3}"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 120, "output_tokens": 14}
    }))])
    .await;
    let claude = Messages::new("claude-sonnet-4-5")
        .api_key("k")
        .base_url(server.url())
        .structured_output(true)
        .stream(false);
    let agent = Agent::new(claude, weather_runtime());
    let trip: Trip = agent
        .output([Message::user("Plan three days in Lisbon.")])
        .await
        .unwrap();
    assert_eq!(
        trip,
        Trip {
            city: "Lisbon".into(),
            days: 3
        }
    );
    let body = &server.received()[0].body;
    let format = &body["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["additionalProperties"], false);
    assert_eq!(format["schema"]["required"], json!(["city", "days"]));
    let tools: Vec<&str> = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| tool["name"].as_str().unwrap())
        .collect();
    assert!(!tools.contains(&"final_answer"), "{tools:?}");

    // Strict tools, all of them by the export options.
    let export =
        behest::providers::ExportOptions::default().strict(behest::providers::Strictness::All);
    let declared = behest::providers::export_specs(
        &[&GetWeather.spec()],
        &|_| true,
        behest::providers::WireFormat::Anthropic,
        &export,
    )
    .unwrap();
    assert_eq!(declared.tools[0]["strict"], true);
    assert_eq!(
        declared.tools[0]["input_schema"]["additionalProperties"],
        false
    );
}

/// Look up a booking, strictly.
#[tool(strict)]
fn find_booking(
    /// The booking's reference.
    reference: String,
) -> String {
    format!("booking {reference}")
}

/// A strict tool is declared strict only to an Anthropic model that takes
/// strict tools; another gets it as it is (it would refuse the request).
#[tokio::test]
async fn anthropic_strict_tools_go_only_to_models_that_take_them() {
    let answer = json!({"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude", "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 5, "output_tokens": 1}});
    let server = Server::start([Reply::json(&answer), Reply::json(&answer)]).await;
    let runtime = || ToolRuntime::new(ToolRegistry::new().with(FindBooking).unwrap());
    for claude in [
        Messages::new("claude-sonnet-4-20250514"),
        Messages::new("claude-sonnet-4-5").structured_output(true),
    ] {
        let claude = claude.api_key("k").base_url(server.url()).stream(false);
        let outcome = Agent::new(claude, runtime())
            .invoke([Message::user("Find booking X1")])
            .await;
        assert_eq!(outcome.text(), Some("ok"), "{outcome:?}");
    }
    let received = server.received();
    let declared = |at: usize| received[at].body["tools"][0].clone();
    assert_eq!(declared(0)["name"], "find_booking");
    assert!(declared(0).get("strict").is_none(), "{}", declared(0));
    assert_eq!(declared(1)["strict"], true);
    assert_eq!(declared(1)["input_schema"]["additionalProperties"], false);
}

//! Runs streamed to chat front ends, read by the front ends' own packages
//! under Node: the AI SDK's chat (`ai`) and AG-UI's client
//! (`@ag-ui/client`, its events checked by `@ag-ui/core`'s schemas).
//! `.ci/test-all` installs them (`BEHEST_UI_PACKAGES`); without them those
//! tests say "skipped". Bad requests are checked without Node.
#![cfg(feature = "ui")]

#[path = "support/browser.rs"]
mod browser;

use std::net::SocketAddr;
use std::sync::Arc;

use browser::{chromium, example, packages, run_script, start_example};

use behest::prelude::*;
use behest::run::{MemoryStore, ScriptedTurn};
use behest::ui::ChatUi;
use behest::ModelDelta;
use serde_json::{json, Value};

/// Get the current weather for a city.
#[tool(read_only)]
fn get_weather(city: String) -> String {
    format!("Sunny in {city}, 21 °C.")
}

/// Refund an order.
#[tool]
fn refund(order: u32) -> String {
    format!("order {order} refunded")
}

/// The scripted chat both front ends have: a question answered with a
/// tool, a refund that waits for a person, and what the model says after
/// the person's answer (`after_refund`).
fn agent(after_refund: ScriptedTurn) -> Agent {
    let model = ScriptedModel::new([
        ScriptedTurn::reply(AssistantMessage::text("Let me look.").with_tool_calls([
            ToolCall::new("w1", "get_weather", json!({ "city": "Paris" })),
        ])),
        ScriptedTurn::text("It is sunny in Paris, 21 °C.").expect_ok("w1", "Sunny"),
        ScriptedTurn::tool_calls([ToolCall::new("r1", "refund", json!({ "order": 42 }))]),
        after_refund,
    ])
    .with_streaming(5);
    let tools = ToolRegistry::new()
        .with(GetWeather)
        .unwrap()
        .with(Refund)
        .unwrap();
    Agent::new(model, ToolRuntime::new(tools)).require_approval("refund")
}

async fn serve(ui: &ChatUi) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let app = ui.router();
    tokio::spawn(async move { axum::serve(listener, app).await });
    address
}

fn types(chunks: &[Value]) -> Vec<&str> {
    chunks
        .iter()
        .filter_map(|chunk| chunk["type"].as_str())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ai_sdk_chat_reads_the_run_and_its_approval() {
    let (node, dir) = match packages() {
        Ok(found) => found,
        Err(skipped) => return eprintln!("{skipped}"),
    };
    let after = ScriptedTurn::text("Refunded order 42.").expect_ok("r1", "refunded");
    let ui = ChatUi::new(agent(after));
    let address = serve(&ui).await;
    let out = run_script(
        &node,
        &dir,
        "ai_sdk_chat.mjs",
        &[&format!("http://{address}/api/chat")],
    )
    .await;

    assert_eq!(out["errors"], json!([]), "{out:#}");
    assert_eq!(out["status"], "ready");
    assert!(out["headers"].as_array().unwrap().iter().all(|h| h == "v1"));
    let chunks = out["chunks"].as_array().unwrap();
    assert!(
        chunks.iter().all(|chunk| chunk.get("invalid").is_none()),
        "a chunk the package's schema refused: {chunks:#?}"
    );
    let kinds = types(chunks);
    for kind in [
        "start",
        "start-step",
        "text-start",
        "text-delta",
        "text-end",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-available",
        "tool-output-available",
        "tool-approval-request",
        "finish-step",
        "finish",
    ] {
        assert!(kinds.contains(&kind), "no `{kind}` chunk in {kinds:?}");
    }

    // The messages the package rebuilt: user, answer, user, answer.
    let messages = out["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "user", "assistant"]);
    let first = &messages[1]["parts"];
    let text: String = first
        .as_array()
        .unwrap()
        .iter()
        .filter(|part| part["type"] == "text")
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Let me look.It is sunny in Paris, 21 °C.");
    let weather = first
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part["type"] == "tool-get_weather")
        .expect("the weather call shows");
    assert_eq!(weather["state"], "output-available");
    assert_eq!(weather["input"], json!({ "city": "Paris" }));
    assert_eq!(weather["output"], "Sunny in Paris, 21 °C.");

    // The refund asked, was approved in the same message, and ran.
    assert_eq!(out["approvalAsked"]["state"], "approval-requested");
    let refund = messages[3]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|part| part["type"] == "tool-refund")
        .unwrap();
    assert_eq!(refund["state"], "output-available", "{refund:#}");
    assert_eq!(refund["approval"]["approved"], true);
    assert_eq!(refund["output"], "order 42 refunded");
    // The answer is the text it showed: no part beside it repeats it.
    assert!(!kinds.contains(&"data-output"), "{kinds:?}");
    let last_text = messages[3]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|part| part["type"] == "text")
        .unwrap();
    assert_eq!(last_text["text"], "Refunded order 42.");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_agents_approval_is_answered_from_the_ai_sdk_chat() {
    let (node, dir) = match packages() {
        Ok(found) => found,
        Err(skipped) => return eprintln!("{skipped}"),
    };
    let billing = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("r1", "refund", json!({ "order": 42 }))]),
            ScriptedTurn::text("Refunded order 42.").expect_ok("r1", "refunded"),
        ]),
        ToolRuntime::new(ToolRegistry::new().with(Refund).unwrap()),
    )
    .require_approval("refund");
    let lead = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new(
                "c3",
                "billing",
                json!({ "input": "refund order 42" }),
            )]),
            ScriptedTurn::text("Billing refunded order 42.").expect_ok("c3", "Refunded"),
        ]),
        ToolRuntime::new(
            ToolRegistry::new()
                .with(billing.as_tool("billing", "Refunds orders."))
                .unwrap(),
        ),
    );
    let address = serve(&ChatUi::new(lead)).await;
    let api = format!("http://{address}/api/chat");
    let out = run_script(&node, &dir, "ai_sdk_chat.mjs", &[&api, "nested"]).await;
    assert_eq!(out["errors"], json!([]), "{out:#}");
    let chunks = out["chunks"].as_array().unwrap();
    assert!(
        chunks.iter().all(|chunk| chunk.get("invalid").is_none()),
        "{chunks:#?}"
    );
    // Asked by its path, approved, and sent by the chat itself.
    let asked = &out["approvalAsked"];
    assert_eq!(asked["state"], "approval-requested", "{out:#}");
    assert_eq!(asked["toolCallId"], "billing#c3/refund#r1");
    let parts = out["messages"][1]["parts"].as_array().unwrap();
    let part = |kind: &str| parts.iter().find(|part| part["type"] == kind).unwrap();
    assert_eq!(
        part("tool-refund")["state"],
        "output-available",
        "{parts:#?}"
    );
    assert_eq!(part("tool-refund")["output"], "order 42 refunded");
    assert_eq!(
        part("tool-billing")["state"],
        "output-available",
        "{parts:#?}"
    );
    let text: Vec<&str> = parts
        .iter()
        .filter(|part| part["type"] == "text")
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, ["Billing refunded order 42."]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ag_ui_client_verifies_the_run_and_resumes_its_interrupt() {
    let (node, dir) = match packages() {
        Ok(found) => found,
        Err(skipped) => return eprintln!("{skipped}"),
    };
    for decision in ["approve", "deny"] {
        let after = if decision == "approve" {
            ScriptedTurn::text("Refunded order 42.").expect_ok("r1", "refunded")
        } else {
            ScriptedTurn::text("I cannot refund it without a receipt.")
                .expect_error("r1", "not without a receipt")
        };
        let ui = ChatUi::new(agent(after));
        let address = serve(&ui).await;
        let out = run_script(
            &node,
            &dir,
            "ag_ui_run.mjs",
            &[&format!("http://{address}/ag-ui"), decision],
        )
        .await;
        let runs = out["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 3);
        for run in runs {
            assert_eq!(run["error"], Value::Null, "{run:#}");
            assert_eq!(run["invalid"], json!([]), "{run:#}");
            assert_eq!(run["events"][0]["type"], "RUN_STARTED");
        }
        // The question: text, the call streamed and its result.
        let first: Vec<&str> = runs[0]["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(|event| event["type"].as_str().unwrap())
            .collect();
        for kind in [
            "STATE_SNAPSHOT",
            "STEP_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "TOOL_CALL_RESULT",
            "STATE_DELTA",
            "STEP_FINISHED",
            "RUN_FINISHED",
        ] {
            assert!(first.contains(&kind), "no {kind} in {first:?}");
        }
        // The refund paused on an interrupt, seen in the state too.
        let ended = |run: &Value| run["events"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            ended(&runs[1])["outcome"]["type"],
            "interrupt",
            "{:#}",
            runs[1]
        );
        assert_eq!(runs[1]["outcome"], "interrupt");
        let interrupt = &runs[1]["pendingInterrupts"][0];
        assert_eq!(interrupt["toolCallId"], "r1");
        assert_eq!(interrupt["reason"], "tool_approval");
        assert_eq!(runs[1]["state"]["waiting"][0]["tool"], "refund");
        assert_eq!(runs[1]["state"]["phase"], "paused");
        // Answered, the run went on to its end.
        assert_eq!(ended(&runs[2])["outcome"]["type"], "success");
        assert_eq!(runs[2]["outcome"], "success");
        assert_eq!(runs[2]["state"]["phase"], "completed");
        let messages = out["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        let expected = if decision == "approve" {
            "Refunded order 42."
        } else {
            "I cannot refund it without a receipt."
        };
        assert_eq!(last["content"], expected, "{messages:#?}");
        let result = messages
            .iter()
            .find(|m| m["role"] == "tool" && m["toolCallId"] == "r1")
            .expect("the refund's result is a message");
        if decision == "approve" {
            assert_eq!(result["content"], "order 42 refunded");
        } else {
            assert!(result["content"]
                .as_str()
                .unwrap()
                .contains("not without a receipt"));
        }
    }
}

/// A model whose stream stutters: it reasons, writes, starts a call, fails
/// and is asked again (the pieces shown void), is retried, then answers;
/// its next turn reads the weather.
struct Stutters;

impl behest::run::Model for Stutters {
    async fn complete(
        &self,
        request: behest::run::ModelRequest<'_>,
    ) -> Result<AssistantMessage, behest::run::ModelError> {
        if matches!(request.conversation.last(), Some(Message::ToolResult(_))) {
            request.send_delta(ModelDelta::Text("It is ".into()));
            request.send_delta(ModelDelta::Text("sunny.".into()));
            return Ok(AssistantMessage::text("It is sunny."));
        }
        let call = |arguments: &str| ModelDelta::ToolCall {
            index: 0,
            id: Some("w1".into()),
            name: Some("get_weather".into()),
            arguments: arguments.into(),
        };
        for delta in [
            ModelDelta::Reasoning("The user asks".into()),
            ModelDelta::Text("Let me".into()),
            call("{\"ci"),
            ModelDelta::Restart,
            ModelDelta::Retry {
                attempt: 1,
                wait_ms: 5,
                error: "the stream broke off".into(),
            },
            ModelDelta::Fallback {
                from: "main".into(),
                to: "spare".into(),
                error: "overloaded".into(),
            },
            ModelDelta::Reasoning("The user asks about Paris.".into()),
            call("{\"city\":"),
            ModelDelta::ToolCall {
                index: 0,
                id: None,
                name: None,
                arguments: "\"Paris\"}".into(),
            },
        ] {
            request.send_delta(delta);
        }
        Ok(AssistantMessage::tool_calls([ToolCall::new(
            "w1",
            "get_weather",
            json!({ "city": "Paris" }),
        )]))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_that_restarts_reads_well_in_both_front_ends() {
    let (node, dir) = match packages() {
        Ok(found) => found,
        Err(skipped) => return eprintln!("{skipped}"),
    };
    let agent = || {
        Agent::new(
            Stutters,
            ToolRuntime::new(ToolRegistry::new().with(GetWeather).unwrap()),
        )
    };
    let address = serve(&ChatUi::new(agent())).await;
    let out = run_script(
        &node,
        &dir,
        "ai_sdk_chat.mjs",
        &[&format!("http://{address}/api/chat"), "once"],
    )
    .await;
    assert_eq!(out["errors"], json!([]), "{out:#}");
    let chunks = out["chunks"].as_array().unwrap();
    assert!(
        chunks.iter().all(|chunk| chunk.get("invalid").is_none()),
        "{chunks:#?}"
    );
    let kinds = types(chunks);
    for kind in [
        "reasoning-start",
        "reset-step",
        "data-model-notice",
        "tool-input-delta",
    ] {
        assert!(kinds.contains(&kind), "no `{kind}` in {kinds:?}");
    }
    // What the restart voided is gone; the call and the answer stand.
    let parts = out["messages"][1]["parts"].as_array().unwrap();
    let text: String = parts
        .iter()
        .filter(|part| part["type"] == "text")
        .map(|part| part["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "It is sunny.", "{parts:#?}");
    let weather = parts
        .iter()
        .find(|part| part["type"] == "tool-get_weather")
        .unwrap();
    assert_eq!(weather["state"], "output-available");
    assert_eq!(weather["input"], json!({ "city": "Paris" }));

    let address = serve(&ChatUi::new(agent())).await;
    let out = run_script(
        &node,
        &dir,
        "ag_ui_run.mjs",
        &[&format!("http://{address}/ag-ui"), "once"],
    )
    .await;
    let run = &out["runs"][0];
    assert_eq!(run["error"], Value::Null, "{run:#}");
    assert_eq!(run["invalid"], json!([]), "{run:#}");
    let kinds: Vec<&str> = run["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|event| event["type"].as_str())
        .collect();
    for kind in [
        "REASONING_MESSAGE_CONTENT",
        "REASONING_END",
        "TOOL_CALL_ARGS",
        "CUSTOM",
        "RUN_FINISHED",
    ] {
        assert!(kinds.contains(&kind), "no {kind} in {kinds:?}");
    }
    let messages = out["messages"].as_array().unwrap();
    assert_eq!(
        messages.last().unwrap()["content"],
        "It is sunny.",
        "{out:#}"
    );
    // The call as the client keeps it: its arguments whole, none of what
    // the restart voided.
    let calls: Vec<&Value> = messages
        .iter()
        .filter_map(|message| message["toolCalls"].as_array())
        .flatten()
        .filter(|call| call["id"] == "w1")
        .collect();
    assert!(!calls.is_empty(), "{messages:#?}");
    for call in calls {
        assert_eq!(
            call["function"]["arguments"], "{\"city\":\"Paris\"}",
            "{messages:#?}"
        );
    }
}

/// Posts `body` raw as JSON and gives the status and the body's text.
async fn post(url: &str, body: &str) -> (u16, String) {
    post_as(url, "application/json", &[], body).await
}

/// Posts `body` raw with the content type and headers given.
async fn post_as(url: &str, kind: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let _installed = rustls::crypto::ring::default_provider().install_default();
    let mut request = reqwest::Client::new()
        .post(url)
        .header("content-type", kind)
        .body(body.to_owned());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

/// Wait a while, as a slow service does.
#[tool(read_only)]
async fn slow() -> String {
    tokio::time::sleep(std::time::Duration::from_millis(800)).await;
    "done".to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_scoped_typed_and_one_at_a_time_per_chat() {
    let agent = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("s1", "slow", json!({}))]),
            ScriptedTurn::text("Done."),
        ]),
        ToolRuntime::new(ToolRegistry::new().with(Slow).unwrap()),
    );
    // Each caller's chats are their own: the session is named by a header
    // an authentication layer would set; without it, no run.
    let ui = ChatUi::new(agent).session_for(|headers, chat| {
        let user = headers.get("x-user")?.to_str().ok()?;
        Some(format!("{user}.{chat}"))
    });
    let address = serve(&ui).await;
    let chat = format!("http://{address}/api/chat");
    let hello =
        r#"{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}"#;

    // A form or plain-text POST (another site's, which needs no
    // preflight) starts nothing.
    let (status, text) = post_as(&chat, "text/plain", &[("x-user", "ada")], hello).await;
    assert_eq!(status, 415, "{text}");
    assert!(text.contains("application/json"), "{text}");
    let (status, text) = post(&chat, hello).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("not one this caller may use"), "{text}");

    // A second message while the chat's run goes on is told so.
    let first = tokio::spawn({
        let chat = chat.clone();
        async move { post_as(&chat, "application/json", &[("x-user", "ada")], hello).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (status, text) = post_as(&chat, "application/json", &[("x-user", "ada")], hello).await;
    assert_eq!(status, 200);
    let error = frames(&text)
        .into_iter()
        .find(|chunk| chunk["type"] == "error")
        .unwrap_or_else(|| panic!("no error in {text}"));
    assert!(
        error["errorText"]
            .as_str()
            .unwrap()
            .contains("has a run going on"),
        "{error}"
    );
    let (_, text) = first.await.unwrap();
    let texts: String = frames(&text)
        .iter()
        .filter(|chunk| chunk["type"] == "text-delta")
        .map(|chunk| chunk["delta"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(texts, "Done.");
}

/// The JSON of each `data:` frame of an SSE body, `[DONE]` left out.
fn frames(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|frame| frame.strip_prefix("data: "))
        .filter(|data| *data != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_a_clear_error_and_no_run() {
    let store = Arc::new(MemoryStore::new());
    let model = ScriptedModel::new([]);
    let ui =
        ChatUi::new(Agent::new(model, ToolRuntime::new(ToolRegistry::new()))).store(store.clone());
    let address = serve(&ui).await;
    let chat = format!("http://{address}/api/chat");
    let ag_ui = format!("http://{address}/ag-ui");
    let cases = [
        (&chat, "not json", "is not the AI SDK's chat request"),
        (&chat, r#"{"id":"c","messages":[]}"#, "has no message"),
        (
            &chat,
            r#"{"id":"c","messages":[{"id":"m","role":"assistant","parts":[{"type":"text","text":"hi"}]}]}"#,
            "neither a user's message nor an answer",
        ),
        (
            &chat,
            r#"{"id":"c","messages":[{"id":"m","role":"user","parts":[]}]}"#,
            "the user's message is empty",
        ),
        (
            &chat,
            r#"{"id":"c","messages":[{"id":"m","role":"user","parts":[{"type":"file","mediaType":"image/png","url":"file:///etc/passwd"}]}]}"#,
            "must be a `data:` or `http(s):` URL",
        ),
        (
            &chat,
            r#"{"id":"c","trigger":"regenerate-message","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}"#,
            "regenerating",
        ),
        (
            &ag_ui,
            r#"{"threadId":"t"}"#,
            "is not AG-UI's RunAgentInput",
        ),
        (
            &ag_ui,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"assistant","content":"hi"}]}"#,
            "a message of role `assistant` cannot start a run",
        ),
    ];
    for (url, body, says) in cases {
        let (status, text) = post(url, body).await;
        assert_eq!(status, 400, "{body}: {text}");
        let error: Value = serde_json::from_str(&text).unwrap();
        assert!(
            error["error"].as_str().unwrap().contains(says),
            "{body}: {text}"
        );
    }

    // A chat id no session can have, and an approval no run asked for:
    // the stream says so, as the front end shows errors.
    let (status, text) = post(
        &chat,
        r#"{"id":"","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"hi"}]}]}"#,
    )
    .await;
    assert_eq!(status, 200);
    let chunks = frames(&text);
    assert_eq!(chunks[0]["type"], "start");
    assert_eq!(chunks[1]["type"], "error", "{chunks:#?}");
    assert_eq!(chunks.last().unwrap()["finishReason"], "error");
    assert!(text.ends_with("data: [DONE]\n\n"));

    let forged = json!({
        "id": "c",
        "messages": [{"id": "m", "role": "assistant", "parts": [{
            "type": "tool-refund", "toolCallId": "r1", "state": "approval-responded",
            "input": {"order": 42}, "approval": {"id": "run_0_0:r1", "approved": true},
        }]}],
    });
    let (_, text) = post(&chat, &forged.to_string()).await;
    let chunks = frames(&text);
    let error = chunks.iter().find(|c| c["type"] == "error").unwrap();
    assert!(
        error["errorText"].as_str().unwrap().contains("run_0_0"),
        "{chunks:#?}"
    );
    let (_, text) = post(
        &ag_ui,
        r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"nonsense","status":"resolved","payload":{"approved":true}}]}"#,
    )
    .await;
    let events = frames(&text);
    assert_eq!(events[0]["type"], "RUN_STARTED");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "RUN_ERROR", "{events:#?}");
    assert!(last["message"]
        .as_str()
        .unwrap()
        .contains("not an approval"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_example_works_in_a_browser() {
    let found = packages().and_then(|(node, dir)| Ok((node, dir, chromium()?)));
    let (node, dir, chromium) = match found {
        Ok(found) => found,
        Err(skipped) => return eprintln!("{skipped}"),
    };
    let Some(binary) = example("chat_ui") else {
        return eprintln!("skipped: the chat_ui example is not built (cargo test builds it)");
    };
    let (_child, url) = start_example(&binary, &[]).await;
    let shot = browser::screenshots().join("chat_ui.png");
    let _ = std::fs::remove_file(&shot);
    let out = run_script(
        &node,
        &dir,
        "chat_page.mjs",
        &[
            &format!("{url}/"),
            chromium.to_str().unwrap(),
            shot.to_str().unwrap(),
        ],
    )
    .await;
    assert_eq!(out["error"], Value::Null, "{out:#}");
    let faults = browser::page_faults(&out, &url);
    assert!(faults.is_empty(), "{faults:#?}");
    assert!(out["beforeApproval"]
        .as_str()
        .unwrap()
        .contains("waits for your approval"));
    let tools = out["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 4, "{tools:#?}");
    assert_eq!(tools[0]["tool"], "get_weather");
    assert!(tools[0]["text"]
        .as_str()
        .unwrap()
        .contains("Sunny in Paris"));
    assert_eq!(tools[1]["tool"], "refund");
    assert_eq!(tools[1]["state"], "output-available");
    assert!(tools[1]["text"]
        .as_str()
        .unwrap()
        .contains("order 42 refunded"));
    // The two refunds: one approved and made, one denied and not.
    assert_eq!(tools[2]["state"], "output-available", "{tools:#?}");
    assert!(tools[2]["text"]
        .as_str()
        .unwrap()
        .contains("order 7 refunded"));
    assert_eq!(tools[3]["state"], "output-denied", "{tools:#?}");
    let messages = out["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        [
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant"
        ]
    );
    assert!(messages[5]["text"]
        .as_str()
        .unwrap()
        .contains("the user said no"));
    assert!(messages[1]["text"]
        .as_str()
        .unwrap()
        .contains("Done: Sunny in Paris, 21 °C."));
    assert!(messages[3]["text"]
        .as_str()
        .unwrap()
        .contains("Done: order 42 refunded."));
    let png = std::fs::read(&shot).expect("the screenshot is kept");
    assert!(png.starts_with(b"\x89PNG"), "a PNG at {}", shot.display());
    eprintln!("screenshot: {}", shot.display());
}

//! Every recorded provider payload in the shared fixtures: declarations are
//! understood, calls are extracted with the right ids, names and arguments,
//! streams assemble to the same calls, and formatted results have the shape
//! of the real ones. Reasoning state (thinking blocks, reasoning items,
//! thought signatures, `reasoning_content`) goes back as the recorded
//! follow-up requests send it. The fixtures are vendored under
//! `tests/data/provider-fixtures` (see `tests/data/README.md`).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::{Path, PathBuf};

use behest::providers::{anthropic, gemini, mcp, openai, StreamAssembler};
use behest::{AssistantMessage, Message, ToolCallResult, ToolError, ToolOutput};
use serde_json::{json, Value};

fn fixture_dir(provider: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/provider-fixtures")
        .join(provider)
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The recorded request that sends the turn of response `file` back, when
/// the fixtures hold one (same recording, next interaction).
fn follow_up(provider: &str, file: &str) -> Option<Value> {
    let request = FOLLOW_UPS
        .iter()
        .find(|(dir, response, _)| *dir == provider && *response == file)
        .map(|(_, _, request)| request)?;
    Some(read_json(&fixture_dir(provider).join(request)))
}

const FOLLOW_UPS: [(&str, &str, &str); 8] = [
    (
        "anthropic",
        "response-thinking-tool-use.json",
        "request-thinking-sent-back.json",
    ),
    (
        "anthropic",
        "response-thinking-tool-use-2.json",
        "request-thinking-sent-back-2.json",
    ),
    (
        "anthropic",
        "response-thinking-omitted-tool-use.json",
        "request-thinking-omitted-sent-back.json",
    ),
    (
        "anthropic",
        "response-redacted-thinking.json",
        "request-redacted-thinking-sent-back.json",
    ),
    (
        "gemini",
        "response-thought-signature-parallel-tool-calls.json",
        "request-thought-signature-sent-back.json",
    ),
    (
        "gemini",
        "response-thought-text-tool-call.json",
        "request-thought-text-sent-back.json",
    ),
    (
        "openai-responses",
        "response-reasoning-summary-function-call.json",
        "request-reasoning-sent-back.json",
    ),
    (
        "openai-responses",
        "response-reasoning-text-function-call.json",
        "request-reasoning-text-sent-back.json",
    ),
];

/// Whether `file` is a request that sends a turn back with its tool
/// results or its reasoning.
fn sends_back(file: &str) -> bool {
    file.starts_with("request-with-tool") || sends_reasoning_back(file)
}

/// Whether `file` is a request of the reasoning set, which sends a turn
/// back with its reasoning.
fn sends_reasoning_back(file: &str) -> bool {
    file.contains("-sent-back")
}

/// `value` without the keys `drop` says to drop, at any depth.
fn without(value: &Value, drop: &impl Fn(&str, &Value) -> bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(key, value)| !drop(key, value))
                .map(|(key, value)| (key.clone(), without(value, drop)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|item| without(item, drop)).collect()),
        other => other.clone(),
    }
}

fn fixtures(provider: &str) -> Vec<(String, Value)> {
    let mut files: Vec<(String, Value)> = std::fs::read_dir(fixture_dir(provider))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, read_json(&path))
        })
        .collect();
    files.sort_by(|a, b| a.0.cmp(&b.0));
    assert!(
        files.len() >= 10,
        "{provider}: only {} fixtures",
        files.len()
    );
    files
}

/// Arguments as a value: JSON text decoded (`""` is `{}`), objects as they are.
fn decoded(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) if text.trim().is_empty() => json!({}),
        Value::String(text) => {
            serde_json::from_str(text).unwrap_or_else(|e| panic!("arguments {text:?}: {e}"))
        }
        other => other.clone(),
    }
}

fn calls(message: &AssistantMessage) -> Vec<(String, String, Value)> {
    message
        .tool_calls
        .iter()
        .map(|call| {
            (
                call.call_id.clone(),
                call.tool_name.clone(),
                decoded(&call.arguments),
            )
        })
        .collect()
}

/// The calls among `items` whose `type` is `kind`: their id at `id`, their
/// name, and their arguments at `arguments` (decoded when given as text).
fn calls_of_type(
    items: &Value,
    kind: &str,
    id: &str,
    arguments: &str,
) -> Vec<(String, String, Value)> {
    items
        .as_array()
        .unwrap()
        .iter()
        .filter(|item| item["type"] == kind)
        .map(|item| {
            (
                item[id].as_str().unwrap().into(),
                item["name"].as_str().unwrap().into(),
                decoded(&item[arguments]),
            )
        })
        .collect()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

/// Our object has no key the real one lacks (apart from `optional` ones).
fn assert_shape(ours: &Value, real: &Value, optional: &[&str], file: &str) {
    let extra: Vec<String> = keys(ours)
        .difference(&keys(real))
        .filter(|key| !optional.contains(&key.as_str()))
        .cloned()
        .collect();
    assert!(
        extra.is_empty(),
        "{file}: keys {extra:?} are not in the real message {real}"
    );
}

/// Every tool result refers to a call made before it, and names its tool.
fn assert_results_answer_calls(conversation: &[Message], file: &str) -> usize {
    let mut called = HashSet::new();
    let mut results = 0;
    for message in conversation {
        match message {
            Message::Assistant(assistant) => {
                called.extend(assistant.tool_calls.iter().map(|c| c.call_id.clone()))
            }
            Message::ToolResult(result) => {
                assert!(
                    called.contains(&result.call_id),
                    "{file}: result for unknown call {}",
                    result.call_id
                );
                assert!(
                    !result.tool_name.is_empty(),
                    "{file}: result without a tool name"
                );
                results += 1;
            }
            _ => {}
        }
    }
    assert!(results > 0, "{file}: no tool result found");
    results
}

fn result(
    call_id: &str,
    tool_name: &str,
    outcome: Result<ToolOutput, ToolError>,
) -> ToolCallResult {
    ToolCallResult {
        call_id: call_id.into(),
        tool_name: tool_name.into(),
        outcome,
    }
}

/// Runs `check` on every fixture and fails if one was not checked.
fn check_all(provider: &str, mut check: impl FnMut(&str, &Value) -> bool) {
    let files = fixtures(provider);
    let unchecked: Vec<&str> = files
        .iter()
        .filter(|(name, value)| !check(name, value))
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        unchecked.is_empty(),
        "{provider}: fixtures not checked: {unchecked:?}"
    );
}

#[test]
fn openai_chat() {
    check_all("openai-chat", |file, value| {
        if file.starts_with("request-declares-tools") {
            let specs = openai::chat::parse_tools(value).unwrap();
            let names: Vec<&str> = value["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
                names,
                "{file}"
            );
        } else if file.starts_with("response-") {
            let message = openai::chat::parse_response(value).unwrap();
            let real = &value["choices"][0]["message"];
            let expected: Vec<(String, String, Value)> = real["tool_calls"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| {
                    (
                        c["id"].as_str().unwrap().into(),
                        c["function"]["name"].as_str().unwrap().into(),
                        decoded(&c["function"]["arguments"]),
                    )
                })
                .collect();
            assert_eq!(calls(&message), expected, "{file}");
            // The message goes back with its calls and reasoning_content as
            // they came (the server numbers calls with an `index` of its own).
            let ours = openai::chat::messages(&[Message::Assistant(message)]).remove(0);
            assert_eq!(
                ours["reasoning_content"], real["reasoning_content"],
                "{file}"
            );
            assert_eq!(
                ours["tool_calls"],
                without(&real["tool_calls"], &|key, _| key == "index"),
                "{file}"
            );
        } else if file.starts_with("stream-") {
            let mut stream = openai::chat::Stream::new();
            for chunk in value.as_array().unwrap() {
                stream.push(chunk).unwrap();
            }
            let message = stream.finish();
            let indexes: BTreeSet<u64> = value
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| {
                    c["choices"][0]["delta"]["tool_calls"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default()
                })
                .map(|f| f["index"].as_u64().unwrap())
                .collect();
            assert_eq!(
                message.tool_calls.len(),
                indexes.len(),
                "{file}: one call per index"
            );
            for (id, name, arguments) in calls(&message) {
                assert!(
                    id.starts_with("call_") && !name.is_empty() && arguments.is_object(),
                    "{file}: {id} {name} {arguments}"
                );
            }
            let reasoning: String = value
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c["choices"][0]["delta"]["reasoning_content"].as_str())
                .collect();
            let ours = openai::chat::messages(&[Message::Assistant(message)]).remove(0);
            assert_eq!(
                ours["reasoning_content"].as_str().unwrap_or_default(),
                reasoning,
                "{file}"
            );
        } else if sends_back(file) {
            let messages = value["messages"].as_array().unwrap();
            let conversation = openai::chat::from_messages(messages).unwrap();
            assert_results_answer_calls(&conversation, file);
            if sends_reasoning_back(file) {
                // All of it goes back as recorded, reasoning_content included
                // (the sender also copied each call's stream `index`).
                assert_eq!(
                    json!(openai::chat::messages(&conversation)),
                    without(&value["messages"], &|key, _| key == "index"),
                    "{file}"
                );
            }
            for (real, ours) in messages.iter().zip(openai::chat::messages(&conversation)) {
                if real["role"] == "tool" {
                    assert_eq!(ours["tool_call_id"], real["tool_call_id"], "{file}");
                    assert_eq!(ours["content"], real["content"], "{file}");
                    let formatted = openai::chat::result(&result(
                        real["tool_call_id"].as_str().unwrap(),
                        "t",
                        Ok(ToolOutput::text("x")),
                    ));
                    assert_shape(&formatted, real, &[], file);
                }
            }
        } else {
            return false;
        }
        true
    });
}

#[test]
fn openai_responses() {
    check_all("openai-responses", |file, value| {
        let function_calls =
            |items: &Value| calls_of_type(items, "function_call", "call_id", "arguments");
        if file.starts_with("request-declares-tools") {
            let specs = openai::responses::parse_tools(value).unwrap();
            let names: Vec<&str> = value["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap())
                .collect();
            assert_eq!(
                specs.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
                names,
                "{file}"
            );
        } else if file.starts_with("response-") {
            let message = openai::responses::parse_response(value).unwrap();
            assert_eq!(calls(&message), function_calls(&value["output"]), "{file}");
            assert!(!message.tool_calls.is_empty(), "{file}");
            if let Some(request) = follow_up("openai-responses", file) {
                // The turn goes back as the recorded request sends it, but
                // for what its sender changed: it leaves out `status` (and,
                // to DeepSeek, the call's item id) and writes
                // `encrypted_content: null` where the server sent none.
                let recorded: Vec<Value> = request["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|item| item["type"] == "reasoning" || item["type"] == "function_call")
                    .map(|item| without(item, &|_, value| value.is_null()))
                    .collect();
                let ours: Vec<Value> = openai::responses::messages(&[Message::Assistant(message)])
                    .iter()
                    .zip(&recorded)
                    .map(|(ours, real)| {
                        without(ours, &|key, _| {
                            key == "status" || (key == "id" && real.get("id").is_none())
                        })
                    })
                    .collect();
                assert_eq!(ours, recorded, "{file}");
            }
        } else if file.starts_with("stream-") {
            let mut stream = openai::responses::Stream::new();
            for event in value.as_array().unwrap() {
                stream.push(event).unwrap();
            }
            let message = stream.finish();
            let events = value.as_array().unwrap();
            let completed = events
                .iter()
                .find(|e| e["type"] == "response.completed")
                .unwrap();
            let output = completed["response"]["output"].as_array().unwrap();
            assert_eq!(calls(&message), function_calls(&json!(output)), "{file}");
            // The turn goes back as the response completed it: reasoning
            // items as their done event gave them (the completed event
            // encrypts the content anew), calls without their `status`, and
            // with their item id only after reasoning, which it pairs with.
            let done_reasoning = events.iter().filter(|e| {
                e["type"] == "response.output_item.done" && e["item"]["type"] == "reasoning"
            });
            let mut done_reasoning = done_reasoning.map(|e| e["item"].clone());
            let mut reasoned = false;
            let expected: Vec<Value> = output
                .iter()
                .map(|item| match item["type"].as_str() {
                    Some("reasoning") => {
                        reasoned = true;
                        done_reasoning.next().unwrap()
                    }
                    _ => without(item, &|key, _| {
                        key == "status" || (key == "id" && !reasoned)
                    }),
                })
                .collect();
            assert_eq!(
                openai::responses::messages(&[Message::Assistant(message)]),
                expected,
                "{file}"
            );
        } else if sends_back(file) {
            let input = value["input"].as_array().unwrap();
            let conversation = openai::responses::from_messages(input).unwrap();
            assert_results_answer_calls(&conversation, file);
            let mapped = openai::responses::messages(&conversation);
            let reasoning = |items: &[Value]| -> Vec<Value> {
                let reasoning = items.iter().filter(|item| item["type"] == "reasoning");
                reasoning.cloned().collect()
            };
            assert_eq!(reasoning(&mapped), reasoning(input), "{file}");
            if sends_reasoning_back(file) {
                // Reasoning items, paired call ids and results all go back
                // as recorded.
                assert_eq!(mapped, *input, "{file}");
            }
            for real in input.iter().filter(|i| i["type"] == "function_call_output") {
                let ours = openai::responses::result(&result(
                    real["call_id"].as_str().unwrap(),
                    "t",
                    Ok(ToolOutput::text("x")),
                ));
                assert_shape(&ours, real, &[], file);
                let mapped = openai::responses::messages(&conversation);
                let same = mapped
                    .iter()
                    .find(|m| {
                        m["type"] == "function_call_output" && m["call_id"] == real["call_id"]
                    })
                    .unwrap();
                assert_eq!(same["output"], real["output"], "{file}");
            }
        } else {
            return false;
        }
        true
    });
}

/// A model turn with its signatures in the standard base64 alphabet, so
/// that a URL-safe copy of a signature equals the original.
fn one_base64_alphabet(turn: &Value) -> Value {
    let mut turn = turn.clone();
    for part in turn["parts"].as_array_mut().unwrap() {
        if let Some(signature) = part["thoughtSignature"].as_str() {
            part["thoughtSignature"] = json!(signature.replace('-', "+").replace('_', "/"));
        }
    }
    turn
}

fn assistant_turns(messages: &[Value]) -> Vec<Value> {
    let turns = messages.iter().filter(|m| m["role"] == "assistant");
    turns.cloned().collect()
}

/// The thinking blocks of a stream as a response would hold them: each as
/// it started, its thinking deltas joined and its signature set.
fn streamed_thinking(events: &[Value]) -> Vec<Value> {
    let mut blocks: BTreeMap<u64, Value> = BTreeMap::new();
    for event in events {
        let index = event["index"].as_u64().unwrap_or_default();
        let block = &event["content_block"];
        if event["type"] == "content_block_start"
            && (block["type"] == "thinking" || block["type"] == "redacted_thinking")
        {
            blocks.insert(index, block.clone());
        }
        let (Some(block), delta) = (blocks.get_mut(&index), &event["delta"]) else {
            continue;
        };
        if let Some(piece) = delta["thinking"].as_str() {
            block["thinking"] = json!(format!("{}{piece}", block["thinking"].as_str().unwrap()));
        }
        if let Some(signature) = delta["signature"].as_str() {
            block["signature"] = json!(signature);
        }
    }
    blocks.into_values().collect()
}

#[test]
fn anthropic_messages() {
    check_all("anthropic", |file, value| {
        let tool_uses = |blocks: &Value| calls_of_type(blocks, "tool_use", "id", "input");
        if file.starts_with("request-declares-tools") {
            let specs = anthropic::parse_tools(value).unwrap();
            assert_eq!(
                specs.len(),
                value["tools"].as_array().unwrap().len(),
                "{file}"
            );
            assert!(
                specs.iter().all(|s| s.parameters["type"] == "object"),
                "{file}"
            );
        } else if file.starts_with("response-") {
            let message = anthropic::parse_response(value).unwrap();
            assert_eq!(calls(&message), tool_uses(&value["content"]), "{file}");
            assert!(
                !message.tool_calls.is_empty() || !message.reasoning.is_empty(),
                "{file}"
            );
            if let Some(request) = follow_up("anthropic", file) {
                // Thinking first, unchanged, then text and tool_use: the
                // turn goes back exactly as the recorded request sends it.
                let recorded = assistant_turns(request["messages"].as_array().unwrap());
                let (_, ours) = anthropic::messages(&[Message::Assistant(message)]);
                assert_eq!(ours, recorded, "{file}");
            }
        } else if file.starts_with("stream-") {
            let mut stream = anthropic::Stream::new();
            for event in value.as_array().unwrap() {
                stream.push(event).unwrap();
            }
            let message = stream.finish();
            // The thinking blocks go back first, whole and in their order.
            let thinking = streamed_thinking(value.as_array().unwrap());
            let (_, ours) = anthropic::messages(&[Message::Assistant(message.clone())]);
            let content = ours[0]["content"].as_array().unwrap();
            assert_eq!(content[..thinking.len()], thinking, "{file}");
            // After them: text, tool calls, and the blocks of server tools
            // (their use and results), which go back as they came.
            assert!(
                content[thinking.len()..].iter().all(|block| {
                    let kind = block["type"].as_str().unwrap_or_default();
                    kind == "text"
                        || kind == "tool_use"
                        || kind.starts_with("server_tool_use")
                        || kind.ends_with("_tool_result")
                }),
                "{file}"
            );
            let started: Vec<(String, String)> = value
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| {
                    e["type"] == "content_block_start" && e["content_block"]["type"] == "tool_use"
                })
                .map(|e| {
                    (
                        e["content_block"]["id"].as_str().unwrap().into(),
                        e["content_block"]["name"].as_str().unwrap().into(),
                    )
                })
                .collect();
            let got: Vec<(String, String)> = calls(&message)
                .into_iter()
                .map(|(id, name, arguments)| {
                    assert!(arguments.is_object(), "{file}: {arguments}");
                    (id, name)
                })
                .collect();
            assert_eq!(got, started, "{file}");
        } else if sends_back(file) {
            let messages = value["messages"].as_array().unwrap();
            let conversation = anthropic::from_messages(value.get("system"), messages).unwrap();
            let (_, ours) = anthropic::messages(&conversation);
            if sends_reasoning_back(file) {
                assert_eq!(assistant_turns(&ours), assistant_turns(messages), "{file}");
            }
            let real_results: Vec<&Value> = messages
                .iter()
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|b| b["type"] == "tool_result")
                .collect();
            if !real_results.is_empty() {
                assert_results_answer_calls(&conversation, file);
            }
            for real in &real_results {
                let is_error = real["is_error"].as_bool().unwrap_or(false);
                let parsed = conversation
                    .iter()
                    .find_map(|m| match m {
                        Message::ToolResult(r) if r.call_id == real["tool_use_id"] => Some(r),
                        _ => None,
                    })
                    .unwrap();
                assert_eq!(parsed.is_error, is_error, "{file}");
                let outcome = if is_error {
                    Err(ToolError::execution("x"))
                } else {
                    Ok(ToolOutput::text("x"))
                };
                let ours =
                    anthropic::result(&result(real["tool_use_id"].as_str().unwrap(), "t", outcome));
                assert_shape(&ours, real, &["is_error"], file);
            }
        } else {
            return false;
        }
        true
    });
}

#[test]
fn gemini_generate_content() {
    check_all("gemini", |file, value| {
        let function_calls = |parts: Vec<&Value>| -> Vec<(String, Value)> {
            parts
                .iter()
                .filter_map(|p| p.get("functionCall"))
                .map(|c| (c["name"].as_str().unwrap().into(), c["args"].clone()))
                .collect()
        };
        let without_ids = |message: &AssistantMessage| -> Vec<(String, Value)> {
            calls(message)
                .into_iter()
                .map(|(_, name, arguments)| (name, arguments))
                .collect()
        };
        if file.starts_with("request-declares-tools") {
            let specs = gemini::parse_tools(value).unwrap();
            let count: usize = value["tools"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["functionDeclarations"].as_array().map_or(0, Vec::len))
                .sum();
            assert_eq!(specs.len(), count, "{file}");
        } else if file.starts_with("response-") {
            let message = gemini::parse_response(value).unwrap();
            let parts: Vec<&Value> = value["candidates"][0]["content"]["parts"]
                .as_array()
                .unwrap()
                .iter()
                .collect();
            assert_eq!(
                without_ids(&message),
                function_calls(parts.clone()),
                "{file}"
            );
            for (call, part) in message
                .tool_calls
                .iter()
                .zip(parts.iter().filter(|p| p.get("functionCall").is_some()))
            {
                if let Some(id) = part["functionCall"]["id"].as_str() {
                    assert_eq!(call.call_id, id, "{file}");
                }
            }
            let ids: HashSet<&str> = message
                .tool_calls
                .iter()
                .map(|c| c.call_id.as_str())
                .collect();
            assert_eq!(
                ids.len(),
                message.tool_calls.len(),
                "{file}: one id per call"
            );
            if let Some(request) = follow_up("gemini", file) {
                // The turn goes back as the recorded request sends it, but
                // for what its sender changed: it writes `thought: false` on
                // the other parts, makes up call ids where Gemini gave none,
                // and re-encodes signatures as URL-safe base64.
                let gave_ids = parts.iter().any(|p| p["functionCall"].get("id").is_some());
                let turn = request["contents"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|c| c["role"] == "model")
                    .unwrap();
                let recorded = without(turn, &|key, value| {
                    (key == "thought" && *value == json!(false)) || (key == "id" && !gave_ids)
                });
                let (_, ours) = gemini::messages(&[Message::Assistant(message)]);
                let ours: Vec<Value> = ours.iter().map(one_base64_alphabet).collect();
                assert_eq!(ours, [one_base64_alphabet(&recorded)], "{file}");
            }
        } else if file.starts_with("stream-") {
            let mut stream = gemini::Stream::new();
            for chunk in value.as_array().unwrap() {
                stream.push(chunk).unwrap();
            }
            let message = stream.finish();
            let streamed: Vec<&Value> = value
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|c| {
                    c["candidates"][0]["content"]["parts"]
                        .as_array()
                        .into_iter()
                        .flatten()
                })
                .collect();
            let (_, contents) = gemini::messages(&[Message::Assistant(message.clone())]);
            let ours: Vec<&Value> = contents[0]["parts"].as_array().unwrap().iter().collect();
            // The thought text goes back joined into one part, and every
            // signature on a part of the kind it came on.
            let thoughts = |parts: &[&Value]| -> Vec<String> {
                let thoughts = parts.iter().filter(|p| p["thought"] == true);
                thoughts
                    .map(|p| p["text"].as_str().unwrap().to_owned())
                    .collect()
            };
            let streamed_thought = thoughts(&streamed).concat();
            let expected = if streamed_thought.is_empty() {
                vec![]
            } else {
                vec![streamed_thought]
            };
            assert_eq!(thoughts(&ours), expected, "{file}");
            let signatures = |parts: &[&Value]| -> Vec<(bool, Value)> {
                let signed = parts.iter().filter_map(|p| {
                    let signature = p.get("thoughtSignature")?;
                    Some((p.get("functionCall").is_some(), signature.clone()))
                });
                signed.collect()
            };
            assert_eq!(signatures(&ours), signatures(&streamed), "{file}");
            let expected: Vec<(String, Value)> = match file {
                "stream-partial-args-chunks.json" => vec![
                    ("getWeather".into(), json!({"location": "Boston"})),
                    ("getWeather".into(), json!({"location": "San Francisco"})),
                ],
                "stream-partial-args-chunks-2.json" => vec![
                    ("read_theme".into(), json!({})),
                    ("read_screen".into(), json!({"id": "A"})),
                    ("read_screen".into(), json!({"id": "B"})),
                    ("read_screen".into(), json!({"id": "C"})),
                ],
                _ => function_calls(
                    value
                        .as_array()
                        .unwrap()
                        .iter()
                        .flat_map(|c| {
                            c["candidates"][0]["content"]["parts"]
                                .as_array()
                                .into_iter()
                                .flatten()
                        })
                        .collect(),
                ),
            };
            assert_eq!(without_ids(&message), expected, "{file}");
        } else if sends_back(file) {
            let contents = value["contents"].as_array().unwrap();
            let conversation =
                gemini::from_messages(value.get("systemInstruction"), contents).unwrap();
            assert_results_answer_calls(&conversation, file);
            if sends_reasoning_back(file) {
                // Model turns go back as recorded, but for the `thought:
                // false` the sender writes on every other part.
                let model = |contents: &[Value]| -> Value {
                    json!(contents
                        .iter()
                        .filter(|c| c["role"] == "model")
                        .collect::<Vec<_>>())
                };
                let recorded = without(&model(contents), &|key, value| {
                    key == "thought" && *value == json!(false)
                });
                let (_, ours) = gemini::messages(&conversation);
                assert_eq!(model(&ours), recorded, "{file}");
            }
            let real: Vec<&Value> = contents
                .iter()
                .flat_map(|c| c["parts"].as_array().into_iter().flatten())
                .filter_map(|p| p.get("functionResponse"))
                .collect();
            for response in real {
                let is_error = response["response"].get("error").is_some();
                let id = response["id"].as_str().unwrap_or("gemini-call-0");
                let outcome = if is_error {
                    Err(ToolError::execution("x"))
                } else {
                    Ok(ToolOutput::text("x"))
                };
                let ours = gemini::result(&result(id, response["name"].as_str().unwrap(), outcome));
                assert_shape(&ours["functionResponse"], response, &[], file);
                let key = if is_error { "error" } else { "output" };
                assert!(
                    ours["functionResponse"]["response"].get(key).is_some(),
                    "{file}"
                );
                let parsed = conversation
                    .iter()
                    .filter_map(|m| match m {
                        Message::ToolResult(r) => Some(r),
                        _ => None,
                    })
                    .any(|r| r.is_error == is_error);
                assert!(parsed, "{file}: the error flag is read");
            }
        } else {
            return false;
        }
        true
    });
}

#[test]
fn mcp_messages() {
    check_all("mcp", |file, value| {
        if file.starts_with("tools-list-request") {
            assert_eq!(value["method"], "tools/list", "{file}");
        } else if file.starts_with("tools-list-result") {
            let specs = mcp::parse_tools(value).unwrap();
            assert_eq!(
                specs.len(),
                value["result"]["tools"].as_array().unwrap().len(),
                "{file}"
            );
            for (spec, real) in specs
                .iter()
                .zip(value["result"]["tools"].as_array().unwrap())
            {
                let ours = mcp::tool(spec);
                assert_shape(&ours, real, &["description"], file);
                assert_eq!(ours["inputSchema"], real["inputSchema"], "{file}");
            }
        } else if file.starts_with("tool-with") {
            let spec = mcp::parse_tool(value).unwrap();
            let ours = mcp::tool(&spec);
            // The title goes both at the top, as MCP prefers, and in the
            // annotations, for older clients.
            assert_shape(&ours, value, &["title"], file);
            assert_eq!(mcp::parse_tool(&ours).unwrap(), spec, "{file}: round trip");
        } else if file.starts_with("tools-call-request") {
            let call = mcp::parse_call(value).unwrap();
            assert_eq!(call.tool_name, value["params"]["name"], "{file}");
            assert_eq!(call.arguments, value["params"]["arguments"], "{file}");
            assert_eq!(call.call_id, value["id"].to_string(), "{file}");
        } else if file.starts_with("tools-call-result") {
            let real = value.get("result").unwrap_or(value);
            let is_error = real["isError"].as_bool().unwrap_or(false);
            let outcome = match (is_error, real.get("structuredContent")) {
                (true, _) => Err(ToolError::execution(
                    real["content"][0]["text"].as_str().unwrap(),
                )),
                (false, Some(structured)) => Ok(ToolOutput::json(structured.clone())),
                (false, None) => Ok(ToolOutput::text(
                    real["content"][0]["text"].as_str().unwrap(),
                )),
            };
            let ours = mcp::result(&result("1", "t", outcome));
            assert_shape(&ours, real, &["isError"], file);
            assert_eq!(ours["isError"], json!(is_error), "{file}");
            assert_eq!(ours["content"][0]["type"], "text", "{file}");
            if let Some(structured) = real.get("structuredContent") {
                assert_eq!(&ours["structuredContent"], structured, "{file}");
            } else {
                assert_eq!(ours["content"], real["content"], "{file}");
            }
        } else if file.starts_with("error-unknown-tool") {
            let name = value["error"]["message"]
                .as_str()
                .unwrap()
                .trim_start_matches("Unknown tool: ");
            let unknown = ToolError::NotFound {
                name: name.into(),
                suggestions: vec![],
                available: vec![],
            };
            let ours = mcp::call_response(&value["id"], &result("1", name, Err(unknown)));
            assert_eq!(ours, *value, "{file}");
        } else {
            return false;
        }
        true
    });
}

/// Every node of `value`, by its path (object keys and array indexes).
fn paths(value: &Value, at: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
    out.push(at.clone());
    match value {
        Value::Object(object) => {
            for (key, child) in object {
                at.push(Value::String(key.clone()));
                paths(child, at, out);
                at.pop();
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                at.push(Value::from(index));
                paths(child, at, out);
                at.pop();
            }
        }
        _ => {}
    }
}

/// `value` with the node at `path` replaced by `by`.
fn replaced(value: &Value, path: &[Value], by: &Value) -> Value {
    let mut value = value.clone();
    let mut node = &mut value;
    for step in path {
        node = match step {
            Value::String(key) => &mut node[key.as_str()],
            Value::Number(index) => &mut node[index.as_u64().unwrap() as usize],
            _ => unreachable!("paths are keys and indexes"),
        };
    }
    *node = by.clone();
    value
}

/// A model client must never panic on what a server sends. Every recorded
/// stream of every provider, with one value at any depth of any event
/// replaced by a value of each other JSON type, goes through every
/// stream assembler (as the fuzz targets' structure-aware mutants do):
/// each push and each finish returns, an error or a message.
#[test]
fn recorded_streams_with_any_value_retyped_never_panic_an_assembler() {
    let others = [
        json!(null),
        json!(true),
        json!(-1),
        json!(1.5e300),
        json!("text"),
        json!([]),
        json!(["x"]),
        json!({}),
        json!({"type": "text"}),
    ];
    let mut mutants = 0usize;
    for provider in ["openai-chat", "openai-responses", "anthropic", "gemini"] {
        for entry in std::fs::read_dir(fixture_dir(provider)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if !name.starts_with("stream-") {
                continue;
            }
            let events: Vec<Value> = match read_json(&path) {
                Value::Array(events) => events,
                other => vec![other],
            };
            for (at, event) in events.iter().enumerate() {
                let mut nodes = Vec::new();
                paths(event, &mut Vec::new(), &mut nodes);
                for node in &nodes {
                    for other in &others {
                        let mut mutated = events.clone();
                        mutated[at] = replaced(event, node, other);
                        let pushed = std::panic::catch_unwind(|| {
                            let mut chat = openai::chat::Stream::new();
                            let mut responses = openai::responses::Stream::new();
                            let mut messages = anthropic::Stream::new();
                            let mut gemini_stream = gemini::Stream::new();
                            for event in &mutated {
                                let _ = chat.push(event);
                                let _ = responses.push(event);
                                let _ = messages.push(event);
                                let _ = gemini_stream.push(event);
                            }
                            let _ = (
                                chat.finish(),
                                responses.finish(),
                                messages.finish(),
                                gemini_stream.finish(),
                            );
                        });
                        assert!(
                            pushed.is_ok(),
                            "{provider}/{name}: event {at} with {node:?} = {other} panics"
                        );
                        mutants += 1;
                    }
                }
            }
        }
    }
    assert!(mutants > 10_000, "only {mutants} mutants");
    println!("{mutants} mutants through 4 assemblers");
}

/// The panic this class was found by: a `content_block` that is a string,
/// then `input_json_delta` events for it.
#[test]
fn an_anthropic_block_that_is_no_object_is_an_error() {
    let mut stream = anthropic::Stream::new();
    let start = json!({"type": "content_block_start", "index": 0, "content_block": "abc"});
    let error = stream.push(&start).unwrap_err();
    assert!(error.to_string().contains("not an object"), "{error}");
    let delta = json!({"type": "content_block_delta", "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": "{\"a\": 1}"}});
    assert!(stream.push(&delta).is_err());
    let message = stream.finish();
    assert!(message.tool_calls.is_empty());
}

//! Every recorded provider payload in the shared fixtures: declarations are
//! understood, calls are extracted with the right ids, names and arguments,
//! streams assemble to the same calls, and formatted results have the shape
//! of the real ones. Skipped (reported as ignored) without
//! `BEHEST_SHARED_DIR`.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use behest::providers::{anthropic, gemini, mcp, openai};
use behest::{AssistantMessage, Message, ToolCallResult, ToolError, ToolOutput};
use serde_json::{json, Value};

fn fixtures(provider: &str) -> Vec<(String, Value)> {
    let dir = PathBuf::from(std::env::var_os("BEHEST_SHARED_DIR").expect("BEHEST_SHARED_DIR"))
        .join("data/provider-fixtures")
        .join(provider);
    let mut files: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .map(|path| {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            (name, serde_json::from_str(&text).unwrap())
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
#[cfg_attr(
    not(behest_shared),
    ignore = "skipped: BEHEST_SHARED_DIR does not name the shared data folder"
)]
fn openai_chat() {
    check_all("openai-chat", |file, value| {
        if file.starts_with("request-declares-tools") {
            let specs = openai::parse_chat_tools(value).unwrap();
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
            let message = openai::parse_chat_response(value).unwrap();
            let expected: Vec<(String, String, Value)> = value["choices"][0]["message"]
                ["tool_calls"]
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
        } else if file.starts_with("stream-") {
            let mut stream = openai::ChatStream::new();
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
        } else if file.starts_with("request-with-tool") {
            let messages = value["messages"].as_array().unwrap();
            let conversation = openai::from_chat_messages(messages).unwrap();
            assert_results_answer_calls(&conversation, file);
            for (real, ours) in messages.iter().zip(openai::chat_messages(&conversation)) {
                if real["role"] == "tool" {
                    assert_eq!(ours["tool_call_id"], real["tool_call_id"], "{file}");
                    assert_eq!(ours["content"], real["content"], "{file}");
                    let formatted = openai::chat_result(&result(
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
#[cfg_attr(
    not(behest_shared),
    ignore = "skipped: BEHEST_SHARED_DIR does not name the shared data folder"
)]
fn openai_responses() {
    check_all("openai-responses", |file, value| {
        let function_calls =
            |items: &Value| calls_of_type(items, "function_call", "call_id", "arguments");
        if file.starts_with("request-declares-tools") {
            let specs = openai::parse_responses_tools(value).unwrap();
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
            let message = openai::parse_responses_response(value).unwrap();
            assert_eq!(calls(&message), function_calls(&value["output"]), "{file}");
            assert!(!message.tool_calls.is_empty(), "{file}");
        } else if file.starts_with("stream-") {
            let mut stream = openai::ResponsesStream::new();
            for event in value.as_array().unwrap() {
                stream.push(event).unwrap();
            }
            let completed = value
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["type"] == "response.completed")
                .unwrap();
            assert_eq!(
                calls(&stream.finish()),
                function_calls(&completed["response"]["output"]),
                "{file}"
            );
        } else if file.starts_with("request-with-tool") {
            let input = value["input"].as_array().unwrap();
            let conversation = openai::from_responses_input(input).unwrap();
            assert_results_answer_calls(&conversation, file);
            for real in input.iter().filter(|i| i["type"] == "function_call_output") {
                let ours = openai::responses_result(&result(
                    real["call_id"].as_str().unwrap(),
                    "t",
                    Ok(ToolOutput::text("x")),
                ));
                assert_shape(&ours, real, &[], file);
                let mapped = openai::responses_input(&conversation);
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

#[test]
#[cfg_attr(
    not(behest_shared),
    ignore = "skipped: BEHEST_SHARED_DIR does not name the shared data folder"
)]
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
            assert!(!message.tool_calls.is_empty(), "{file}");
        } else if file.starts_with("stream-") {
            let mut stream = anthropic::Stream::new();
            for event in value.as_array().unwrap() {
                stream.push(event).unwrap();
            }
            let message = stream.finish();
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
        } else if file.starts_with("request-with-tool") {
            let messages = value["messages"].as_array().unwrap();
            let conversation = anthropic::from_messages(value.get("system"), messages).unwrap();
            assert_results_answer_calls(&conversation, file);
            let real_results: Vec<&Value> = messages
                .iter()
                .filter_map(|m| m["content"].as_array())
                .flatten()
                .filter(|b| b["type"] == "tool_result")
                .collect();
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
                let ours = anthropic::result_block(&result(
                    real["tool_use_id"].as_str().unwrap(),
                    "t",
                    outcome,
                ));
                assert_shape(&ours, real, &["is_error"], file);
            }
        } else {
            return false;
        }
        true
    });
}

#[test]
#[cfg_attr(
    not(behest_shared),
    ignore = "skipped: BEHEST_SHARED_DIR does not name the shared data folder"
)]
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
        } else if file.starts_with("stream-") {
            let mut stream = gemini::Stream::new();
            for chunk in value.as_array().unwrap() {
                stream.push(chunk).unwrap();
            }
            let message = stream.finish();
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
        } else if file.starts_with("request-with-tool") {
            let contents = value["contents"].as_array().unwrap();
            let conversation =
                gemini::from_contents(value.get("systemInstruction"), contents).unwrap();
            assert_results_answer_calls(&conversation, file);
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
                let ours =
                    gemini::result_part(&result(id, response["name"].as_str().unwrap(), outcome));
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
#[cfg_attr(
    not(behest_shared),
    ignore = "skipped: BEHEST_SHARED_DIR does not name the shared data folder"
)]
fn mcp_messages() {
    check_all("mcp", |file, value| {
        if file.starts_with("tools-list-request") {
            assert_eq!(value["method"], "tools/list", "{file}");
        } else if file.starts_with("tools-list-result") {
            let specs = mcp::parse_tools_list(value).unwrap();
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
            let ours = mcp::call_result(&result("1", "t", outcome));
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

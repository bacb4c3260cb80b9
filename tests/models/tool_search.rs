//! The providers' own tool search on their wires: OpenAI's hosted
//! `tool_search` (Responses) and Anthropic's `tool_search_tool_bm25`
//! (Messages), against a local server answering as each documents. The
//! deferred tools are declared with `defer_loading`, the search tool beside
//! them; the search's items or blocks go back on the next turn as they
//! came, in their place.

use behest::models::anthropic::Messages;
use behest::models::openai::Responses;
use behest::run::ToolSearch;
use behest::{tool, Agent, Message, Model, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

use crate::models_support::{Reply, Server};

/// Get the current weather for a city.
#[tool]
fn get_weather(city: String) -> String {
    format!("Sunny in {city}.")
}

/// Convert an amount between currencies.
#[tool]
fn convert_currency(amount: f64, to: String) -> String {
    format!("{amount} {to}")
}

/// Book a table at a restaurant.
#[tool]
fn book_table(restaurant: String, people: u32) -> String {
    format!("{people} at {restaurant}")
}

/// Today's date.
#[tool]
fn today() -> String {
    "2026-12-06".to_owned()
}

fn registry() -> ToolRegistry {
    ToolRegistry::new()
        .with(GetWeather)
        .unwrap()
        .with(ConvertCurrency)
        .unwrap()
        .with(BookTable)
        .unwrap()
        .with(Today)
        .unwrap()
}

/// The declarations a request sent: name → whether deferred.
fn declared(body: &Value) -> Vec<(String, bool)> {
    body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tool| {
            (
                tool.get("name")
                    .or_else(|| tool.get("type"))
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_owned(),
                tool.get("defer_loading") == Some(&Value::Bool(true)),
            )
        })
        .collect()
}

/// The tools a request declared deferred, then the search tool: every
/// tool but `today` deferred, `search` the provider's search tool.
fn deferred_declarations(search: &str) -> Vec<(String, bool)> {
    [
        ("get_weather", true),
        ("convert_currency", true),
        ("book_table", true),
        ("today", false),
        (search, false),
    ]
    .map(|(name, deferred)| (name.to_owned(), deferred))
    .to_vec()
}

/// The types of a request's items or blocks, `message` for an item of
/// none (a plain input message).
fn kinds(items: &Value) -> Vec<&str> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|item| item["type"].as_str().unwrap_or("message"))
        .collect()
}

/// Asks for the weather in Oslo of a model given every tool but `today`
/// for its provider's search (`model` makes it from their names); the run
/// must answer "Sunny in Oslo.".
async fn weather_in_oslo<M: Model + 'static>(
    model: impl FnOnce(std::collections::hash_set::Iter<'_, String>) -> M,
) {
    let registry = registry();
    let search = ToolSearch::new(&registry, |spec| spec.name != "today");
    let outcome = Agent::new(
        model(search.deferred_names().iter()),
        ToolRuntime::new(registry),
    )
    .invoke([Message::user("Weather in Oslo?")])
    .await;
    assert_eq!(outcome.text(), Some("Sunny in Oslo."), "{outcome:?}");
}

#[tokio::test]
async fn openai_s_hosted_tool_search_loads_the_deferred_tools() {
    let search_call = json!({"type": "tool_search_call", "id": "tsc_1", "call_id": null,
        "execution": "server", "status": "completed", "arguments": {"query": "weather"}});
    let search_output = json!({"type": "tool_search_output", "id": "tso_1", "call_id": null,
        "execution": "server", "status": "completed",
        "tools": [{"type": "function", "name": "get_weather", "description": "Get the current weather for a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            "strict": false, "defer_loading": true}]});
    let server = Server::start([
        Reply::json(&json!({"id": "resp_1", "object": "response", "status": "completed",
            "output": [search_call, search_output, {"type": "function_call", "id": "fc_1",
                "call_id": "call_w1", "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}",
                "status": "completed"}],
            "usage": {"input_tokens": 300, "output_tokens": 20}})),
        Reply::json(&json!({"id": "resp_2", "object": "response", "status": "completed",
            "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": "Sunny in Oslo.", "annotations": []}]}],
            "usage": {"input_tokens": 350, "output_tokens": 5}})),
    ])
    .await;
    weather_in_oslo(|deferred| {
        Responses::new("gpt-5.4")
            .api_key("k")
            .base_url(server.url())
            .stream(false)
            .tool_search(deferred)
    })
    .await;
    let received = server.received();
    assert_eq!(
        declared(&received[0].body),
        deferred_declarations("tool_search")
    );
    let input = &received[1].body["input"];
    assert_eq!(
        kinds(input),
        [
            "message",
            "tool_search_call",
            "tool_search_output",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[2]["tools"][0]["name"], "get_weather");
}

#[tokio::test]
async fn anthropic_s_tool_search_loads_the_deferred_tools() {
    let server = Server::start([
        Reply::json(&json!({"id": "msg_1", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25",
                    "input": {"query": "weather"}},
                {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1",
                    "content": {"type": "tool_search_tool_search_result",
                        "tool_references": [{"type": "tool_reference", "tool_name": "get_weather"}]}},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 300, "output_tokens": 30,
                "server_tool_use": {"web_search_requests": 0}}})),
        Reply::json(&json!({"id": "msg_2", "type": "message", "role": "assistant",
            "model": "claude-sonnet-4-5", "content": [{"type": "text", "text": "Sunny in Oslo."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 360, "output_tokens": 6}})),
    ])
    .await;
    weather_in_oslo(|deferred| {
        Messages::new("claude-sonnet-4-5")
            .api_key("k")
            .base_url(server.url())
            .stream(false)
            .tool_search(deferred)
    })
    .await;
    let received = server.received();
    assert_eq!(
        declared(&received[0].body),
        deferred_declarations("tool_search_tool_bm25")
    );
    let turn = &received[1].body["messages"][1]["content"];
    assert_eq!(
        kinds(turn),
        ["server_tool_use", "tool_search_tool_result", "tool_use"]
    );
    assert_eq!(
        turn[1]["content"]["tool_references"][0]["tool_name"],
        "get_weather"
    );
}

/// Streamed, the hosted search's items arrive whole in their
/// `output_item.done` events, and go back as they came, before the call.
#[tokio::test]
async fn openai_s_search_items_come_back_from_a_stream_too() {
    let search_call = json!({"type": "tool_search_call", "id": "tsc_1", "call_id": null,
        "execution": "server", "status": "completed", "arguments": {"query": "weather"}});
    let search_output = json!({"type": "tool_search_output", "id": "tso_1", "call_id": null,
        "execution": "server", "status": "completed", "tools": []});
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "call_w1",
        "name": "get_weather", "arguments": "{\"city\": \"Oslo\"}", "status": "completed"});
    let events = [
        json!({"type": "response.created", "response": {"id": "resp_1", "object": "response",
            "status": "in_progress", "output": []}}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": search_call}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": search_output}),
        json!({"type": "response.output_item.added", "output_index": 2,
            "item": {"type": "function_call", "id": "fc_1", "call_id": "call_w1",
                "name": "get_weather", "arguments": "", "status": "in_progress"}}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 2,
            "item_id": "fc_1", "delta": "{\"city\": \"Oslo\"}"}),
        json!({"type": "response.output_item.done", "output_index": 2, "item": call}),
        json!({"type": "response.completed", "response": {"id": "resp_1", "object": "response",
            "status": "completed", "output": [search_call, search_output, call],
            "usage": {"input_tokens": 300, "output_tokens": 20}}}),
    ];
    let server = Server::start([
        Reply::events(&events, true, false),
        Reply::events(
            &[
                json!({"type": "response.created", "response": {"id": "resp_2",
                    "object": "response", "status": "in_progress", "output": []}}),
                json!({"type": "response.output_text.delta", "output_index": 0,
                    "content_index": 0, "delta": "Sunny in Oslo."}),
                json!({"type": "response.completed", "response": {"id": "resp_2",
                    "object": "response", "status": "completed", "output": [],
                    "usage": {"input_tokens": 350, "output_tokens": 5}}}),
            ],
            true,
            false,
        ),
    ])
    .await;
    weather_in_oslo(|deferred| {
        Responses::new("gpt-5.4")
            .api_key("k")
            .base_url(server.url())
            .tool_search(deferred)
    })
    .await;
    let input = server.received()[1].body["input"].clone();
    assert_eq!(
        kinds(&input),
        [
            "message",
            "tool_search_call",
            "tool_search_output",
            "function_call",
            "function_call_output"
        ]
    );
    assert_eq!(input[1], search_call);
}

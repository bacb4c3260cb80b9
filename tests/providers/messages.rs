//! Conversations through each provider's message list and back, and bad
//! payloads as clear errors.

use behest::providers::{anthropic, gemini, mcp, openai, StreamAssembler, WireFormat};
use behest::run::{Reasoning, ReasoningPlace, ToolResultMessage};
use behest::{AssistantMessage, Message, ToolCall, ToolError, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

fn conversation() -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("Weather in Paris and Oslo?"),
        Message::Assistant(AssistantMessage::text("Checking.").with_tool_calls([
            ToolCall::new("c1", "get_weather", json!({"city": "Paris"})),
            ToolCall::new("c2", "get_weather", json!({"city": "Oslo"})),
        ])),
        Message::ToolResult(ToolResultMessage::new("c1", "get_weather", "Sunny")),
        Message::ToolResult(
            ToolResultMessage::new("c2", "get_weather", "no data for Oslo").with_error(true),
        ),
        Message::Assistant(AssistantMessage::text("Sunny in Paris; no data for Oslo.")),
    ]
}

/// What survives every provider: OpenAI has no error flag on results.
fn without_error_flags(conversation: Vec<Message>) -> Vec<Message> {
    conversation
        .into_iter()
        .map(|message| match message {
            Message::ToolResult(mut result) => {
                result.is_error = false;
                Message::ToolResult(result)
            }
            other => other,
        })
        .collect()
}

/// Call arguments decoded: OpenAI carries them as JSON text.
fn decoded(conversation: Vec<Message>) -> Vec<Message> {
    conversation
        .into_iter()
        .map(|message| match message {
            Message::Assistant(mut assistant) => {
                for call in &mut assistant.tool_calls {
                    if let serde_json::Value::String(text) = &call.arguments {
                        call.arguments = serde_json::from_str(text).unwrap();
                    }
                }
                Message::Assistant(assistant)
            }
            other => other,
        })
        .collect()
}

#[test]
fn conversations_round_trip() {
    let original = conversation();
    let chat = openai::chat::from_messages(&openai::chat::messages(&original)).unwrap();
    assert_eq!(decoded(chat), without_error_flags(original.clone()));

    let responses =
        decoded(openai::responses::from_messages(&openai::responses::messages(&original)).unwrap());
    let expected = without_error_flags(original.clone());
    assert_eq!(responses, expected);

    let (system, messages) = anthropic::messages(&original);
    assert_eq!(
        messages[2]["content"].as_array().unwrap().len(),
        2,
        "both results in one user message"
    );
    let back = anthropic::from_messages(system.map(serde_json::Value::String).as_ref(), &messages)
        .unwrap();
    assert_eq!(back, original);

    let (system, contents) = gemini::messages(&original);
    let back = gemini::from_messages(system.as_ref(), &contents).unwrap();
    assert_eq!(back, original);
}

/// A turn of calls without text goes out with `"content": ""`, which
/// OpenAI and the servers of its API people run themselves (vLLM,
/// llama.cpp's, LM Studio's, which refuse `null`) all take; and reads back
/// as a turn without text.
#[test]
fn a_chat_turn_of_calls_sends_empty_content_not_null() {
    let turn = Message::Assistant(AssistantMessage::tool_calls([ToolCall::new(
        "c1",
        "get_weather",
        r#"{"city":"Paris"}"#,
    )]));
    let sent = openai::chat::messages(&[Message::user("Weather?"), turn.clone()]);
    assert_eq!(sent[1]["content"], json!(""));
    assert_eq!(sent[1]["tool_calls"][0]["function"]["name"], "get_weather");
    let back = openai::chat::from_messages(&sent).unwrap();
    assert_eq!(back[1], turn);
}

#[test]
fn bad_payloads_are_errors_not_panics() {
    assert!(openai::chat::parse_response(&json!({})).is_err());
    assert!(openai::chat::parse_response(
        &json!({"choices": [{"message": {"tool_calls": [{"function": {"name": "x"}}]}}]})
    )
    .is_err());
    assert!(
        openai::responses::parse_response(&json!({"output": [{"type": "function_call"}]})).is_err()
    );
    assert!(
        anthropic::parse_response(&json!({"content": [{"type": "tool_use", "name": "x"}]}))
            .is_err()
    );
    assert!(gemini::parse_response(&json!({"candidates": []})).is_err());
    assert!(mcp::parse_call(&json!({"method": "tools/list"})).is_err());
    assert!(mcp::parse_call(&json!({"method": "tools/call", "id": 1})).is_err());
    let mut stream = anthropic::Stream::new();
    let error = stream.push(&json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{"}})).unwrap_err();
    assert_eq!(
        error.to_string(),
        "input_json_delta for block 3, which did not start"
    );
    let mut stream = openai::chat::Stream::new();
    assert!(stream
        .push(&json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "{"}}]}}]}))
        .is_err());
}

#[tokio::test]
async fn a_stream_cut_short_reaches_the_model_as_an_argument_error() {
    /// Look a word up.
    #[behest::tool]
    fn lookup(word: String) -> String {
        word
    }
    let mut stream = openai::chat::Stream::new();
    stream.push(&json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "lookup", "arguments": "{\"wo"}}]}}]})).unwrap();
    let message = stream.finish();
    let mut registry = ToolRegistry::new();
    registry.register_tool(std::sync::Arc::new(Lookup)).unwrap();
    let result = ToolRuntime::new(registry)
        .call(message.tool_calls[0].clone())
        .await;
    assert!(matches!(
        result.outcome,
        Err(ToolError::InvalidArguments { .. })
    ));
    assert!(
        result.to_model_text().contains("cut short"),
        "{}",
        result.to_model_text()
    );
    let formatted = openai::chat::result(&result);
    assert_eq!(formatted["tool_call_id"], "call_1");
    let formatted = mcp::result(&result);
    assert_eq!(
        formatted["isError"], true,
        "an argument error is a tool error result in MCP"
    );
}

#[test]
fn a_chat_stream_sets_a_call_name_and_id_once() {
    let mut stream = openai::chat::Stream::new();
    for fragment in [
        json!({"index": 0, "id": "call_1", "function": {"name": "get_weather", "arguments": ""}}),
        json!({"index": 0, "id": "", "function": {"name": "get_weather", "arguments": "{\"city\":"}}),
        json!({"index": 0, "function": {"name": "", "arguments": "\"Paris\"}"}}),
    ] {
        stream
            .push(&json!({"choices": [{"delta": {"tool_calls": [fragment]}}]}))
            .unwrap();
    }
    let calls = stream.finish().tool_calls;
    assert_eq!(
        calls,
        [ToolCall::new(
            "call_1",
            "get_weather",
            json!("{\"city\":\"Paris\"}")
        )]
    );
}

#[test]
fn a_responses_stream_keeps_its_arguments_when_a_done_event_repeats_them_empty() {
    let mut stream = openai::responses::Stream::new();
    let item = |arguments: &str| json!({"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": arguments});
    for event in [
        json!({"type": "response.output_item.added", "output_index": 0, "item": item("")}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{\"city\":\"Paris\"}"}),
        json!({"type": "response.function_call_arguments.done", "output_index": 0, "arguments": ""}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": item("")}),
    ] {
        stream.push(&event).unwrap();
    }
    assert_eq!(
        stream.finish().tool_calls,
        [ToolCall::new(
            "call_1",
            "get_weather",
            json!("{\"city\":\"Paris\"}")
        )]
    );
}

#[test]
fn an_anthropic_stream_skips_server_tool_input_and_joins_text_in_block_order() {
    let mut stream = anthropic::Stream::new();
    for event in [
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "bash_code_execution", "input": {}}}),
        json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"ls\"}"}}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": " world"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"word\": \"x\"}"}}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}}),
    ] {
        stream.push(&event).unwrap();
    }
    let message = stream.finish();
    assert_eq!(message.text.as_deref(), Some("Hello world"));
    assert_eq!(
        message.tool_calls,
        [ToolCall::new(
            "toolu_1",
            "lookup",
            // Joined, the fragments read as the object the whole answer has.
            json!({"word": "x"})
        )]
    );
}

#[test]
fn a_gemini_stream_that_repeats_a_continuing_call_s_name_makes_one_call() {
    let mut stream = gemini::Stream::new();
    for call in [
        json!({"name": "getWeather", "willContinue": true}),
        json!({"name": "getWeather", "partialArgs": [{"jsonPath": "$.location", "stringValue": "Bos", "willContinue": true}], "willContinue": true}),
        json!({"name": "getWeather", "id": "", "partialArgs": [{"jsonPath": "$.location", "stringValue": "ton"}], "willContinue": true}),
        json!({}),
        json!({"name": "getWeather", "args": {"location": "Oslo"}}),
    ] {
        stream
            .push(&json!({"candidates": [{"content": {"parts": [{"functionCall": call}]}}]}))
            .unwrap();
    }
    let calls: Vec<_> = stream
        .finish()
        .tool_calls
        .into_iter()
        .map(|call| (call.tool_name, call.arguments))
        .collect();
    assert_eq!(
        calls,
        [
            ("getWeather".to_owned(), json!({"location": "Boston"})),
            ("getWeather".to_owned(), json!({"location": "Oslo"})),
        ]
    );
}

/// Gemini calls that come without ids get ids made from the turn alone:
/// unique within it, the same however often the turn is read (a run makes
/// ids repeated across turns unique), and never sent back.
#[test]
fn gemini_calls_without_ids_get_unique_ids_that_are_never_sent() {
    let response = json!({"candidates": [{"content": {"role": "model", "parts": [
        {"functionCall": {"name": "generate_topic", "args": {}}},
        {"functionCall": {"name": "generate_topic", "args": {}}},
    ]}}]});
    let first = gemini::parse_response(&response).unwrap();
    let second = gemini::parse_response(&response).unwrap();
    assert_eq!(first, second, "reading a turn is pure");
    let mut stream = gemini::Stream::new();
    stream.push(&response).unwrap();
    let streamed = stream.finish();
    let ids: std::collections::HashSet<&str> = first
        .tool_calls
        .iter()
        .map(|call| call.call_id.as_str())
        .collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    let streamed_ids: std::collections::HashSet<&str> = streamed
        .tool_calls
        .iter()
        .map(|call| call.call_id.as_str())
        .collect();
    assert_eq!(streamed_ids.len(), 2, "{streamed_ids:?}");

    let mut conversation = vec![
        Message::user("Two topics."),
        Message::Assistant(first.clone()),
    ];
    for (call, content) in first.tool_calls.iter().zip(["cars", "penguins"]) {
        conversation.push(Message::ToolResult(ToolResultMessage::new(
            call.call_id.clone(),
            call.tool_name.clone(),
            content,
        )));
    }
    let (_, contents) = gemini::messages(&conversation);
    let sent: Vec<&serde_json::Value> = contents
        .iter()
        .flat_map(|content| content["parts"].as_array().unwrap())
        .filter_map(|part| part.get("functionCall").or(part.get("functionResponse")))
        .collect();
    assert_eq!(sent.len(), 4);
    assert!(
        sent.iter().all(|value| value.get("id").is_none()),
        "{sent:?}"
    );

    let back = gemini::from_messages(None, &contents).unwrap();
    let Message::Assistant(calls) = &back[1] else {
        panic!("{back:?}")
    };
    let answered: Vec<(&str, &str)> = back[2..]
        .iter()
        .map(|message| match message {
            Message::ToolResult(result) => (result.call_id.as_str(), result.content.as_str()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        answered,
        [
            (calls.tool_calls[0].call_id.as_str(), "cars"),
            (calls.tool_calls[1].call_id.as_str(), "penguins"),
        ],
        "each response answers its own call"
    );
}

fn reasoning(provider: WireFormat, place: ReasoningPlace, data: Value) -> Reasoning {
    Reasoning {
        provider,
        place,
        data,
    }
}

fn on_call(call_id: &str) -> ReasoningPlace {
    ReasoningPlace::Call {
        call_id: call_id.into(),
    }
}

const FIRST: ReasoningPlace = ReasoningPlace::Entry { after_calls: 0 };

/// The first conversation, its model turn carrying every provider's
/// reasoning, each in the order its parser makes it.
fn conversation_with_reasoning() -> Vec<Message> {
    let mut conversation = conversation();
    let Message::Assistant(turn) = &mut conversation[2] else {
        unreachable!()
    };
    turn.reasoning = vec![
        reasoning(
            WireFormat::Anthropic,
            FIRST,
            json!({"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"}),
        ),
        reasoning(
            WireFormat::Anthropic,
            FIRST,
            json!({"type": "redacted_thinking", "data": "cmVk"}),
        ),
        reasoning(
            WireFormat::OpenAiResponses,
            FIRST,
            json!({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}),
        ),
        reasoning(
            WireFormat::OpenAiResponses,
            on_call("c1"),
            json!({"id": "fc_1"}),
        ),
        reasoning(
            WireFormat::OpenAiResponses,
            on_call("c2"),
            json!({"id": "fc_2"}),
        ),
        reasoning(
            WireFormat::Gemini,
            FIRST,
            json!({"text": "Two cities.", "thought": true}),
        ),
        reasoning(
            WireFormat::Gemini,
            on_call("c1"),
            json!({"thoughtSignature": "Z2Vt"}),
        ),
        reasoning(
            WireFormat::OpenAiChat,
            ReasoningPlace::Turn,
            json!({"reasoning_content": "Two cities."}),
        ),
    ];
    conversation
}

/// The conversation with only `provider`'s reasoning.
fn only(provider: WireFormat, conversation: &[Message]) -> Vec<Message> {
    conversation
        .iter()
        .cloned()
        .map(|message| match message {
            Message::Assistant(mut turn) => {
                turn.reasoning.retain(|piece| piece.provider == provider);
                Message::Assistant(turn)
            }
            other => other,
        })
        .collect()
}

/// What each provider's reasoning leaves in a request: a mapping must hold
/// its own provider's and no other's.
fn assert_only_own_reasoning(provider: WireFormat, sent: &Value) {
    let markers = [
        (WireFormat::Anthropic, "c2ln"),
        (WireFormat::OpenAiResponses, "rs_1"),
        (WireFormat::Gemini, "Z2Vt"),
        (WireFormat::OpenAiChat, "reasoning_content"),
    ];
    let text = sent.to_string();
    for (other, marker) in markers {
        assert_eq!(
            text.contains(marker),
            other == provider,
            "{provider:?} and {marker}: {text}"
        );
    }
}

#[test]
fn anthropic_thinking_goes_back_first_unchanged_and_only_to_anthropic() {
    let original = conversation_with_reasoning();
    let (system, messages) = anthropic::messages(&original);
    assert_only_own_reasoning(WireFormat::Anthropic, &json!(messages));
    let types: Vec<&Value> = messages[1]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| &block["type"])
        .collect();
    assert_eq!(
        types,
        [
            "thinking",
            "redacted_thinking",
            "text",
            "tool_use",
            "tool_use"
        ],
        "thinking goes first, in its order"
    );
    let back = anthropic::from_messages(system.map(Value::String).as_ref(), &messages).unwrap();
    assert_eq!(back, only(WireFormat::Anthropic, &original));
}

#[test]
fn an_anthropic_stream_keeps_its_thinking_whole_and_first() {
    let mut stream = anthropic::Stream::new();
    for event in [
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Two"}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": " cities."}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "c2ln"}}),
        json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "cmVk"}}),
        json!({"type": "content_block_start", "index": 2, "content_block": {"type": "text", "text": ""}}),
        json!({"type": "content_block_delta", "index": 2, "delta": {"type": "text_delta", "text": "Checking."}}),
        json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {}}}),
        json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{\"city\": \"Paris\"}"}}),
    ] {
        stream.push(&event).unwrap();
    }
    let (_, messages) = anthropic::messages(&[Message::Assistant(stream.finish())]);
    assert_eq!(
        messages[0]["content"],
        json!([
            {"type": "thinking", "thinking": "Two cities.", "signature": "c2ln"},
            {"type": "redacted_thinking", "data": "cmVk"},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "c1", "name": "get_weather", "input": {"city": "Paris"}},
        ])
    );
    let error = stream_error(
        json!({"type": "content_block_delta", "index": 5, "delta": {"type": "signature_delta", "signature": "x"}}),
    );
    assert_eq!(error, "signature_delta for block 5, which did not start");
}

fn stream_error(event: Value) -> String {
    anthropic::Stream::new()
        .push(&event)
        .unwrap_err()
        .to_string()
}

#[test]
fn gemini_signatures_go_back_on_their_part_and_only_to_gemini() {
    let original = conversation_with_reasoning();
    let (system, contents) = gemini::messages(&original);
    assert_only_own_reasoning(WireFormat::Gemini, &json!(contents));
    assert_eq!(
        contents[1]["parts"],
        json!([
            {"text": "Two cities.", "thought": true},
            {"text": "Checking."},
            {"functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "Z2Vt"},
            {"functionCall": {"id": "c2", "name": "get_weather", "args": {"city": "Oslo"}}},
        ]),
        "the signature goes back on the part it came on"
    );
    let back = gemini::from_messages(system.as_ref(), &contents).unwrap();
    assert_eq!(back, only(WireFormat::Gemini, &original));
}

#[test]
fn a_gemini_stream_joins_its_thought_and_keeps_each_signature_on_its_part() {
    let chunk =
        |parts: Value| json!({"candidates": [{"content": {"role": "model", "parts": parts}}]});
    let mut stream = gemini::Stream::new();
    for parts in [
        json!([{"text": "Two", "thought": true}]),
        json!([{"text": " cities.", "thought": true}]),
        json!([{"text": "Checking."}]),
        json!([{"text": "", "thoughtSignature": "dGV4dA=="}]),
        json!([{"functionCall": {"name": "get_weather", "willContinue": true}, "thoughtSignature": "Z2Vt"}]),
        json!([{"functionCall": {"partialArgs": [{"jsonPath": "$.city", "stringValue": "Paris"}], "willContinue": true}}]),
        json!([{"functionCall": {}}]),
    ] {
        stream.push(&chunk(parts)).unwrap();
    }
    let (_, contents) = gemini::messages(&[Message::Assistant(stream.finish())]);
    assert_eq!(
        contents[0]["parts"],
        json!([
            {"text": "Two cities.", "thought": true},
            {"text": "Checking.", "thoughtSignature": "dGV4dA=="},
            {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}, "thoughtSignature": "Z2Vt"},
        ])
    );
}

#[test]
fn chat_reasoning_content_goes_back_only_to_chat() {
    let original = conversation_with_reasoning();
    let chat = openai::chat::messages(&original);
    assert_only_own_reasoning(WireFormat::OpenAiChat, &json!(chat));
    assert_eq!(chat[2]["reasoning_content"], "Two cities.");
    let back = decoded(openai::chat::from_messages(&chat).unwrap());
    assert_eq!(
        back,
        without_error_flags(only(WireFormat::OpenAiChat, &original))
    );
}

#[test]
fn responses_reasoning_items_go_back_before_their_calls_and_only_to_responses() {
    let original = conversation_with_reasoning();
    let input = openai::responses::messages(&original);
    assert_only_own_reasoning(WireFormat::OpenAiResponses, &json!(input));
    let kinds: Vec<(&Value, &Value)> = input[2..6]
        .iter()
        .map(|item| (&item["type"], &item["id"]))
        .collect();
    assert_eq!(
        kinds,
        [
            (&json!("reasoning"), &json!("rs_1")),
            (&Value::Null, &Value::Null),
            (&json!("function_call"), &json!("fc_1")),
            (&json!("function_call"), &json!("fc_2")),
        ],
        "reasoning first, then the text, then calls paired by their item ids"
    );
    let back = decoded(openai::responses::from_messages(&input).unwrap());
    assert_eq!(
        back,
        without_error_flags(only(WireFormat::OpenAiResponses, &original))
    );
}

/// A Responses call keeps its item id only beside the reasoning it pairs
/// with: the API refuses a paired call whose reasoning is missing.
#[test]
fn a_responses_call_loses_its_item_id_without_its_reasoning() {
    let mut conversation = only(WireFormat::OpenAiResponses, &conversation_with_reasoning());
    let Message::Assistant(turn) = &mut conversation[2] else {
        unreachable!()
    };
    turn.reasoning
        .retain(|piece| !matches!(piece.place, ReasoningPlace::Entry { .. }));
    let input = openai::responses::messages(&conversation);
    assert!(
        input.iter().all(|item| item.get("id").is_none()),
        "{input:?}"
    );
}

/// Reasoning that came between calls goes back between them; the text
/// goes after the reasoning that came before every call.
#[test]
fn reasoning_goes_back_where_it_came() {
    let response = json!({"output": [
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA1"},
        {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a", "arguments": "{}"},
        {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAA2"},
        {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "b", "arguments": "{}"},
    ]});
    let turn = openai::responses::parse_response(&response).unwrap();
    assert_eq!(
        openai::responses::messages(&[Message::Assistant(turn)]),
        response["output"].as_array().unwrap().clone()
    );
}

/// A reasoning item that came without its encrypted content or its text
/// (the model was not asked for it) does not go back in a request that is
/// not stored, where the API would look it up by its id and refuse it; its
/// calls go without their item ids, which paired them with it. In a stored
/// request it goes back as it came. A hosted search's items, not reasoning,
/// neither go nor pair.
#[test]
fn reasoning_that_cannot_go_back_stays_out_of_unstored_requests() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Hm."}]});
    let search = json!({"type": "tool_search_call", "id": "ts_1", "call_id": null,
        "execution": "server", "arguments": {"paths": ["crm"]}, "status": "completed"});
    let call = json!({"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "a", "arguments": "{}"});
    let response = json!({"output": [search, reasoning, call]});
    let turn = [Message::Assistant(
        openai::responses::parse_response(&response).unwrap(),
    )];
    assert_eq!(
        openai::responses::unstored_messages(&turn),
        [
            search.clone(),
            json!({"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"})
        ]
    );
    assert_eq!(
        openai::responses::messages(&turn),
        response["output"].as_array().unwrap().clone()
    );
    // Its text in plain `content` (DeepSeek's) goes back.
    let plain = json!({"type": "reasoning", "id": "r1", "summary": [],
        "content": [{"type": "reasoning_text", "text": "Call a."}]});
    let response = json!({"output": [plain, call]});
    let turn = [Message::Assistant(
        openai::responses::parse_response(&response).unwrap(),
    )];
    assert_eq!(
        openai::responses::unstored_messages(&turn),
        response["output"].as_array().unwrap().clone()
    );
}

#[test]
fn a_chat_stream_keeps_its_reasoning_content() {
    let mut stream = openai::chat::Stream::new();
    for delta in [
        json!({"role": "assistant", "content": null, "reasoning_content": ""}),
        json!({"content": null, "reasoning_content": "Two"}),
        json!({"content": null, "reasoning_content": " cities."}),
        json!({"tool_calls": [{"index": 0, "id": "c1", "function": {"name": "get_weather", "arguments": "{}"}}]}),
        json!({"content": "", "reasoning_content": null}),
    ] {
        stream
            .push(&json!({"choices": [{"delta": delta}]}))
            .unwrap();
    }
    let message = openai::chat::messages(&[Message::Assistant(stream.finish())]).remove(0);
    assert_eq!(message["reasoning_content"], "Two cities.");
}

#[test]
fn a_responses_stream_keeps_reasoning_items_whole_and_pairs_calls_after_them() {
    let reasoning = json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Two cities."}], "encrypted_content": "gAAA"});
    let call = |arguments: &str| json!({"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "get_weather", "arguments": arguments});
    let mut stream = openai::responses::Stream::new();
    for event in [
        json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
        json!({"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Two"}),
        json!({"type": "response.output_item.done", "output_index": 0, "item": reasoning}),
        json!({"type": "response.output_item.added", "output_index": 1, "item": call("")}),
        json!({"type": "response.function_call_arguments.delta", "output_index": 1, "delta": "{}"}),
        json!({"type": "response.output_item.done", "output_index": 1, "item": call("{}")}),
    ] {
        stream.push(&event).unwrap();
    }
    assert_eq!(
        openai::responses::messages(&[Message::Assistant(stream.finish())]),
        [
            reasoning,
            json!({"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "get_weather", "arguments": "{}"}),
        ]
    );
}

#[test]
fn messages_saved_before_reasoning_still_load() {
    let saved = json!({"role": "assistant", "text": "Checking.", "tool_calls": [
        {"call_id": "c1", "tool_name": "get_weather", "arguments": {"city": "Paris"}}
    ]});
    let message: Message = serde_json::from_value(saved.clone()).unwrap();
    let Message::Assistant(turn) = &message else {
        panic!("{message:?}")
    };
    assert!(turn.reasoning.is_empty());
    assert_eq!(serde_json::to_value(&message).unwrap(), saved);

    let with_reasoning = conversation_with_reasoning();
    let saved = serde_json::to_value(&with_reasoning).unwrap();
    assert_eq!(saved[2]["reasoning"][2]["provider"], "openai_responses");
    assert_eq!(
        saved[2]["reasoning"][3]["place"],
        json!({"kind": "call", "call_id": "c1"})
    );
    let loaded: Vec<Message> = serde_json::from_value(saved).unwrap();
    assert_eq!(loaded, with_reasoning);
}

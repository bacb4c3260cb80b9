use serde_json::{json, Value};

use super::*;
use crate::conversation::ModelDelta;
use crate::providers::StreamAssembler;

/// A Converse response as the API documents it: reasoning, text, a tool
/// call, the stop reason and usage with cache counts.
fn response() -> Value {
    json!({
        "output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "Look it up.", "signature": "sig=="}}},
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Oslo"}}}
        ]}},
        "stopReason": "tool_use",
        "usage": {"inputTokens": 12, "outputTokens": 30, "totalTokens": 142,
                  "cacheReadInputTokens": 100, "cacheWriteInputTokens": 0},
        "metrics": {"latencyMs": 420}
    })
}

#[test]
fn a_whole_response_is_read() {
    let message = parse_response(&response()).unwrap();
    assert_eq!(message.text.as_deref(), Some("Checking."));
    assert_eq!(message.tool_calls.len(), 1);
    assert_eq!(message.tool_calls[0].call_id, "tooluse_1");
    assert_eq!(message.tool_calls[0].arguments, json!({"city": "Oslo"}));
    assert_eq!(message.stop.as_ref().unwrap().raw, "tool_use");
    let usage = message.usage.unwrap();
    assert_eq!(
        (usage.input_tokens, usage.output_tokens, usage.cached_tokens),
        (12, 30, 100)
    );
    assert!(message.has_reasoning_entries(WireFormat::Bedrock));
    assert!(parse_response(&json!({"output": {}}))
        .unwrap_err()
        .to_string()
        .contains("output.message.content"));
}

/// The events of the same answer, as ConverseStream sends them, give the
/// same message; the pieces come as they arrive.
#[test]
fn a_stream_gives_the_whole_response_s_message() {
    let events = [
        json!({"messageStart": {"role": "assistant"}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "Look "}}}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"text": "it up."}}}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"reasoningContent": {"signature": "sig=="}}}}),
        json!({"contentBlockStop": {"contentBlockIndex": 0}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "Check"}}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 1, "delta": {"text": "ing."}}}),
        json!({"contentBlockStop": {"contentBlockIndex": 1}}),
        json!({"contentBlockStart": {"contentBlockIndex": 2, "start": {"toolUse": {"toolUseId": "tooluse_1", "name": "weather"}}}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "{\"city\": "}}}}),
        json!({"contentBlockDelta": {"contentBlockIndex": 2, "delta": {"toolUse": {"input": "\"Oslo\"}"}}}}),
        json!({"contentBlockStop": {"contentBlockIndex": 2}}),
        json!({"messageStop": {"stopReason": "tool_use"}}),
        json!({"metadata": {"usage": {"inputTokens": 12, "outputTokens": 30, "totalTokens": 142,
               "cacheReadInputTokens": 100, "cacheWriteInputTokens": 0}, "metrics": {"latencyMs": 420}}}),
    ];
    let mut stream = Stream::new();
    let mut pieces = Vec::new();
    let mut ended = false;
    for event in &events {
        let pushed = stream.push(event).unwrap();
        ended |= pushed.ended;
        pieces.extend(pushed.deltas);
    }
    assert!(ended);
    assert_eq!(stream.finish(), parse_response(&response()).unwrap());
    assert_eq!(pieces[0], ModelDelta::Reasoning("Look ".into()));
    assert!(pieces.contains(&ModelDelta::Text("ing.".into())));
    assert!(pieces.contains(&ModelDelta::ToolCall {
        index: 2,
        id: Some("tooluse_1".into()),
        name: Some("weather".into()),
        arguments: String::new()
    }));

    // A delta for a call that never started is a broken stream.
    let mut broken = Stream::new();
    let orphan = json!({"contentBlockDelta": {"contentBlockIndex": 4, "delta": {"toolUse": {"input": "{}"}}}});
    assert!(broken
        .push(&orphan)
        .unwrap_err()
        .to_string()
        .contains("did not start"));
    // An exception is the stream's error.
    let error = json!({"error": {"type": "throttlingException", "message": "slow down"}});
    assert!(Stream::new().push(&error).unwrap().error.is_some());
}

#[test]
fn a_conversation_goes_out_in_converse_s_shape_and_back() {
    let mut turn = parse_response(&response()).unwrap();
    turn.usage = None;
    turn.stop = None;
    let conversation = vec![
        Message::System {
            text: "Be brief.".into(),
        },
        Message::UserParts {
            parts: vec![
                ContentPart::text("What is this?"),
                ContentPart::Image {
                    source: MediaSource::base64("image/png", "iVBORw0KGgo="),
                },
                ContentPart::Document {
                    source: MediaSource::base64("application/pdf", "JVBERi0="),
                },
            ],
        },
        Message::Assistant(turn),
        Message::ToolResult(ToolResultMessage::new("tooluse_1", "weather", "12 °C")),
    ];
    let (system, messages) = super::messages(&conversation).unwrap();
    assert_eq!(system, vec![json!({"text": "Be brief."})]);
    assert_eq!(
        messages[0]["content"][1],
        json!({"image": {"format": "png", "source": {"bytes": "iVBORw0KGgo="}}})
    );
    assert_eq!(
        messages[0]["content"][2],
        json!({"document": {"format": "pdf", "name": "document-1", "source": {"bytes": "JVBERi0="}}})
    );
    // The signed reasoning goes back first, as it came.
    assert_eq!(
        messages[1]["content"][0],
        json!({"reasoningContent": {"reasoningText": {"text": "Look it up.", "signature": "sig=="}}})
    );
    assert_eq!(
        messages[2]["content"][0],
        json!({"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "12 °C"}], "status": "success"}})
    );
    let back = from_messages(&system, &messages).unwrap();
    assert_eq!(back, conversation);
}

#[test]
fn media_bedrock_cannot_take_is_an_error_not_a_loss() {
    let at_url = vec![Message::UserParts {
        parts: vec![ContentPart::Image {
            source: MediaSource::url("https://example.com/cat.png"),
        }],
    }];
    let error = super::messages(&at_url).unwrap_err().to_string();
    assert!(
        error.contains("s3://") && error.contains("base64"),
        "{error}"
    );
    let tiff = vec![Message::UserParts {
        parts: vec![ContentPart::Image {
            source: MediaSource::base64("image/tiff", "AAAA"),
        }],
    }];
    let error = super::messages(&tiff).unwrap_err().to_string();
    assert!(error.contains("image/tiff"), "{error}");
    let from_s3 = vec![Message::UserParts {
        parts: vec![ContentPart::Image {
            source: MediaSource::Url {
                url: "s3://bucket/cat.jpg".into(),
                media_type: Some("image/jpeg".into()),
            },
        }],
    }];
    let (_, messages) = super::messages(&from_s3).unwrap();
    assert_eq!(
        messages[0]["content"][0]["image"]["source"],
        json!({"s3Location": {"uri": "s3://bucket/cat.jpg"}})
    );
}

#[test]
fn cache_points_close_the_tools_the_system_and_the_conversation() {
    let mut body = json!({
        "system": [{"text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"text": "Hi"}]}],
        "toolConfig": {"tools": [{"toolSpec": {"name": "t"}}]},
    });
    mark_cache_points(body.as_object_mut().unwrap());
    let point = json!({"cachePoint": {"type": "default"}});
    assert_eq!(body["system"][1], point);
    assert_eq!(body["messages"][0]["content"][1], point);
    assert_eq!(body["toolConfig"]["tools"][1], point);
    assert_eq!(parse_tools(&body).unwrap().len(), 1);
}

#[test]
fn stop_reasons_mean_what_bedrock_says() {
    use crate::conversation::StopKind;
    for (raw, kind) in [
        ("end_turn", StopKind::Completed),
        ("tool_use", StopKind::Completed),
        ("max_tokens", StopKind::MaxTokens),
        ("model_context_window_exceeded", StopKind::ContextWindow),
        ("guardrail_intervened", StopKind::Filtered),
        ("content_filtered", StopKind::Filtered),
        ("malformed_tool_use", StopKind::MalformedCall),
        ("malformed_model_output", StopKind::MalformedCall),
        ("something_new", StopKind::Other),
    ] {
        assert_eq!(stop_reason(raw).kind, kind, "{raw}");
        assert_eq!(stop_reason(raw).raw, raw);
    }
}

/// Text for a block that started as a tool call is a broken stream, read
/// straight or through a `Value` alike.
#[test]
fn text_in_a_tool_block_is_an_error() {
    let start = json!({"contentBlockStart": {"contentBlockIndex": 0,
        "start": {"toolUse": {"toolUseId": "t1", "name": "get_weather"}}}});
    let text = json!({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": "oops"}}});
    let mut stream = Stream::new();
    stream.push(&start).unwrap();
    let error = stream.push(&text).unwrap_err().to_string();
    assert!(error.contains("holds something else"), "{error}");
    let mut fast = Stream::new();
    fast.push(&start).unwrap();
    assert!(fast.push_json(&text.to_string()).is_none());
}

/// A tool's image at a web URL cannot go to Bedrock: its result says what
/// was left out, rather than dropping it unsaid.
#[test]
fn a_result_s_media_bedrock_cannot_take_is_named_in_its_text() {
    use crate::tool::ToolOutput;
    let output =
        ToolOutput::text("The chart.").with_image(MediaSource::url("https://example.com/c.png"));
    let result = ToolCallResult {
        call_id: "c1".into(),
        tool_name: "chart".into(),
        outcome: Ok(output),
    };
    let block = super::result(&result);
    let text = block["toolResult"]["content"][0]["text"].as_str().unwrap();
    // A document it can take is named, as in a conversation.
    let pdf =
        ToolOutput::text("The invoice.").with_attachment(crate::tool::Attachment::blob_resource(
            "file:///invoice.pdf",
            "application/pdf",
            "JVBERi0=",
        ));
    let invoice = super::result(&ToolCallResult {
        call_id: "c2".into(),
        tool_name: "invoice".into(),
        outcome: Ok(pdf),
    });
    assert_eq!(
        invoice["toolResult"]["content"][1]["document"]["name"], "document-1",
        "{invoice}"
    );
    assert!(
        text.starts_with("The chart.") && text.contains("left out") && text.contains("s3://"),
        "{text}"
    );
}

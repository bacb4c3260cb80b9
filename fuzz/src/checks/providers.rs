//! Arbitrary JSON through every provider reader: responses, tool lists,
//! conversations, and stream events fed one by one to each assembler.
//! Each reads or refuses; none panics.

use behest::providers::{anthropic, gemini, openai, StreamAssembler};
use serde_json::Value;

pub fn check(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = openai::chat::parse_response(&value);
    let _ = openai::responses::parse_response(&value);
    let _ = anthropic::parse_response(&value);
    let _ = gemini::parse_response(&value);
    let _ = openai::chat::parse_tools(&value);
    let _ = openai::responses::parse_tools(&value);
    let _ = anthropic::parse_tools(&value);
    let _ = gemini::parse_tools(&value);
    let items: &[Value] = value.as_array().map_or(&[], Vec::as_slice);
    if let Ok(conversation) = openai::chat::from_messages(items) {
        let _ = openai::chat::messages(&conversation);
    }
    if let Ok(conversation) = openai::responses::from_messages(items) {
        let _ = openai::responses::messages(&conversation);
    }
    let system = value.get("system");
    if let Ok(conversation) = anthropic::from_messages(system, items) {
        let _ = anthropic::messages(&conversation);
    }
    if let Ok(conversation) = gemini::from_messages(system, items) {
        let _ = gemini::messages(&conversation);
    }
    // Each element an event of a stream, to every assembler.
    let mut chat = openai::chat::Stream::new();
    let mut responses = openai::responses::Stream::new();
    let mut messages = anthropic::Stream::new();
    let mut gemini_stream = gemini::Stream::new();
    for event in items {
        let _ = chat.push(event);
        let _ = responses.push(event);
        let _ = messages.push(event);
        let _ = gemini_stream.push(event);
    }
    let _ = chat.finish();
    let _ = responses.finish();
    let _ = messages.finish();
    let _ = gemini_stream.finish();
}

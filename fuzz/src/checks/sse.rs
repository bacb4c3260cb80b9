//! A streamed body in arbitrary bytes and chunking through the SSE path
//! the model clients read (the same parser, slicing and JSON reading), its
//! events then to every stream assembler. The events do not depend on how
//! the body was cut.

use behest::providers::{openai, StreamAssembler};

/// The first byte says how long the pieces are that the rest is cut into
/// (1 to 256 bytes), besides the body whole.
pub fn check(data: &[u8]) {
    let Some((body, whole)) = super::read_whole_and_cut(data, behest::models::sse_events) else {
        return;
    };
    if let Ok(events) = behest::models::sse_data(vec![bytes::Bytes::copy_from_slice(body)]) {
        chat_chunks_read_straight(&events);
    }
    let Ok(events) = whole else {
        return;
    };
    super::through_every_assembler(events.iter().map(|(_name, event)| event));
}

/// The events as Chat Completions chunks, in order: read straight from
/// their text, they add what they add through a `Value`.
fn chat_chunks_read_straight(events: &[(String, String)]) {
    let (mut fast, mut slow) = (openai::chat::Stream::new(), openai::chat::Stream::new());
    for (_name, text) in events {
        // serde reads past a skipped field without decoding it: a lone
        // surrogate, a number out of range or deep nesting there fails
        // only the `Value`, which ends the stream.
        let Ok(value) = serde_json::from_str::<serde_json::Value>(text) else {
            return;
        };
        let expected = slow.push(&value).map_err(|error| error.to_string());
        let got = match fast.push_json(text) {
            Some(pushed) => pushed,
            None => fast.push(&value),
        };
        assert_eq!(got.map_err(|error| error.to_string()), expected, "{text}");
    }
    assert_eq!(fast.finish(), slow.finish(), "{events:?}");
}

//! A streamed body in arbitrary bytes and chunking through the SSE path
//! the model clients read (the same parser, slicing and JSON reading), its
//! events then to every stream assembler. The events do not depend on how
//! the body was cut.

use behest::providers::{anthropic, gemini, openai, StreamAssembler};

/// The first byte says how long the pieces are that the rest is cut into
/// (1 to 256 bytes), besides the body whole.
pub fn check(data: &[u8]) {
    let Some((&piece, body)) = data.split_first() else {
        return;
    };
    let whole = behest::models::sse_events(vec![bytes::Bytes::copy_from_slice(body)]);
    let piece = usize::from(piece) + 1;
    let chunks = body
        .chunks(piece)
        .map(bytes::Bytes::copy_from_slice)
        .collect();
    let cut_events = behest::models::sse_events(chunks);
    match (&whole, &cut_events) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "pieces of {piece}"),
        (Err(_), Err(_)) => {}
        _ => panic!("pieces of {piece}: {whole:?} / {cut_events:?}"),
    }
    chat_chunk_read_straight(body);
    let Ok(events) = whole else {
        return;
    };
    let mut chat = openai::ChatStream::new();
    let mut responses = openai::ResponsesStream::new();
    let mut messages = anthropic::Stream::new();
    let mut gemini_stream = gemini::Stream::new();
    for (_name, event) in &events {
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
}

/// The body as one Chat Completions chunk: read straight from its text,
/// it adds what it adds through a `Value`.
fn chat_chunk_read_straight(body: &[u8]) {
    let Ok(text) = std::str::from_utf8(body) else {
        return;
    };
    let (mut fast, mut slow) = (openai::ChatStream::new(), openai::ChatStream::new());
    let Some(pushed) = fast.push_json(text) else {
        return;
    };
    let value: serde_json::Value = serde_json::from_str(text).expect("text read straight is JSON");
    let expected = slow.push(&value);
    assert_eq!(
        pushed.map_err(|error| error.to_string()),
        expected.map_err(|error| error.to_string()),
        "{text}"
    );
    assert_eq!(fast.finish(), slow.finish(), "{text}");
}

//! A streamed body in arbitrary bytes and chunking through the AWS
//! event-stream path Bedrock's client reads (the frames, their checksums,
//! the JSON of each event), its events then to every stream assembler. The
//! events do not depend on how the body was cut, and Bedrock's assembler
//! adds the same for an event read straight from its text as through a
//! `Value`.

use behest::providers::{bedrock, StreamAssembler};

/// The first byte says how long the pieces are that the rest is cut into
/// (1 to 256 bytes), besides the body whole.
pub fn check(data: &[u8]) {
    let Some((_, Ok(events))) = super::read_whole_and_cut(data, behest::models::eventstream_events)
    else {
        return;
    };
    super::through_every_assembler(events.iter().map(|(_kind, event)| event));
    read_straight(events.iter().map(|(_kind, event)| event));
}

/// The events through Bedrock's assembler twice: read from their text
/// where it can, and through a `Value`; the same pieces and message.
fn read_straight<'a>(events: impl Iterator<Item = &'a serde_json::Value>) {
    let (mut fast, mut slow) = (bedrock::Stream::new(), bedrock::Stream::new());
    for event in events {
        let text = event.to_string();
        let expected = slow.push(event).map_err(|error| error.to_string());
        let got = match fast.push_json(&text) {
            Some(pushed) => pushed,
            None => fast.push(event),
        };
        assert_eq!(got.map_err(|error| error.to_string()), expected, "{text}");
    }
    assert_eq!(fast.finish(), slow.finish());
}

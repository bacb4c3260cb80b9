//! AWS event-stream frames, as Bedrock's ConverseStream sends them, for the
//! stand-ins of the tests and benchmarks (written by
//! `aws-smithy-eventstream`, the AWS SDKs' own framing).

use aws_smithy_types::event_stream::{Header, HeaderValue, Message as Frame};

/// One frame: a modelled event (`message_type` `event`, its `kind` the
/// `:event-type`) or an exception (`exception`, its `kind` the
/// `:exception-type`), its payload JSON.
pub fn frame(message_type: &str, kind: &str, payload: &serde_json::Value) -> Vec<u8> {
    let type_header = if message_type == "exception" {
        ":exception-type"
    } else {
        ":event-type"
    };
    let frame = Frame::new(payload.to_string().into_bytes())
        .add_header(Header::new(
            type_header,
            HeaderValue::String(kind.to_owned().into()),
        ))
        .add_header(Header::new(
            ":content-type",
            HeaderValue::String("application/json".into()),
        ))
        .add_header(Header::new(
            ":message-type",
            HeaderValue::String(message_type.to_owned().into()),
        ));
    let mut bytes = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&frame, &mut bytes)
        .expect("a frame within the framing's limits");
    bytes
}

//! AWS event-stream framing (`application/vnd.amazon.eventstream`), as
//! Bedrock's ConverseStream sends it: binary frames, each with a prelude
//! (lengths and their CRC32), headers, a payload and the frame's CRC32.
//! `aws-smithy-eventstream` reads the frames and checks both checksums;
//! this turns each into the JSON event the stream assembler reads.

use std::ops::ControlFlow;

use aws_smithy_eventstream::frame::{DecodedFrame, MessageFrameDecoder};
use aws_smithy_types::event_stream::{HeaderValue, Message};
use bytes::{Buf, BytesMut};

use crate::model::ModelError;

/// The longest frame AWS sends (its event-stream limit, 16 MiB): a longer
/// length is a garbled prelude, not a frame to wait for.
const MAX_FRAME: u32 = 16 * 1024 * 1024;

/// A frame's prelude: its length, its headers' length and their CRC32.
const PRELUDE: usize = 12;

/// Reads frames from the chunks of a body as they arrive.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    frames: MessageFrameDecoder,
    buffer: BytesMut,
    /// The JSON text of the event handed on, reused from frame to frame.
    event: String,
    /// The bytes of a frame begun and not yet whole.
    pending: usize,
    /// Whether the next frame's prelude was checked.
    prelude_checked: bool,
}

impl Decoder {
    /// Reads `chunk`, handing each event it completes to `on_event` with its
    /// type and its JSON (`{"<type>": <payload>}`), until `on_event` breaks
    /// or the chunk is read. A frame whose checksum fails, or whose payload
    /// is not UTF-8, is an error: the stream was garbled, and the same
    /// request may stream whole the next time.
    pub(crate) fn feed(
        &mut self,
        chunk: &[u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<ControlFlow<()>, ModelError>,
    ) -> Result<ControlFlow<()>, ModelError> {
        self.buffer.extend_from_slice(chunk);
        self.pending = self.pending.saturating_add(chunk.len());
        loop {
            if !self.prelude_checked {
                if self.buffer.len() < PRELUDE {
                    return Ok(ControlFlow::Continue(()));
                }
                check_prelude(&self.buffer[..PRELUDE])?;
                self.prelude_checked = true;
            }
            let frame = self
                .frames
                .decode_frame(&mut self.buffer)
                .map_err(|error| garbled(&error))?;
            let message = match frame {
                DecodedFrame::Incomplete => return Ok(ControlFlow::Continue(())),
                DecodedFrame::Complete(message) => message,
            };
            self.pending = self.buffer.len();
            self.prelude_checked = false;
            let (kind, flow) = self.event_of(&message)?;
            if on_event(&kind, &self.event)?.is_break() || flow.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
    }

    /// At the end of the body: a frame begun and not finished means the
    /// stream was cut.
    pub(crate) fn finish(&self) -> Result<(), ModelError> {
        if self.pending == 0 {
            return Ok(());
        }
        Err(ModelError::new(format!(
            "the model's event stream ended inside a frame ({} bytes of it came)",
            self.pending
        ))
        .retryable(true))
    }

    /// Writes the JSON of `message` into `self.event`; gives the event's
    /// type, and whether the stream ends with it (an exception or error).
    fn event_of(&mut self, message: &Message) -> Result<(String, ControlFlow<()>), ModelError> {
        let payload = std::str::from_utf8(message.payload().chunk()).map_err(|_| {
            ModelError::new("the model's stream sent an event whose payload is not UTF-8")
                .retryable(true)
        })?;
        self.event.clear();
        match header(message, ":message-type").unwrap_or("event") {
            "event" => {
                let kind = header(message, ":event-type").unwrap_or("unknown");
                let name = serde_json::to_string(kind).unwrap_or_else(|_| "\"unknown\"".into());
                let payload = if payload.trim().is_empty() {
                    "{}"
                } else {
                    payload
                };
                self.event.push('{');
                self.event.push_str(&name);
                self.event.push(':');
                self.event.push_str(payload);
                self.event.push('}');
                Ok((kind.to_owned(), ControlFlow::Continue(())))
            }
            // `exception`: a modelled error (`:exception-type`) with its
            // message in the payload; `error`: an unmodelled one, all in
            // headers.
            kind => {
                let (error_type, message_text) = if kind == "exception" {
                    let parsed: Option<serde_json::Value> = serde_json::from_str(payload).ok();
                    let text = parsed
                        .as_ref()
                        .and_then(|value| value.get("message").or_else(|| value.get("Message")))
                        .and_then(serde_json::Value::as_str)
                        .map_or_else(|| payload.to_owned(), str::to_owned);
                    (
                        header(message, ":exception-type").unwrap_or("exception"),
                        text,
                    )
                } else {
                    (
                        header(message, ":error-code").unwrap_or("error"),
                        header(message, ":error-message")
                            .unwrap_or("the stream reported an error")
                            .to_owned(),
                    )
                };
                let error =
                    serde_json::json!({"error": {"type": error_type, "message": message_text}});
                self.event.push_str(&error.to_string());
                Ok(("error".to_owned(), ControlFlow::Break(())))
            }
        }
    }
}

/// A prelude's checksum and length, before the frame is waited for: the
/// frame reader checks the checksum only once the whole frame came, which a
/// garbled length could put off until gigabytes had.
fn check_prelude(prelude: &[u8]) -> Result<(), ModelError> {
    let word = |at: usize| {
        u32::from_be_bytes([
            prelude[at],
            prelude[at + 1],
            prelude[at + 2],
            prelude[at + 3],
        ])
    };
    if crc32fast::hash(&prelude[..8]) != word(8) {
        return Err(ModelError::new(
            "the model's event stream sent a frame whose prelude checksum does not hold",
        )
        .retryable(true));
    }
    if word(0) > MAX_FRAME {
        return Err(ModelError::new(format!(
            "the model's event stream sent a frame of {} bytes, more than the 16 MiB AWS sends",
            word(0)
        ))
        .retryable(true));
    }
    Ok(())
}

/// A string header of a frame.
fn header<'m>(message: &'m Message, name: &str) -> Option<&'m str> {
    message
        .headers()
        .iter()
        .find(|header| header.name().as_str() == name)
        .and_then(|header| match header.value() {
            HeaderValue::String(value) => Some(value.as_str()),
            _ => None,
        })
}

fn garbled(error: &aws_smithy_eventstream::error::Error) -> ModelError {
    ModelError::new(format!(
        "the model's event stream sent a frame that could not be read: {error}"
    ))
    .retryable(true)
}

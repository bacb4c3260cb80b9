//! Server-sent events, read as the HTML standard's event-stream parsing
//! has it (<https://html.spec.whatwg.org/multipage/server-sent-events.html>):
//! lines end with `\r\n`, `\n` or `\r`; a blank line dispatches the event
//! of the `data` lines before it (joined with `\n`) and its `event` type
//! (`message` when none came); lines starting with `:` are comments; a
//! leading byte-order mark is skipped; an event the body stops in the
//! middle of is dropped.
//!
//! Written for the model clients' streams, which are many small events:
//! lines are found with `memchr`, and an event whose one `data` line lies
//! in the chunk at hand is handed over as a slice of it, with no copy.
//! Only a line cut between two chunks is buffered.

use std::fmt;
use std::ops::ControlFlow;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A line a client reads (`data`, `event`) that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotUtf8;

impl fmt::Display for NotUtf8 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a line of the event stream is not UTF-8")
    }
}

impl std::error::Error for NotUtf8 {}

/// Reads a body's events chunk by chunk; see the module's documentation.
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    /// The start of a line the chunks so far did not end (and, before
    /// the first line, bytes that may begin a byte-order mark).
    partial: Vec<u8>,
    /// The last chunk ended with `\r`: a `\n` first in the next ends no
    /// second line.
    after_cr: bool,
    /// The first line has begun: a byte-order mark is no longer looked for.
    started: bool,
    /// The event's data lines so far, joined with `\n`, when they did not
    /// come as one line in the chunk that ends the event.
    data: String,
    /// A `data` line has come (an empty one counts).
    has_data: bool,
    /// The event's type, empty for `message`.
    event: String,
}

/// The one `data` line of an event, while it lies in the chunk at hand.
type Single<'c> = Option<&'c str>;

impl Decoder {
    /// Reads `chunk`, handing each event it completes to `on_event` with
    /// its type and data, until `on_event` breaks (then the rest is
    /// ignored) or the chunk is read.
    pub fn feed<'c, E: From<NotUtf8>>(
        &mut self,
        mut chunk: &'c [u8],
        on_event: &mut impl FnMut(&str, &str) -> Result<ControlFlow<()>, E>,
    ) -> Result<ControlFlow<()>, E> {
        if !self.started {
            // Up to three bytes wait here until they tell whether they
            // are a byte-order mark.
            let wanted = (BOM.len() - self.partial.len()).min(chunk.len());
            self.partial.extend_from_slice(&chunk[..wanted]);
            chunk = &chunk[wanted..];
            if self.partial.len() < BOM.len() && BOM.starts_with(&self.partial) {
                return Ok(ControlFlow::Continue(()));
            }
            self.started = true;
            let head = std::mem::take(&mut self.partial);
            if head != BOM && self.feed(&head, on_event)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        if self.after_cr && !chunk.is_empty() {
            self.after_cr = false;
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        let mut single: Single<'c> = None;
        let mut rest = chunk;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let (line, after) = (&rest[..end], &rest[end + 1..]);
            rest = match (rest[end], after.first()) {
                (b'\r', Some(b'\n')) => &after[1..],
                (b'\r', None) => {
                    self.after_cr = true;
                    after
                }
                _ => after,
            };
            let flow = if self.partial.is_empty() {
                self.line(line, Some(&mut single), on_event)?
            } else {
                // A line begun in an earlier chunk, read from the buffer:
                // only a chunk's first line can be, before any line of
                // the chunk set `single`.
                let mut whole = std::mem::take(&mut self.partial);
                whole.extend_from_slice(line);
                let flow = self.line(&whole, None, on_event);
                whole.clear();
                self.partial = whole;
                flow?
            };
            if flow.is_break() {
                return Ok(flow);
            }
        }
        self.partial.extend_from_slice(rest);
        // The event goes on in the next chunk: its data leaves this one.
        if let Some(data) = single {
            self.data.push_str(data);
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Reads one line; a blank one dispatches the event. A `data` line
    /// may stay in `single` when it lies in the chunk at hand (`Some`);
    /// one read from the buffer is copied at once.
    fn line<'l, E: From<NotUtf8>>(
        &mut self,
        line: &'l [u8],
        single: Option<&mut Single<'l>>,
        on_event: &mut impl FnMut(&str, &str) -> Result<ControlFlow<()>, E>,
    ) -> Result<ControlFlow<()>, E> {
        if line.is_empty() {
            return self.dispatch(single.and_then(Option::take), on_event);
        }
        let (field, value) = match memchr::memchr(b':', line) {
            // A comment.
            Some(0) => return Ok(ControlFlow::Continue(())),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                let first = !self.has_data;
                self.has_data = true;
                match single {
                    Some(single) if first => *single = Some(value),
                    single => {
                        if let Some(earlier) = single.and_then(Option::take) {
                            self.data.push_str(earlier);
                        }
                        if !first {
                            self.data.push('\n');
                        }
                        self.data.push_str(value);
                    }
                }
            }
            b"event" => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                self.event.clear();
                self.event.push_str(value);
            }
            // `id` and `retry` serve reconnection, which a model's answer
            // does not use; other fields are ignored, as the standard says.
            _ => {}
        }
        Ok(ControlFlow::Continue(()))
    }

    /// Hands the event over, if a `data` line came, and starts the next.
    fn dispatch<E>(
        &mut self,
        single: Single<'_>,
        on_event: &mut impl FnMut(&str, &str) -> Result<ControlFlow<()>, E>,
    ) -> Result<ControlFlow<()>, E> {
        let flow = if self.has_data {
            let event = if self.event.is_empty() {
                "message"
            } else {
                &self.event
            };
            on_event(event, single.unwrap_or(&self.data))
        } else {
            Ok(ControlFlow::Continue(()))
        };
        self.has_data = false;
        self.data.clear();
        self.event.clear();
        flow
    }
}

#[cfg(test)]
mod tests {
    use std::ops::ControlFlow;

    use super::{Decoder, NotUtf8};

    /// The events of `body` fed in `chunks`, or the error.
    fn events(chunks: &[&[u8]]) -> Result<Vec<(String, String)>, NotUtf8> {
        let mut decoder = Decoder::default();
        let mut events = Vec::new();
        for chunk in chunks {
            let flow = decoder.feed(chunk, &mut |event: &str, data: &str| {
                events.push((event.to_owned(), data.to_owned()));
                Ok::<_, NotUtf8>(ControlFlow::Continue(()))
            })?;
            assert!(flow.is_continue());
        }
        Ok(events)
    }

    fn pairs(events: &[(&str, &str)]) -> Vec<(String, String)> {
        events
            .iter()
            .map(|(event, data)| ((*event).to_owned(), (*data).to_owned()))
            .collect()
    }

    #[test]
    fn the_standard_s_examples_read_as_it_says() {
        // From the standard: data lines join with `\n`; a line with no
        // colon is a field with an empty value; one space is dropped.
        let body = b"data: YHOO\ndata: +2\ndata: 10\n\n: comment\n\ndata\n\ndata\ndata\n\ndata:\n\ndata:test\n\ndata:  two\n\n";
        assert_eq!(
            events(&[body]).unwrap(),
            pairs(&[
                ("message", "YHOO\n+2\n10"),
                ("message", ""),
                ("message", "\n"),
                ("message", ""),
                ("message", "test"),
                ("message", " two"),
            ])
        );
        // Events typed, types reset after each; an event the body stops
        // in is dropped; `id`, `retry` and unknown fields change nothing.
        let body = b"event: add\nid: 1\nretry: 10\nfoo: bar\ndata: 73857293\n\nevent: remove\n\ndata: 2\n\ndata: cut";
        assert_eq!(
            events(&[body]).unwrap(),
            pairs(&[("add", "73857293"), ("message", "2")])
        );
    }

    #[test]
    fn every_line_end_and_every_cut_give_the_same_events() {
        let body: &[u8] = b"\xEF\xBB\xBFevent: a\r\ndata: 1\r\ndata: 2\r\n\r\n: keep\rdata: 3\r\rdata: \xC3\xA9\n\n";
        let whole = events(&[body]).unwrap();
        assert_eq!(
            whole,
            pairs(&[("a", "1\n2"), ("message", "3"), ("message", "é")])
        );
        for cut in 0..=body.len() {
            let (a, b) = body.split_at(cut);
            assert_eq!(events(&[a, b]).unwrap(), whole, "cut at {cut}");
            for second in cut..=body.len() {
                let (b, c) = body[cut..].split_at(second - cut);
                assert_eq!(events(&[a, b, c]).unwrap(), whole, "cut at {cut}, {second}");
            }
        }
        let bytes: Vec<&[u8]> = body.chunks(1).collect();
        assert_eq!(events(&bytes).unwrap(), whole);
    }

    #[test]
    fn a_byte_order_mark_is_skipped_only_first() {
        assert_eq!(
            events(&[b"\xEF\xBB", b"\xBFdata: x\n\n"]).unwrap(),
            pairs(&[("message", "x")])
        );
        // Not first: part of the field name, which is then unknown.
        assert_eq!(events(&[b"\n\xEF\xBB\xBFdata: x\n\n"]).unwrap(), []);
        // Half a mark, then a line: the bytes are that line's.
        assert_eq!(events(&[b"\xEF\xBBdata: x\n\n"]).unwrap(), []);
        assert_eq!(
            events(&[b"da", b"ta: x\n\n"]).unwrap(),
            pairs(&[("message", "x")])
        );
    }

    #[test]
    fn a_line_a_client_reads_must_be_utf8_and_one_it_ignores_need_not() {
        assert_eq!(events(&[b"data: \xFF\n\n"]), Err(NotUtf8));
        assert_eq!(events(&[b"event: \xC3\n\n"]), Err(NotUtf8));
        assert_eq!(
            events(&[b": \xFF\n\xFE: x\ndata: 1\n\n"]).unwrap(),
            pairs(&[("message", "1")])
        );
    }

    #[test]
    fn a_break_stops_the_reading() {
        let mut decoder = Decoder::default();
        let mut seen = Vec::new();
        let flow = decoder
            .feed(b"data: 1\n\ndata: 2\n\n", &mut |_: &str, data: &str| {
                seen.push(data.to_owned());
                Ok::<_, NotUtf8>(ControlFlow::Break(()))
            })
            .unwrap();
        assert!(flow.is_break());
        assert_eq!(seen, ["1"]);
    }
}

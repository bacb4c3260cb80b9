//! The typed answer as it streams: a tolerant reader of JSON cut anywhere
//! ([`parse_partial`]), and the stream of partial values of the output
//! type a run gives while the model writes its answer ([`PartialOutput`]).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::events::{EventKind, EventStream, RunPhase};
use super::output::FINAL_ANSWER;
use crate::conversation::ModelDelta;

/// How deep a partial value may nest before the reader gives up on it.
const MAX_DEPTH: usize = 128;

/// Reads JSON text cut anywhere: the value as far as it goes. An open
/// string is closed with the text it has so far; open arrays and objects
/// are closed; a key without its value, and a number or `true`, `false`,
/// `null` that may still go on, are left out (a number cut at `12` may
/// be `125`). `None` when no value has begun, when the text is not JSON,
/// or past 128 levels of nesting. A whole object, array or string reads
/// as itself (a lone number, which may always go on, reads as nothing).
///
/// ```
/// use behest::run::parse_partial;
/// use serde_json::json;
///
/// assert_eq!(parse_partial(r#"{"title": "Rust", "tags": ["fa"#), Some(json!({"title": "Rust", "tags": ["fa"]})));
/// assert_eq!(parse_partial(r#"{"title": "Ru"#), Some(json!({"title": "Ru"})));
/// assert_eq!(parse_partial(r#"{"score": 12"#), Some(json!({})));
/// assert_eq!(parse_partial(r#"{"score": 12}"#), Some(json!({"score": 12})));
/// assert_eq!(parse_partial("not json"), None);
/// ```
pub fn parse_partial(text: &str) -> Option<Value> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        at: 0,
    };
    match reader.value(0).ok()? {
        Read::Whole(value) => Some(value),
        Read::Cut(value) => value,
    }
}

/// A value read, or the text ended inside it (with what could be kept).
enum Read {
    Whole(Value),
    Cut(Option<Value>),
}

/// The text is not JSON.
struct NotJson;

struct Reader<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn skip_space(&mut self) {
        while self
            .bytes
            .get(self.at)
            .is_some_and(|byte| byte.is_ascii_whitespace())
        {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<Read, NotJson> {
        if depth > MAX_DEPTH {
            return Err(NotJson);
        }
        self.skip_space();
        let Some(&byte) = self.bytes.get(self.at) else {
            return Ok(Read::Cut(None));
        };
        match byte {
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b'"' => Ok(match self.string()? {
                (text, true) => Read::Whole(Value::String(text)),
                (text, false) => Read::Cut(Some(Value::String(text))),
            }),
            b't' => self.literal("true", Value::Bool(true)),
            b'f' => self.literal("false", Value::Bool(false)),
            b'n' => self.literal("null", Value::Null),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(NotJson),
        }
    }

    fn object(&mut self, depth: usize) -> Result<Read, NotJson> {
        self.at += 1;
        let mut object = Map::new();
        loop {
            self.skip_space();
            match self.bytes.get(self.at) {
                None => return Ok(Read::Cut(Some(Value::Object(object)))),
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Read::Whole(Value::Object(object)));
                }
                Some(b'"') => {}
                Some(_) => return Err(NotJson),
            }
            let (key, whole) = self.string()?;
            self.skip_space();
            if !whole || self.at >= self.bytes.len() {
                return Ok(Read::Cut(Some(Value::Object(object))));
            }
            if self.bytes[self.at] != b':' {
                return Err(NotJson);
            }
            self.at += 1;
            match self.value(depth + 1)? {
                Read::Whole(value) => {
                    object.insert(key, value);
                }
                Read::Cut(value) => {
                    if let Some(value) = value {
                        object.insert(key, value);
                    }
                    return Ok(Read::Cut(Some(Value::Object(object))));
                }
            }
            self.skip_space();
            match self.bytes.get(self.at) {
                None => return Ok(Read::Cut(Some(Value::Object(object)))),
                Some(b',') => self.at += 1,
                Some(b'}') => {
                    self.at += 1;
                    return Ok(Read::Whole(Value::Object(object)));
                }
                Some(_) => return Err(NotJson),
            }
        }
    }

    fn array(&mut self, depth: usize) -> Result<Read, NotJson> {
        self.at += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space();
            match self.bytes.get(self.at) {
                None => return Ok(Read::Cut(Some(Value::Array(items)))),
                Some(b']') => {
                    self.at += 1;
                    return Ok(Read::Whole(Value::Array(items)));
                }
                Some(_) => {}
            }
            match self.value(depth + 1)? {
                Read::Whole(value) => items.push(value),
                Read::Cut(value) => {
                    items.extend(value);
                    return Ok(Read::Cut(Some(Value::Array(items))));
                }
            }
            self.skip_space();
            match self.bytes.get(self.at) {
                None => return Ok(Read::Cut(Some(Value::Array(items)))),
                Some(b',') => self.at += 1,
                Some(b']') => {
                    self.at += 1;
                    return Ok(Read::Whole(Value::Array(items)));
                }
                Some(_) => return Err(NotJson),
            }
        }
    }

    /// A string at `"`: its text, and whether it closed. A string cut
    /// inside an escape keeps the text before it.
    fn string(&mut self) -> Result<(String, bool), NotJson> {
        self.at += 1;
        let mut text = String::new();
        loop {
            let start = self.at;
            while self
                .bytes
                .get(self.at)
                .is_some_and(|byte| *byte != b'"' && *byte != b'\\')
            {
                self.at += 1;
            }
            // `"` and `\` are ASCII: both ends are on character boundaries.
            text.push_str(&self.text[start..self.at]);
            match self.bytes.get(self.at) {
                None => return Ok((text, false)),
                Some(b'"') => {
                    self.at += 1;
                    return Ok((text, true));
                }
                Some(_) => {
                    let Some(&escape) = self.bytes.get(self.at + 1) else {
                        self.at = self.bytes.len();
                        return Ok((text, false));
                    };
                    self.at += 2;
                    match escape {
                        b'"' => text.push('"'),
                        b'\\' => text.push('\\'),
                        b'/' => text.push('/'),
                        b'b' => text.push('\u{8}'),
                        b'f' => text.push('\u{c}'),
                        b'n' => text.push('\n'),
                        b'r' => text.push('\r'),
                        b't' => text.push('\t'),
                        b'u' => match self.unicode_escape()? {
                            Some(c) => text.push(c),
                            None => return Ok((text, false)),
                        },
                        _ => return Err(NotJson),
                    }
                }
            }
        }
    }

    /// The character of a `\u` escape whose `\u` was read (a surrogate
    /// pair's two escapes together); `None` when the text ends first.
    fn unicode_escape(&mut self) -> Result<Option<char>, NotJson> {
        let Some(high) = self.hex4()? else {
            return Ok(None);
        };
        if !(0xD800..0xDC00).contains(&high) {
            return Ok(Some(char::from_u32(high).unwrap_or('\u{fffd}')));
        }
        // A high surrogate wants `\uDC00`..`\uDFFF` after it.
        match self.bytes.get(self.at..self.at + 2) {
            None => {
                self.at = self.bytes.len();
                return Ok(None);
            }
            Some(b"\\u") => self.at += 2,
            Some(_) => return Ok(Some('\u{fffd}')),
        }
        let Some(low) = self.hex4()? else {
            return Ok(None);
        };
        let code = 0x10000 + ((high - 0xD800) << 10) + low.wrapping_sub(0xDC00).min(0x3FF);
        Ok(Some(char::from_u32(code).unwrap_or('\u{fffd}')))
    }

    fn hex4(&mut self) -> Result<Option<u32>, NotJson> {
        let Some(digits) = self.bytes.get(self.at..self.at + 4) else {
            if self.bytes[self.at..].iter().all(u8::is_ascii_hexdigit) {
                self.at = self.bytes.len();
                return Ok(None);
            }
            return Err(NotJson);
        };
        let digits = std::str::from_utf8(digits).map_err(|_| NotJson)?;
        let code = u32::from_str_radix(digits, 16).map_err(|_| NotJson)?;
        self.at += 4;
        Ok(Some(code))
    }

    fn literal(&mut self, word: &str, value: Value) -> Result<Read, NotJson> {
        let rest = &self.bytes[self.at..];
        if rest.starts_with(word.as_bytes()) {
            self.at += word.len();
            return Ok(Read::Whole(value));
        }
        if word.as_bytes().starts_with(rest) {
            self.at = self.bytes.len();
            return Ok(Read::Cut(None));
        }
        Err(NotJson)
    }

    fn number(&mut self) -> Result<Read, NotJson> {
        let start = self.at;
        while self
            .bytes
            .get(self.at)
            .is_some_and(|byte| matches!(byte, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
        {
            self.at += 1;
        }
        if self.at >= self.bytes.len() {
            // It may go on.
            return Ok(Read::Cut(None));
        }
        serde_json::from_str::<serde_json::Number>(&self.text[start..self.at])
            .map(|number| Read::Whole(Value::Number(number)))
            .map_err(|_| NotJson)
    }
}

/// One update of a typed answer that streams.
#[derive(Debug, Clone, PartialEq)]
pub enum OutputUpdate<T> {
    /// The answer as far as the model has written it, read as `T`: each
    /// time what can be read of it grows and still reads as `T`.
    Partial(T),
    /// The run's final answer, validated against its schema: the last
    /// update.
    Final(T),
}

/// The typed answer of a run as it streams ([`RuntimeInvocation::partial_output`](super::RuntimeInvocation::partial_output)):
/// [`OutputUpdate::Partial`] values while the model writes it, then
/// [`OutputUpdate::Final`]. The stream ends after the final value, or
/// without one when the run fails or is cancelled.
///
/// A partial value is read as `T`, so `T` must take what is not there yet:
/// `Option` fields, `#[serde(default)]`, or a partial type of its own
/// (`serde_json::Value` takes everything). A turn that streams and is then
/// refused, or voided ([`ModelDelta::Restart`]), starts again from nothing.
pub struct PartialOutput<T> {
    events: EventStream,
    /// Whether the answer comes as the turn's text (a model asked for
    /// structured output) rather than as `final_answer`'s arguments.
    native: bool,
    text: String,
    /// The turn's tool calls so far: name and arguments, by index.
    calls: BTreeMap<usize, (String, String)>,
    last: Option<Value>,
    /// How long the answer's text was when it was last read: it is read
    /// again once it has grown by a share of that, or a value may have
    /// ended, so that a long answer is not read from its start at every
    /// piece.
    read_at: usize,
    done: bool,
    _type: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for PartialOutput<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartialOutput")
            .field("native", &self.native)
            .field("last", &self.last)
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> PartialOutput<T> {
    pub(crate) fn new(events: EventStream, native: bool) -> Self {
        Self {
            events,
            native,
            text: String::new(),
            calls: BTreeMap::new(),
            last: None,
            read_at: 0,
            done: false,
            _type: PhantomData,
        }
    }

    /// Takes one event: the update it makes, if any.
    fn take(&mut self, kind: EventKind) -> Option<OutputUpdate<T>> {
        match kind {
            EventKind::ModelDelta(delta) => self.delta(delta),
            // A turn is whole: the next one starts from nothing.
            EventKind::ModelMessage(_) => {
                self.text.clear();
                self.calls.clear();
                self.last = None;
                self.read_at = 0;
                None
            }
            EventKind::Output(text) => {
                self.done = true;
                serde_json::from_str(&text).ok().map(OutputUpdate::Final)
            }
            EventKind::State(RunPhase::Completed | RunPhase::Failed | RunPhase::Cancelled) => {
                self.done = true;
                None
            }
            _ => None,
        }
    }

    fn delta(&mut self, delta: ModelDelta) -> Option<OutputUpdate<T>> {
        match delta {
            ModelDelta::Text(text) if self.native => self.text.push_str(&text),
            ModelDelta::ToolCall {
                index,
                name,
                arguments,
                ..
            } if !self.native => {
                let call = self.calls.entry(index).or_default();
                if let Some(name) = name {
                    call.0 = name;
                }
                call.1.push_str(&arguments);
            }
            ModelDelta::Restart => {
                self.text.clear();
                self.calls.clear();
                self.last = None;
                self.read_at = 0;
                return None;
            }
            _ => return None,
        }
        let written = if self.native {
            self.text.as_str()
        } else {
            self.calls
                .values()
                .find(|(name, _)| name == FINAL_ANSWER)
                .map(|(_, arguments)| arguments.as_str())?
        };
        // Read again when a value may have ended, or the text has grown by
        // a 32nd since the last read (at most 32 reads per doubling).
        let grown = written.len().saturating_sub(self.read_at);
        let ended = written[self.read_at.min(written.len())..]
            .bytes()
            .any(|byte| matches!(byte, b',' | b'}' | b']' | b'"'));
        if !ended && grown < (self.read_at / 32).max(1) {
            return None;
        }
        self.read_at = written.len();
        let value = parse_partial(written)?;
        if self.last.as_ref() == Some(&value) {
            return None;
        }
        let read = serde_json::from_value(value.clone()).ok();
        self.last = Some(value);
        read.map(OutputUpdate::Partial)
    }
}

impl<T: DeserializeOwned> Stream for PartialOutput<T> {
    type Item = OutputUpdate<T>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        loop {
            if self.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut self.events).poll_next(cx) {
                Poll::Ready(Some(envelope)) => {
                    if let Some(update) = self.take(envelope.kind) {
                        return Poll::Ready(Some(update));
                    }
                }
                Poll::Ready(None) => return Poll::Ready(None),
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_cut_of_a_document_reads_as_a_prefix_of_it() {
        let whole = r#"{"title": "Caf\u00e9 \"Rust\"", "tags": ["a", "b\n"], "n": -1.5e3, "ok": true, "none": null, "emoji": "\ud83e\udd80", "nested": {"deep": [1, {"x": "y"}]}}"#;
        let full: Value = serde_json::from_str(whole).unwrap();
        assert_eq!(parse_partial(whole), Some(full.clone()));
        for cut in 0..whole.len() {
            if !whole.is_char_boundary(cut) {
                continue;
            }
            let read = parse_partial(&whole[..cut]);
            if cut > 0 {
                assert!(read.is_some(), "cut at {cut}: {:?}", &whole[..cut]);
            }
            // No key appears that the whole lacks, and no finished
            // number or literal differs from the whole's.
            if let Some(Value::Object(read)) = read {
                for (key, value) in &read {
                    let whole_value = &full[key];
                    assert!(
                        !whole_value.is_null() || value.is_null(),
                        "cut at {cut}: {key}"
                    );
                    if value.is_number() || value.is_boolean() {
                        assert_eq!(value, whole_value, "cut at {cut}: {key}");
                    }
                }
            }
        }
    }

    #[test]
    fn text_that_is_not_json_or_too_deep_reads_as_nothing() {
        assert_eq!(parse_partial("Sure! Here is"), None);
        assert_eq!(parse_partial(r#"{"a" 1}"#), None);
        assert_eq!(parse_partial(r#"{"a": tru"#), Some(json!({})));
        assert_eq!(parse_partial(r#"{"a": trux"#), None);
        let deep = "[".repeat(10_000);
        assert_eq!(parse_partial(&deep), None);
        assert_eq!(parse_partial(r#"["\u00"#), Some(json!([""])));
        assert_eq!(parse_partial(r#"["\uZZZZ"]"#), None);
    }
}

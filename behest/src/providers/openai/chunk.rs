//! One streamed Chat Completions chunk, as the assembler reads it: the
//! first choice's `finish_reason` and `delta`, borrowed from the event.
//!
//! Read two ways that agree: straight from the event's JSON text into
//! borrowing types (one pass, no `Value`), which covers the chunks servers
//! send; and from a parsed `Value`, for any other shape (an error, usage,
//! a field of an unexpected type, a duplicated key), which reads what it
//! can as before.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, IgnoredAny, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::chat::{KEPT_CALL_FIELDS, REASONING_FIELDS};

/// What the assembler reads of a chunk.
pub(super) struct Chunk<'a> {
    pub finish_reason: Option<&'a str>,
    /// `None`: no `delta` (a usage-only chunk).
    pub delta: Option<Delta<'a>>,
}

/// The first choice's `delta`.
#[derive(Default)]
pub(super) struct Delta<'a> {
    /// The first reasoning field present, and its text.
    pub reasoning: Option<(&'static str, &'a str)>,
    pub content: Option<&'a str>,
    pub refusal: Option<&'a str>,
    pub fragments: Vec<Fragment<'a>>,
}

/// A `delta.tool_calls` fragment.
pub(super) struct Fragment<'a> {
    pub index: Option<u64>,
    /// Empty ids and names are absent.
    pub id: Option<&'a str>,
    pub name: Option<&'a str>,
    pub arguments: &'a str,
    /// The fields a server wants back with the call.
    pub kept: Option<Value>,
}

impl<'a> Chunk<'a> {
    /// The chunk in a parsed event.
    pub fn from_value(chunk: &'a Value) -> Self {
        let finish_reason = chunk
            .pointer("/choices/0/finish_reason")
            .and_then(Value::as_str);
        let delta = chunk.pointer("/choices/0/delta").map(|delta| {
            let text = |key: &str| delta.get(key).and_then(Value::as_str);
            let reasoning = REASONING_FIELDS
                .iter()
                .find_map(|key| Some((*key, text(key)?)));
            let fragments = delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|fragment| {
                    let text = |pointer: &str| {
                        fragment
                            .pointer(pointer)
                            .and_then(Value::as_str)
                            .filter(|text| !text.is_empty())
                    };
                    Fragment {
                        index: fragment.get("index").and_then(Value::as_u64),
                        id: text("/id"),
                        name: text("/function/name"),
                        arguments: fragment
                            .pointer("/function/arguments")
                            .and_then(Value::as_str)
                            .unwrap_or_default(),
                        kept: kept_call_fields(fragment),
                    }
                })
                .collect();
            Delta {
                reasoning,
                content: text("content"),
                refusal: text("refusal"),
                fragments,
            }
        });
        Self {
            finish_reason,
            delta,
        }
    }
}

/// The fields of `KEPT_CALL_FIELDS` that `call` has, as one object.
pub(super) fn kept_call_fields(call: &Value) -> Option<Value> {
    let kept: serde_json::Map<String, Value> = KEPT_CALL_FIELDS
        .iter()
        .filter_map(|key| Some(((*key).to_owned(), call.get(*key)?.clone())))
        .filter(|(_, value)| !value.is_null())
        .collect();
    (!kept.is_empty()).then_some(Value::Object(kept))
}

/// A chunk read straight from its JSON text, when it has the plain shape
/// of text, reasoning and call deltas: `None` otherwise (not JSON, an
/// error, usage, fields a server wants back, any field of another type,
/// a duplicated key), for [`Chunk::from_value`] to read as it can.
pub(super) fn read(text: &str) -> Option<WireChunk<'_>> {
    let chunk: WireChunk<'_> = serde_json::from_str(text).ok()?;
    (!chunk.error && !chunk.usage).then_some(chunk)
}

/// The chunk as the wire has it, strings borrowed where they hold no
/// escapes.
#[derive(Deserialize)]
pub(super) struct WireChunk<'a> {
    /// Any `error`, even `null`, makes the event an error report.
    #[serde(default, deserialize_with = "present")]
    error: bool,
    /// Usage is read from the `Value`, where `usage::chat` reads it.
    #[serde(default, deserialize_with = "present")]
    usage: bool,
    #[serde(borrow, default)]
    choices: Option<FirstChoice<'a>>,
}

/// A string of the event, borrowed when it holds no escape (serde
/// borrows a `Cow` only as a field of its own, not inside an `Option`).
#[derive(Deserialize)]
#[serde(transparent)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// The text of an optional string field.
fn text<'b>(field: &'b Option<Text<'_>>) -> Option<&'b str> {
    field.as_ref().map(|text| &*text.0)
}

/// The first element of `choices`; the others are read past.
struct FirstChoice<'a>(Option<WireChoice<'a>>);

#[derive(Deserialize)]
struct WireChoice<'a> {
    #[serde(borrow, default)]
    finish_reason: Option<Text<'a>>,
    #[serde(borrow, default)]
    delta: Option<WireDelta<'a>>,
}

#[derive(Deserialize)]
struct WireDelta<'a> {
    #[serde(borrow, default)]
    reasoning_content: Option<Text<'a>>,
    #[serde(borrow, default)]
    reasoning: Option<Text<'a>>,
    #[serde(borrow, default)]
    content: Option<Text<'a>>,
    #[serde(borrow, default)]
    refusal: Option<Text<'a>>,
    #[serde(borrow, default)]
    tool_calls: Option<Vec<WireFragment<'a>>>,
}

#[derive(Deserialize)]
struct WireFragment<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    function: Option<WireFunction<'a>>,
    /// `KEPT_CALL_FIELDS`: a fragment that has one is read from the
    /// `Value`, which keeps it.
    #[serde(default, deserialize_with = "present")]
    extra_content: bool,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Text<'a>>,
}

impl WireChunk<'_> {
    /// The chunk as the assembler reads it; `None` for a fragment with a
    /// field the `Value` reading keeps.
    pub fn view(&self) -> Option<Chunk<'_>> {
        let Some(FirstChoice(Some(choice))) = &self.choices else {
            return Some(Chunk {
                finish_reason: None,
                delta: None,
            });
        };
        let delta = match &choice.delta {
            None => None,
            Some(delta) => {
                let mut fragments = Vec::new();
                for fragment in delta.tool_calls.iter().flatten() {
                    if fragment.extra_content {
                        return None;
                    }
                    let function = fragment.function.as_ref();
                    fragments.push(Fragment {
                        index: fragment.index,
                        id: named(text(&fragment.id)),
                        name: named(function.and_then(|function| text(&function.name))),
                        arguments: function
                            .and_then(|function| text(&function.arguments))
                            .unwrap_or_default(),
                        kept: None,
                    });
                }
                let reasoning = [&delta.reasoning_content, &delta.reasoning]
                    .into_iter()
                    .zip(REASONING_FIELDS)
                    .find_map(|(field, key)| Some((key, text(field)?)));
                Some(Delta {
                    reasoning,
                    content: text(&delta.content),
                    refusal: text(&delta.refusal),
                    fragments,
                })
            }
        };
        Some(Chunk {
            finish_reason: text(&choice.finish_reason),
            delta,
        })
    }
}

/// An id or name: empty is absent.
fn named(field: Option<&str>) -> Option<&str> {
    field.filter(|text| !text.is_empty())
}

/// A field that is there, whatever it holds.
fn present<'de, D: Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    IgnoredAny::deserialize(deserializer).map(|_| true)
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct First<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for First<'a> {
            type Value = FirstChoice<'a>;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
        }
        deserializer.deserialize_seq(First(std::marker::PhantomData))
    }
}

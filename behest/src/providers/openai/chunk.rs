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

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// The fields a Chat message's reasoning comes in, next to `content`:
/// DeepSeek's and most servers' `reasoning_content`, and `reasoning`
/// (Ollama, vLLM, OpenRouter, Groq). What came goes back under the name it
/// came in; DeepSeek refuses a tool-call turn sent back without it.
pub(super) const REASONING_FIELDS: [&str; 2] = ["reasoning_content", "reasoning"];

/// Fields a server puts on a tool call and wants back with it: Gemini's
/// OpenAI-compatible endpoint carries a call's thought signature in
/// `extra_content.google.thought_signature`.
pub(super) const KEPT_CALL_FIELDS: [&str; 1] = ["extra_content"];

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

/// Reads a chunk straight from its JSON text into `wire` (the caller's,
/// so that it is not moved), when it has the plain shape of text,
/// reasoning and call deltas: `false` otherwise (not JSON, an
/// error, usage other than `null`, fields a server wants back, any field of another type,
/// a duplicated key), for [`Chunk::from_value`] to read as it can.
///
/// Read by seeds that write into one `Wire` on the stack, rather than by
/// derived structs, which move every level's fields up through each
/// level above. Fields the assembler does not read are skipped without
/// being decoded, so a lone surrogate, a number out of range or nesting
/// past serde_json's 128 levels in one of them does not fail the chunk,
/// as it fails a `Value`.
pub(super) fn read<'a>(text: &'a str, wire: &mut Wire<'a>) -> bool {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer
        .deserialize_map(ChunkSeed(wire))
        .and_then(|()| deserializer.end())
        .is_ok()
}

/// What [`read`] found, strings borrowed where they hold no escape.
#[derive(Default)]
pub(super) struct Wire<'a> {
    /// A first choice came.
    choice: bool,
    finish_reason: Option<Text<'a>>,
    /// The first choice has a `delta` object.
    delta: bool,
    /// `REASONING_FIELDS`, in order.
    reasoning: [Option<Text<'a>>; 2],
    content: Option<Text<'a>>,
    refusal: Option<Text<'a>>,
    tool_calls: Vec<Object<WireFragment<'a>>>,
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

/// A struct read only from a JSON object: a derived struct also reads an
/// array (its fields in order), where the `Value` reading finds none.
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Fields<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Fields<T> {
            type Value = T;
            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("an object")
            }
            fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }
        deserializer
            .deserialize_map(Fields(std::marker::PhantomData))
            .map(Object)
    }
}

#[derive(Deserialize)]
struct WireFragment<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    function: Option<Object<WireFunction<'a>>>,
    /// `KEPT_CALL_FIELDS`: a fragment that has one fails this reading,
    /// and the chunk is read from the `Value`, which keeps it.
    #[serde(default, rename = "extra_content", deserialize_with = "read_by_value")]
    _kept: (),
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(borrow, default)]
    name: Option<Text<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Text<'a>>,
}

impl Wire<'_> {
    /// The chunk as the assembler reads it.
    pub fn view(&self) -> Chunk<'_> {
        if !self.choice {
            return Chunk {
                finish_reason: None,
                delta: None,
            };
        }
        let delta = if self.delta {
            let fragments = self
                .tool_calls
                .iter()
                .map(|Object(fragment)| {
                    let function = fragment.function.as_ref().map(|Object(function)| function);
                    Fragment {
                        index: fragment.index,
                        id: named(text(&fragment.id)),
                        name: named(function.and_then(|function| text(&function.name))),
                        arguments: function
                            .and_then(|function| text(&function.arguments))
                            .unwrap_or_default(),
                        kept: None,
                    }
                })
                .collect();
            let reasoning = self
                .reasoning
                .iter()
                .zip(REASONING_FIELDS)
                .find_map(|(field, key)| Some((key, text(field)?)));
            Some(Delta {
                reasoning,
                content: text(&self.content),
                refusal: text(&self.refusal),
                fragments,
            })
        } else {
            None
        };
        Chunk {
            finish_reason: text(&self.finish_reason),
            delta,
        }
    }
}

/// An id or name: empty is absent.
fn named(field: Option<&str>) -> Option<&str> {
    field.filter(|text| !text.is_empty())
}

/// A field this reading leaves to the `Value`'s: its presence fails it.
fn read_by_value<'de, D: Deserializer<'de>>(_field: D) -> Result<(), D::Error> {
    Err(de::Error::custom("read through a Value"))
}

/// Refuses a key met twice: the `Value` keeps the last, which this
/// reading leaves to it.
fn once<E: de::Error>(seen: &mut u8, bit: u8) -> Result<(), E> {
    if *seen & bit != 0 {
        return Err(E::custom("a duplicated key"));
    }
    *seen |= bit;
    Ok(())
}

/// The chunk object.
struct ChunkSeed<'w, 'a>(&'w mut Wire<'a>);

impl<'de: 'a, 'a> Visitor<'de> for ChunkSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a chunk object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let mut seen = 0;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                // An error report: the `Value` reading's.
                "error" => return Err(de::Error::custom("read through a Value")),
                // Usage, which `usage::chat` reads from the `Value`: OpenAI
                // sends `null` in every chunk but the last.
                "usage" => {
                    once(&mut seen, 2)?;
                    if map.next_value::<Option<IgnoredAny>>()?.is_some() {
                        return Err(de::Error::custom("read through a Value"));
                    }
                }
                "choices" => {
                    once(&mut seen, 1)?;
                    map.next_value_seed(ChoicesSeed(&mut *self.0))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// `choices`: the first is read, the others read past; `null` is none.
struct ChoicesSeed<'w, 'a>(&'w mut Wire<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for ChoicesSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for ChoicesSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("an array of choices")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        seq.next_element_seed(ChoiceSeed(&mut *self.0))?;
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(())
    }
}

/// The first choice.
struct ChoiceSeed<'w, 'a>(&'w mut Wire<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for ChoiceSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for ChoiceSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a choice object")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let wire = self.0;
        wire.choice = true;
        let mut seen = 0;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                "finish_reason" => {
                    once(&mut seen, 1)?;
                    wire.finish_reason = map.next_value()?;
                }
                "delta" => {
                    once(&mut seen, 2)?;
                    map.next_value_seed(DeltaSeed(&mut *wire))?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The first choice's `delta`; `null` is none.
struct DeltaSeed<'w, 'a>(&'w mut Wire<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for DeltaSeed<'_, 'a> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for DeltaSeed<'_, 'a> {
    type Value = ();

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a delta object")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<(), M::Error> {
        let wire = self.0;
        wire.delta = true;
        let mut seen = 0;
        while let Some(key) = map.next_key::<Text<'de>>()? {
            match &*key.0 {
                key if REASONING_FIELDS.contains(&key) => {
                    let at = REASONING_FIELDS.iter().position(|field| *field == key);
                    let at = at.unwrap_or_default();
                    once(&mut seen, 1 << at)?;
                    wire.reasoning[at] = map.next_value()?;
                }
                "content" => {
                    once(&mut seen, 4)?;
                    wire.content = map.next_value()?;
                }
                "refusal" => {
                    once(&mut seen, 8)?;
                    wire.refusal = map.next_value()?;
                }
                "tool_calls" => {
                    once(&mut seen, 16)?;
                    let fragments: Option<Vec<Object<WireFragment<'de>>>> = map.next_value()?;
                    wire.tool_calls = fragments.unwrap_or_default();
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

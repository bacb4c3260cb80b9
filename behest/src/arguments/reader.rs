//! Reading a tool's own argument types straight from a parsed arguments
//! object, as they would read it after the checked route decoded it:
//! under the same size and depth limits, measured the same way, with
//! integral floats read as the integers they are. One pass over the
//! object, which is neither changed nor copied (a `String` field is the
//! only copy made), so a read that fails leaves it whole for the checked
//! route to explain.

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use serde_json::{Error, Value};

use super::field_checks::FieldChecks;
use super::{as_integer, measure, normalise_all, DecodeLimits, Measured};
use crate::json_text::scalar_len;

/// `T` read from `value`, or `None` when the types do not read it or it is
/// over a limit: which, and why, is the checked route's to say.
///
/// Every part of the object is charged as it is read, so `T` must read
/// all of what it is given (or skip it with `deserialize_ignored_any`,
/// which measures it): the argument types of a `#[tool]` do, and an array
/// or object left part-read fails the read. The arguments named in
/// `checks` are first held to their schemas where they are.
pub(crate) fn read<T: DeserializeOwned>(
    value: &Value,
    limits: DecodeLimits,
    checks: Option<&FieldChecks>,
) -> Option<T> {
    let mut budget = Budget {
        left: limits.max_bytes,
        max_depth: limits.max_depth,
    };
    let reader = Reader {
        value,
        depth: 1,
        budget: &mut budget,
    };
    if let Some(checks) = checks {
        if !checks.hold(value.as_object()?, limits) {
            return None;
        }
    }
    T::deserialize(reader).ok()
}

/// What is left of the limits as the object is read.
struct Budget {
    /// Bytes, counted as `measure` counts them.
    left: usize,
    max_depth: usize,
}

impl Budget {
    #[inline]
    fn spend(&mut self, bytes: usize) -> Result<(), Error> {
        match self.left.checked_sub(bytes) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(over_limit()),
        }
    }

    /// A container at level `depth` (the object itself being level 1).
    #[inline]
    fn enter(&self, depth: usize) -> Result<(), Error> {
        if depth > self.max_depth {
            return Err(over_limit());
        }
        Ok(())
    }
}

#[cold]
fn over_limit() -> Error {
    de::Error::custom("over the argument limits")
}

/// A value at nesting level `depth`.
struct Reader<'de, 'b> {
    value: &'de Value,
    depth: usize,
    budget: &'b mut Budget,
}

impl Reader<'_, '_> {
    /// Charges the value whole against the limits, as `measure` counts it,
    /// for a value that is not read part by part (one skipped, an enum).
    fn spend_whole(&mut self) -> Result<Measured, Error> {
        let limits = DecodeLimits {
            max_bytes: self.budget.left,
            // The value is level 1 of what is measured. Its container
            // passed `enter`, so `depth - 1` is within the limit (which
            // may be `usize::MAX`: no `max_depth + 1`).
            max_depth: self.budget.max_depth.saturating_sub(self.depth - 1),
        };
        let measured = measure(self.value, limits).map_err(|_| over_limit())?;
        self.budget.spend(measured.size)?;
        Ok(measured)
    }
}

impl<'de> Deserializer<'de> for Reader<'de, '_> {
    type Error = Error;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let Reader {
            value,
            depth,
            budget,
        } = self;
        budget.spend(scalar_len(value))?;
        match value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(value) => visitor.visit_bool(*value),
            Value::Number(number) => match as_integer(number) {
                Some(integer) => integer.deserialize_any(visitor),
                None => number.deserialize_any(visitor),
            },
            Value::String(text) => visitor.visit_borrowed_str(text),
            Value::Array(items) => {
                budget.enter(depth)?;
                budget.spend(items.len() + 1)?;
                let mut items = Items {
                    items: items.iter(),
                    depth: depth + 1,
                    budget,
                };
                let read = visitor.visit_seq(&mut items)?;
                match items.items.len() {
                    0 => Ok(read),
                    _ => Err(de::Error::custom("an array read in part")),
                }
            }
            Value::Object(map) => {
                budget.enter(depth)?;
                budget.spend(1)?;
                let mut entries = Entries {
                    entries: map.iter(),
                    value: None,
                    depth: depth + 1,
                    budget,
                };
                let read = visitor.visit_map(&mut entries)?;
                match (entries.entries.len(), entries.value) {
                    (0, None) => Ok(read),
                    _ => Err(de::Error::custom("an object read in part")),
                }
            }
        }
    }

    #[inline]
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => {
                self.budget.spend(scalar_len(self.value))?;
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    /// A value skipped (an unknown field where they are allowed) still
    /// counts against the limits, as it does on the checked route.
    fn deserialize_ignored_any<V: Visitor<'de>>(mut self, visitor: V) -> Result<V::Value, Error> {
        self.spend_whole()?;
        visitor.visit_unit()
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    /// An enum, as `serde_json` reads one from a `Value`: a unit variant
    /// from its name, any variant from an object of one member. The value
    /// counts against the limits whole, as a skipped one does.
    fn deserialize_enum<V: Visitor<'de>>(
        mut self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        if let Value::String(variant) = self.value {
            self.budget.spend(scalar_len(self.value))?;
            return visitor.visit_enum(de::value::BorrowedStrDeserializer::new(variant));
        }
        let measured = self.spend_whole()?;
        let mut value = self.value.clone();
        if measured.floats {
            normalise_all(&mut value);
        }
        value.deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple
        tuple_struct map struct identifier
    }
}

/// The items of an array.
struct Items<'de, 'b> {
    items: std::slice::Iter<'de, Value>,
    depth: usize,
    budget: &'b mut Budget,
}

impl<'de> SeqAccess<'de> for Items<'de, '_> {
    type Error = Error;

    #[inline]
    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        seed.deserialize(Reader {
            value,
            depth: self.depth,
            budget: self.budget,
        })
        .map(Some)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// The entries of an object; `value` is the one whose key was read last.
struct Entries<'de, 'b> {
    entries: serde_json::map::Iter<'de>,
    value: Option<&'de Value>,
    depth: usize,
    budget: &'b mut Budget,
}

impl<'de> MapAccess<'de> for Entries<'de, '_> {
    type Error = Error;

    #[inline]
    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        if self.value.is_some() {
            return Err(de::Error::custom("a key read without its value"));
        }
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        // A key, its quotes, the colon and a comma: as `measure` counts.
        self.budget.spend(key.len() + 4)?;
        self.value = Some(value);
        seed.deserialize(Key(key)).map(Some)
    }

    #[inline]
    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let Some(value) = self.value.take() else {
            return Err(de::Error::custom("a value read before its key"));
        };
        seed.deserialize(Reader {
            value,
            depth: self.depth,
            budget: self.budget,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// A key of an object, given to the visitor as borrowed text.
struct Key<'de>(&'de str);

impl<'de> Deserializer<'de> for Key<'de> {
    type Error = Error;

    #[inline]
    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;
    use serde_json::json;

    use super::*;
    use crate::arguments::walk;

    /// What the checked route makes of `value` under `limits`: the value
    /// normalised, or nothing when it is over a limit.
    fn decoded(value: &Value, limits: DecodeLimits) -> Option<Value> {
        let mut value = value.clone();
        walk(&mut value, limits).ok().map(|()| value)
    }

    /// Read as a `Value` (which reads everything), the object is what the
    /// checked route decodes, under every limit around its size and depth.
    #[test]
    fn reads_what_the_checked_route_decodes_under_every_limit() {
        let values = [
            json!({}),
            json!({"count": 1, "label": "a", "verbose": null}),
            json!({"count": 1.0, "ratio": -0.0, "big": 9007199254740993.0, "huge": 1e30, "half": 0.5}),
            json!({"tags": ["a", "bb"], "nested": {"inner": [1.0, [2.0, {"x": true}]]}}),
            json!({"empty": [], "object": {}, "text": "q\"uote\\", "flag": false}),
            json!({"a": [[[[1]]]]}),
        ];
        for value in &values {
            let size = size_of(value);
            for max_bytes in (0..=size + 2).chain([usize::MAX]) {
                for max_depth in 0..=6 {
                    let limits = DecodeLimits {
                        max_bytes,
                        max_depth,
                    };
                    assert_eq!(
                        read::<Value>(value, limits, None),
                        decoded(value, limits),
                        "{value} within {max_bytes} bytes and {max_depth} levels"
                    );
                }
            }
        }
    }

    #[derive(Debug, PartialEq, serde::Deserialize)]
    struct Known {
        count: i64,
        note: Option<String>,
    }

    /// A field the type skips still counts, in bytes and in depth; a
    /// `null` read as `None` counts as the `null` it is.
    #[test]
    fn what_the_types_skip_or_leave_out_still_counts() {
        let skipped = json!({"count": 2.0, "note": null, "other": {"deep": ["xxxxxxxx"]}});
        let size = size_of(&skipped);
        assert!(decoded(&skipped, limits(size, 3)).is_some());
        assert_eq!(
            read::<Known>(&skipped, limits(size, 3), None),
            Some(Known {
                count: 2,
                note: None
            })
        );
        assert_eq!(decoded(&skipped, limits(size - 1, 3)), None);
        assert_eq!(read::<Known>(&skipped, limits(size - 1, 3), None), None);
        assert_eq!(read::<Known>(&skipped, limits(size, 2), None), None);
        let noted = json!({"count": 1, "note": "n"});
        let size = size_of(&noted);
        assert!(read::<Known>(&noted, limits(size, 1), None).is_some());
        assert!(read::<Known>(&noted, limits(size - 1, 1), None).is_none());
        // A float with a fraction is no integer; a string is no number.
        assert!(read::<Known>(&json!({"count": 1.5}), limits(1024, 4), None).is_none());
        assert!(read::<Known>(&json!({"count": "1"}), limits(1024, 4), None).is_none());
    }

    /// Arguments read as a `#[tool]`'s are: a struct's reader, unknown
    /// fields refused.
    #[derive(Debug, PartialEq, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Strict {
        count: i64,
        ratio: f64,
        big: u64,
        maybe: Vec<Option<i64>>,
        names: Option<Vec<String>>,
    }

    /// Through `Option`, nested arrays and the numbers at their edges, a
    /// struct reads under exactly the limits the checked route applies,
    /// and what it reads is what the decoded object reads.
    #[test]
    fn a_tool_s_arguments_read_as_they_read_the_decoded_object() {
        let values = [
            json!({"count": -3, "ratio": -0.0, "big": 18446744073709551615u64,
                   "maybe": [1, null, 2.0], "names": ["a", "b"]}),
            json!({"count": 2.0, "ratio": 2.0, "big": 0, "maybe": [], "names": null}),
            json!({"count": 1, "ratio": 0.5, "big": 1, "maybe": [null]}),
        ];
        for value in &values {
            let size = size_of(value);
            let expected = decoded(value, limits(size, 2))
                .map(|decoded| Strict::deserialize(&decoded).unwrap());
            assert!(expected.is_some(), "{value}");
            assert_eq!(
                read::<Strict>(value, limits(size, 2), None),
                expected,
                "{value}"
            );
            assert_eq!(
                read::<Strict>(value, limits(size - 1, 2), None),
                None,
                "{value}"
            );
            assert_eq!(
                read::<Strict>(value, limits(size, 1), None),
                None,
                "{value}"
            );
        }
        // A negative zero is read as the checked route reads it: `0`.
        let zero = read::<Strict>(&values[0], limits(1024, 2), None).unwrap();
        assert!(zero.ratio.is_sign_positive());
        // What the types refuse is left to the checked route: an integer
        // past 2^53 written as a float, a fraction, an unknown field.
        for refused in [
            json!({"count": 9007199254740992.0, "ratio": 1, "big": 1, "maybe": []}),
            json!({"count": 1e19, "ratio": 1, "big": 1, "maybe": []}),
            json!({"count": 1, "ratio": 1, "big": 1.5, "maybe": []}),
            json!({"count": 1, "ratio": 1, "big": 1, "maybe": [], "other": 1}),
            json!({"count": 1, "ratio": 1, "big": -1, "maybe": []}),
        ] {
            assert_eq!(
                read::<Strict>(&refused, limits(1024, 4), None),
                None,
                "{refused}"
            );
        }
    }

    /// A depth limit of `usize::MAX` (no limit) holds for skipped values too.
    #[test]
    fn no_depth_limit_skips_values_of_any_depth() {
        let skipped = json!({"count": 1, "other": [[[{"deep": []}]]]});
        let read = read::<Known>(&skipped, limits(usize::MAX, usize::MAX), None);
        assert_eq!(
            read,
            Some(Known {
                count: 1,
                note: None
            })
        );
    }

    /// A type that reads part of an array or object gets nothing: the rest
    /// would not have been measured.
    #[test]
    fn a_value_read_in_part_is_not_read() {
        struct First;
        impl<'de> serde::Deserialize<'de> for First {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visit;
                impl<'de> Visitor<'de> for Visit {
                    type Value = First;
                    fn expecting(
                        &self,
                        formatter: &mut std::fmt::Formatter<'_>,
                    ) -> std::fmt::Result {
                        formatter.write_str("a collection")
                    }
                    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<First, A::Error> {
                        items.next_element::<de::IgnoredAny>()?;
                        Ok(First)
                    }
                    fn visit_map<A: MapAccess<'de>>(
                        self,
                        mut entries: A,
                    ) -> Result<First, A::Error> {
                        entries.next_key::<String>()?;
                        Ok(First)
                    }
                }
                deserializer.deserialize_any(Visit)
            }
        }
        let limits = limits(1024, 4);
        assert!(read::<First>(&json!([1]), limits, None).is_some());
        assert!(read::<First>(&json!([1, 2]), limits, None).is_none());
        assert!(read::<First>(&json!({"a": 1}), limits, None).is_none());
    }

    /// The size `measure` gives a value.
    fn size_of(value: &Value) -> usize {
        measure(value, limits(usize::MAX, usize::MAX)).unwrap().size
    }

    fn limits(max_bytes: usize, max_depth: usize) -> DecodeLimits {
        DecodeLimits {
            max_bytes,
            max_depth,
        }
    }
}

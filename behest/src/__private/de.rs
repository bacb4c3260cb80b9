//! `Deserialize` for generated arguments structs: one generic visitor over
//! the tuple of the field types, compiled once here, where a derive would
//! expand a visitor per tool. It reads exactly as `serde_derive` with
//! `deny_unknown_fields` does from a map (same messages: unknown, duplicate
//! and missing fields, a missing `Option` read as `None`), and refuses a
//! sequence, which the arguments object never is.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, Error, IgnoredAny, MapAccess, Visitor};
use serde::Deserialize;

/// The fields of a struct, by position: a tuple of their types.
pub trait Fields<'de>: Sized {
    /// One `Option` per field, filled as the map is read.
    type Slots: Default;

    /// Reads the value of field `index` into its slot.
    fn read<M: MapAccess<'de>>(
        slots: &mut Self::Slots,
        index: usize,
        map: &mut M,
        names: &'static [&'static str],
    ) -> Result<(), M::Error>;

    /// The fields, once the map is read; a field that was not sent is an
    /// error unless its type reads a missing value (`Option`).
    fn finish<E: Error>(slots: Self::Slots, names: &'static [&'static str]) -> Result<Self, E>;
}

/// Reads struct `name`, whose fields are `names` in order, as the tuple of
/// their values. Unknown fields are an error when `deny_unknown` is set and
/// skipped otherwise.
pub fn fields<'de, D: Deserializer<'de>, F: Fields<'de>>(
    deserializer: D,
    name: &'static str,
    names: &'static [&'static str],
    deny_unknown: bool,
) -> Result<F, D::Error> {
    deserializer.deserialize_struct(
        name,
        names,
        StructVisitor {
            name,
            names,
            deny_unknown,
            fields: PhantomData,
        },
    )
}

struct StructVisitor<F> {
    name: &'static str,
    names: &'static [&'static str],
    deny_unknown: bool,
    fields: PhantomData<fn() -> F>,
}

impl<'de, F: Fields<'de>> Visitor<'de> for StructVisitor<F> {
    type Value = F;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "struct {}", self.name)
    }

    #[inline]
    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<F, M::Error> {
        let mut slots = F::Slots::default();
        let key = FieldKey {
            names: self.names,
            deny_unknown: self.deny_unknown,
        };
        while let Some(index) = map.next_key_seed(key)? {
            match index {
                Some(index) => F::read(&mut slots, index, &mut map, self.names)?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        F::finish(slots, self.names)
    }
}

/// A key of the struct: the position of the field it names, `None` for an
/// unknown field that is skipped.
#[derive(Clone, Copy)]
struct FieldKey {
    names: &'static [&'static str],
    deny_unknown: bool,
}

impl<'de> DeserializeSeed<'de> for FieldKey {
    type Value = Option<usize>;

    #[inline]
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for FieldKey {
    type Value = Option<usize>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("field identifier")
    }

    #[inline]
    fn visit_str<E: Error>(self, key: &str) -> Result<Self::Value, E> {
        let known = self
            .names
            .iter()
            .position(|name| same_name(name.as_bytes(), key.as_bytes()));
        match known {
            Some(index) => Ok(Some(index)),
            None if self.deny_unknown => Err(E::unknown_field(key, self.names)),
            None => Ok(None),
        }
    }

    fn visit_bytes<E: Error>(self, key: &[u8]) -> Result<Self::Value, E> {
        match std::str::from_utf8(key) {
            Ok(key) => self.visit_str(key),
            Err(_) if self.deny_unknown => {
                Err(E::unknown_field(&String::from_utf8_lossy(key), self.names))
            }
            Err(_) => Ok(None),
        }
    }
}

/// Whether a key is a field's name. Names are short: 4 to 16 bytes are
/// compared as two words that may overlap, a few instructions inline
/// where `==` would call `memcmp` and a byte loop would take one step a
/// byte.
#[inline]
fn same_name(name: &[u8], key: &[u8]) -> bool {
    let len = name.len();
    if len != key.len() {
        return false;
    }
    // The four or eight bytes of `bytes` at `at` (within it, by the
    // length's arm below).
    fn word4(bytes: &[u8], at: usize) -> Option<u32> {
        Some(u32::from_ne_bytes(*bytes.get(at..)?.first_chunk()?))
    }
    fn word8(bytes: &[u8], at: usize) -> Option<u64> {
        Some(u64::from_ne_bytes(*bytes.get(at..)?.first_chunk()?))
    }
    match len {
        0..=3 => name.iter().zip(key).all(|(a, b)| a == b),
        4..=8 => word4(name, 0) == word4(key, 0) && word4(name, len - 4) == word4(key, len - 4),
        9..=16 => word8(name, 0) == word8(key, 0) && word8(name, len - 8) == word8(key, len - 8),
        _ => name == key,
    }
}

/// The value of a field that was not sent: `None` for a type that reads a
/// missing value (`Option`), the "missing field" error otherwise.
pub(super) fn missing<'de, T: Deserialize<'de>, E: Error>(name: &'static str) -> Result<T, E> {
    T::deserialize(MissingField {
        name,
        error: PhantomData,
    })
}

struct MissingField<E> {
    name: &'static str,
    error: PhantomData<E>,
}

impl<'de, E: Error> Deserializer<'de> for MissingField<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, E> {
        Err(E::missing_field(self.name))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

macro_rules! fields {
    ($($field:ident $index:tt)*) => {
        impl<'de, $($field: Deserialize<'de>),*> Fields<'de> for ($($field,)*) {
            type Slots = ($(Option<$field>,)*);

            #[allow(unused_variables)]
            #[inline]
            fn read<M: MapAccess<'de>>(
                slots: &mut Self::Slots,
                index: usize,
                map: &mut M,
                names: &'static [&'static str],
            ) -> Result<(), M::Error> {
                match index {
                    $($index => {
                        if slots.$index.is_some() {
                            return Err(M::Error::duplicate_field(names[$index]));
                        }
                        slots.$index = Some(map.next_value()?);
                    })*
                    // Keys are positions in `names`, which has one per field.
                    _ => {}
                }
                Ok(())
            }

            #[allow(unused_variables, clippy::unused_unit)]
            #[inline]
            fn finish<Fail: Error>(
                slots: Self::Slots,
                names: &'static [&'static str],
            ) -> Result<Self, Fail> {
                Ok(($(
                    match slots.$index {
                        Some(value) => value,
                        None => missing(names[$index])?,
                    },
                )*))
            }
        }
    };
}

fields!();
fields!(A 0);
fields!(A 0 B 1);
fields!(A 0 B 1 C 2);
fields!(A 0 B 1 C 2 D 3);
fields!(A 0 B 1 C 2 D 3 E 4);
fields!(A 0 B 1 C 2 D 3 E 4 F 5);
fields!(A 0 B 1 C 2 D 3 E 4 F 5 G 6);
fields!(A 0 B 1 C 2 D 3 E 4 F 5 G 6 H 7);
fields!(A 0 B 1 C 2 D 3 E 4 F 5 G 6 H 7 I 8);
fields!(A 0 B 1 C 2 D 3 E 4 F 5 G 6 H 7 I 8 J 9);
fields!(A 0 B 1 C 2 D 3 E 4 F 5 G 6 H 7 I 8 J 9 K 10);
// Up to twelve fields, as far as tuples implement `Default`; the macro
// derives `Deserialize` for larger structs.
fields!(A 0 B 1 C 2 D 3 E 4 F 5 G 6 H 7 I 8 J 9 K 10 L 11);

#[cfg(test)]
mod tests {
    use super::same_name;

    /// Every length up to past the word-wise ones: a name matches itself,
    /// and a key that differs from it in any one byte, or in length, does
    /// not.
    #[test]
    fn a_key_is_a_name_only_when_every_byte_and_the_length_agree() {
        for len in 0..=24 {
            let name: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(same_name(&name, &name.clone()), "length {len}");
            for at in 0..len {
                let mut key = name.clone();
                key[at] ^= 0x20;
                assert!(!same_name(&name, &key), "length {len}, byte {at}");
            }
            let mut longer = name.clone();
            longer.push(b'a');
            assert!(!same_name(&name, &longer), "length {len}");
            assert!(!same_name(&longer, &name), "length {len}");
        }
    }
}

//! The typed routes for tools with arguments whose types are not plain (a
//! struct or an enum of the user's, a map, a `Value`): the tool's own types
//! read the arguments, and the value of each such argument is first read
//! as a `Value` and held to the schema of its property, as the checked
//! route would hold it (within the depth limit, integral floats as
//! integers, `null` members of optional fields left out). The plain
//! arguments around them read straight into their types, which accept
//! exactly what their schemas do, so nothing else is built or checked.
//!
//! On the text route the check sits between the deserializer and the
//! generated arguments struct's `Deserialize` (an adapter over the
//! outermost map, as `serde_ignored` and `serde_path_to_error` are), and
//! refuses anything but an object. On the value route the arguments are
//! held where they are before the struct reads the object (`FieldChecks::hold`).
//! A tool whose arguments struct is derived (past twelve arguments) has no
//! typed route: `serde_derive` reads an array too.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Map, Value};

use crate::arguments::{
    drop_optional_nulls, dropped_optional_nulls, has_null_member, measure, normalise_all, walk,
    DecodeLimits,
};
use crate::validation::ArgumentValidator;

/// The checks of a tool's arguments that its types do not make.
pub struct FieldChecks {
    fields: Vec<CheckedField>,
}

/// One argument whose type is not plain.
struct CheckedField {
    /// Its name on the wire.
    name: &'static str,
    /// Not required: `null` stands for "left out".
    optional: bool,
    /// Its property's schema, with the root's definitions for its `$ref`s.
    schema: Value,
    validator: ArgumentValidator,
    /// The strings its schema accepts, where it accepts those and nothing
    /// else (a unit-only enum's variants): checked where they are, with no
    /// `Value` made.
    strings: Option<Vec<String>>,
}

impl CheckedField {
    /// A `null` for an optional argument: "left out", whatever the schema.
    fn left_out(&self, value: &Value) -> bool {
        value.is_null() && self.optional
    }

    /// Whether `text` is one of the strings the schema accepts, for an
    /// argument that accepts a set of them.
    fn names(strings: &[String], text: &str) -> bool {
        strings.iter().any(|name| name == text)
    }
}

/// Whether a property's schema, made a root of its own with the root's
/// definitions, means what it meant under the arguments schema: every
/// `$ref` points into the definitions, and nothing names a base or anchor
/// (`"#"` would now be the property itself). Any object key counts,
/// property names too: a schema refused here only takes the checked route.
fn stands_alone(schema: &Value) -> bool {
    const NAMING: &[&str] = &[
        "$id",
        "$anchor",
        "$dynamicRef",
        "$dynamicAnchor",
        "$recursiveRef",
        "$recursiveAnchor",
    ];
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                for (key, item) in object {
                    if NAMING.contains(&key.as_str()) {
                        return false;
                    }
                    if key == "$ref"
                        && !item.as_str().is_some_and(|target| {
                            target.starts_with("#/$defs/") || target.starts_with("#/definitions/")
                        })
                    {
                        return false;
                    }
                    stack.push(item);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    true
}

/// The limits of an argument's value, one level below the arguments
/// object.
fn below(limits: DecodeLimits) -> DecodeLimits {
    DecodeLimits {
        max_depth: limits.max_depth.saturating_sub(1),
        ..limits
    }
}

impl fmt::Debug for FieldChecks {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_list().entries(self.names()).finish()
    }
}

/// The keywords of an arguments schema whose checks the typed routes make
/// between them: the arguments struct refuses unknown and duplicate
/// fields and requires the required ones, and the properties are checked
/// one by one. A schema with any other keyword at its root (a spec file's
/// `minProperties`, say) has no typed route.
const ROOT_KEYWORDS: &[&str] = &[
    "$schema",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$defs",
    "definitions",
    "title",
    "description",
];

impl FieldChecks {
    /// The checks of the arguments `names` in the arguments schema `root`,
    /// or `None` where the typed routes cannot hold them to it exactly.
    pub(crate) fn new(root: &Value, names: &[&'static str]) -> Option<Self> {
        let root = root.as_object()?;
        if root
            .keys()
            .any(|key| !ROOT_KEYWORDS.contains(&key.as_str()))
            || root.get("type") != Some(&Value::from("object"))
            || root.get("additionalProperties") != Some(&Value::Bool(false))
        {
            return None;
        }
        let properties = root.get("properties")?.as_object()?;
        let required: Vec<&str> = match root.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            None => Vec::new(),
            Some(_) => return None,
        };
        let fields = names
            .iter()
            .map(|&name| {
                let mut schema = match properties.get(name)? {
                    Value::Object(property) => property.clone(),
                    Value::Bool(true) => Map::new(),
                    Value::Bool(false) => Map::from_iter([("not".to_owned(), json!({}))]),
                    _ => return None,
                };
                // The property's `$ref`s point into the root's definitions,
                // and it is read in the root's draft.
                for key in ["$schema", "$defs", "definitions"] {
                    if let Some(value) = root.get(key) {
                        if schema.insert(key.to_owned(), value.clone()).is_some() {
                            return None;
                        }
                    }
                }
                let strings = string_set(&schema, root, 0);
                let schema = Value::Object(schema);
                if !stands_alone(&schema) {
                    return None;
                }
                Some(CheckedField {
                    name,
                    optional: !required.contains(&name),
                    validator: ArgumentValidator::compile(&schema).ok()?,
                    schema,
                    strings,
                })
            })
            .collect::<Option<_>>()?;
        Some(Self { fields })
    }

    /// The names of the arguments checked, in order.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.fields.iter().map(|field| field.name)
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.fields.iter().position(|field| field.name == key)
    }

    /// Holds the value of field `index` to its schema as the checked route
    /// would, normalising it on the way; `false` when it does not hold.
    fn check(&self, index: usize, value: &mut Value, limits: DecodeLimits) -> bool {
        let field = &self.fields[index];
        if field.left_out(value) {
            return true;
        }
        if walk(value, below(limits)).is_err() {
            return false;
        }
        drop_optional_nulls(value, &field.schema);
        field.validator.is_valid(value)
    }

    /// Holds the checked arguments present in a parsed arguments object to
    /// their schemas as [`check`](Self::check) would, in place unless one
    /// holds something the checked route changes (a float, a `null`
    /// member). The object's own types then read it where it is, under the
    /// limits; so one holding a `null` the checked route would drop is not
    /// held, and takes that route.
    pub(crate) fn hold(&self, object: &Map<String, Value>, limits: DecodeLimits) -> bool {
        self.fields.iter().all(|field| {
            let Some(value) = object.get(field.name) else {
                return true;
            };
            if field.left_out(value) {
                return true;
            }
            if let Some(strings) = &field.strings {
                return value
                    .as_str()
                    .is_some_and(|text| CheckedField::names(strings, text));
            }
            match measure(value, below(limits)) {
                Err(_) => false,
                // The types then read the value where it is, integral
                // floats as integers; a `null` the checked route would drop
                // is left to that route, since a type may read it otherwise
                // than "left out" (a field whose default is `Some`).
                Ok(measured) if measured.floats || has_null_member(value) => {
                    let mut value = value.clone();
                    if measured.floats {
                        normalise_all(&mut value);
                    }
                    !dropped_optional_nulls(&mut value, &field.schema)
                        && field.validator.is_valid(&value)
                }
                Ok(_) => field.validator.is_valid(value),
            }
        })
    }
}

/// Reads `T` from `deserializer`, the arguments named in `checks` held to
/// their schemas under `limits`. Only the outermost map is watched.
pub(crate) fn read<'de, T, D>(
    deserializer: D,
    checks: &FieldChecks,
    limits: DecodeLimits,
) -> Result<T, D::Error>
where
    T: de::Deserialize<'de>,
    D: Deserializer<'de>,
{
    T::deserialize(Checked {
        inner: deserializer,
        checks: Watch { checks, limits },
    })
}

/// What the adapter checks against.
#[derive(Clone, Copy)]
struct Watch<'c> {
    checks: &'c FieldChecks,
    limits: DecodeLimits,
}

/// The deserializer of the arguments object.
struct Checked<'c, D> {
    inner: D,
    checks: Watch<'c>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Checked<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(Outer {
            visitor,
            checks: self.checks,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            Outer {
                visitor,
                checks: self.checks,
            },
        )
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_map(Outer {
            visitor,
            checks: self.checks,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct enum identifier ignored_any
    }
}

/// The visitor of the arguments object: watches its map.
struct Outer<'c, V> {
    visitor: V,
    checks: Watch<'c>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Outer<'_, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<V::Value, M::Error> {
        self.visitor.visit_map(Fields {
            map,
            checks: self.checks,
            pending: None,
        })
    }

    // The arguments are an object: an array is refused here, whatever the
    // struct's own visitor would make of it.
    fn visit_seq<S: SeqAccess<'de>>(self, _seq: S) -> Result<V::Value, S::Error> {
        Err(de::Error::invalid_type(de::Unexpected::Seq, &self))
    }
}

/// The arguments object's members: a checked field's value is read as a
/// `Value`, held to its schema, then given to the field's type.
struct Fields<'c, M> {
    map: M,
    checks: Watch<'c>,
    /// The checked field whose value comes next.
    pending: Option<usize>,
}

impl<'de, M: MapAccess<'de>> MapAccess<'de> for Fields<'_, M> {
    type Error = M::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, M::Error> {
        self.pending = None;
        self.map.next_key_seed(Key {
            seed,
            checks: self.checks.checks,
            pending: &mut self.pending,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        let Some(index) = self.pending.take() else {
            return self.map.next_value_seed(seed);
        };
        let field = &self.checks.checks.fields[index];
        if let Some(strings) = &field.strings {
            return match self.map.next_value_seed(TextOrNull)? {
                Text::Null if field.optional => {
                    seed.deserialize(de::value::UnitDeserializer::new())
                }
                Text::Borrowed(text) if CheckedField::names(strings, text) => {
                    seed.deserialize(Member(de::value::BorrowedStrDeserializer::new(text)))
                }
                Text::Owned(text) if CheckedField::names(strings, &text) => {
                    seed.deserialize(Member(de::value::StringDeserializer::new(text)))
                }
                _ => Err(de::Error::custom("an argument does not match its schema")),
            };
        }
        let mut value: Value = self.map.next_value()?;
        if !self
            .checks
            .checks
            .check(index, &mut value, self.checks.limits)
        {
            // The checked route explains what is wrong.
            return Err(de::Error::custom("an argument does not match its schema"));
        }
        seed.deserialize(value).map_err(de::Error::custom)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A member's key, noted on its way to the struct's own key seed.
struct Key<'a, K> {
    seed: K,
    checks: &'a FieldChecks,
    pending: &'a mut Option<usize>,
}

impl<'de, K: DeserializeSeed<'de>> DeserializeSeed<'de> for Key<'_, K> {
    type Value = K::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<K::Value, D::Error> {
        self.seed.deserialize(KeyReader {
            inner: deserializer,
            checks: self.checks,
            pending: self.pending,
        })
    }
}

struct KeyReader<'a, D> {
    inner: D,
    checks: &'a FieldChecks,
    pending: &'a mut Option<usize>,
}

impl<'a, D> KeyReader<'a, D> {
    fn noting<V>(self, visitor: V) -> (D, NoteKey<'a, V>) {
        let note = NoteKey {
            visitor,
            checks: self.checks,
            pending: self.pending,
        };
        (self.inner, note)
    }
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for KeyReader<'_, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, note) = self.noting(visitor);
        inner.deserialize_any(note)
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, note) = self.noting(visitor);
        inner.deserialize_identifier(note)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, note) = self.noting(visitor);
        inner.deserialize_str(note)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        let (inner, note) = self.noting(visitor);
        inner.deserialize_string(note)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum ignored_any
    }
}

/// Notes whether a key names a checked field, then hands it on.
struct NoteKey<'a, V> {
    visitor: V,
    checks: &'a FieldChecks,
    pending: &'a mut Option<usize>,
}

impl<V> NoteKey<'_, V> {
    fn note(&mut self, key: &str) {
        *self.pending = self.checks.position(key);
    }
}

impl<'de, V: Visitor<'de>> Visitor<'de> for NoteKey<'_, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_str<E: de::Error>(mut self, key: &str) -> Result<V::Value, E> {
        self.note(key);
        self.visitor.visit_str(key)
    }

    fn visit_borrowed_str<E: de::Error>(mut self, key: &'de str) -> Result<V::Value, E> {
        self.note(key);
        self.visitor.visit_borrowed_str(key)
    }

    fn visit_string<E: de::Error>(mut self, key: String) -> Result<V::Value, E> {
        self.note(&key);
        self.visitor.visit_string(key)
    }

    fn visit_bytes<E: de::Error>(mut self, key: &[u8]) -> Result<V::Value, E> {
        if let Ok(key) = std::str::from_utf8(key) {
            self.note(key);
        }
        self.visitor.visit_bytes(key)
    }

    fn visit_borrowed_bytes<E: de::Error>(mut self, key: &'de [u8]) -> Result<V::Value, E> {
        if let Ok(key) = std::str::from_utf8(key) {
            self.note(key);
        }
        self.visitor.visit_borrowed_bytes(key)
    }

    fn visit_byte_buf<E: de::Error>(mut self, key: Vec<u8>) -> Result<V::Value, E> {
        if let Ok(key) = std::str::from_utf8(&key) {
            self.note(key);
        }
        self.visitor.visit_byte_buf(key)
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<V::Value, E> {
        self.visitor.visit_u64(index)
    }
}

/// A string argument as it comes, or `null`.
enum Text<'de> {
    Borrowed(&'de str),
    Owned(String),
    Null,
}

/// A string of a set, for the argument's type: a unit variant, or the
/// string itself; `Some` of it where the type is an `Option` (a defaulted
/// argument's is).
struct Member<D>(D);

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Member<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.0.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        visitor.visit_some(self.0)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        visitor.visit_newtype_struct(self.0)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct
        identifier ignored_any
    }
}

/// Reads a [`Text`]; anything else is an error.
struct TextOrNull;

impl<'de> DeserializeSeed<'de> for TextOrNull {
    type Value = Text<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Text<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TextOrNull {
    type Value = Text<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a string or null")
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Text<'de>, E> {
        Ok(Text::Borrowed(text))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Text<'de>, E> {
        Ok(Text::Owned(text.to_owned()))
    }

    fn visit_string<E: de::Error>(self, text: String) -> Result<Text<'de>, E> {
        Ok(Text::Owned(text))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Text<'de>, E> {
        Ok(Text::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Text<'de>, E> {
        Ok(Text::Null)
    }
}

/// Annotations: they accept anything.
const ANNOTATIONS: &[&str] = &[
    "description",
    "title",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "$schema",
    "$defs",
    "definitions",
];

/// The strings `schema` accepts when it accepts a finite set of strings and
/// nothing else: an `enum` or `const` of strings, a `oneOf` or `anyOf` of
/// such schemas (as schemars writes a unit-only enum whose variants have
/// docs), or a local `$ref` to one, with `"type": "string"` and
/// annotations beside it. `None` for any other schema, or one holding a
/// keyword not named here.
fn string_set(
    schema: &Map<String, Value>,
    root: &Map<String, Value>,
    depth: usize,
) -> Option<Vec<String>> {
    // `$ref` cycles end here.
    if depth > 8 {
        return None;
    }
    let mut found: Option<Vec<String>> = None;
    for (key, value) in schema {
        let strings = match key.as_str() {
            key if ANNOTATIONS.contains(&key) => continue,
            "type" if value == "string" => continue,
            "const" => vec![value.as_str()?.to_owned()],
            "enum" => value
                .as_array()?
                .iter()
                .map(|item| item.as_str().map(str::to_owned))
                .collect::<Option<_>>()?,
            "oneOf" | "anyOf" => {
                let mut all: Vec<String> = Vec::new();
                for branch in value.as_array()? {
                    for text in string_set(branch.as_object()?, root, depth + 1)? {
                        // Two branches that accept one string: `oneOf`
                        // refuses it.
                        if all.contains(&text) {
                            return None;
                        }
                        all.push(text);
                    }
                }
                all
            }
            "$ref" => {
                let name = value
                    .as_str()?
                    .strip_prefix("#/$defs/")
                    .filter(|name| !name.contains(['/', '~', '%']))?;
                let target = root.get("$defs")?.get(name)?.as_object()?;
                string_set(target, root, depth + 1)?
            }
            _ => return None,
        };
        // One keyword that names the set: two would intersect.
        if found.replace(strings).is_some() {
            return None;
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(schema: Value) -> Option<Vec<String>> {
        let root = json!({"$defs": {
            "Level": {"oneOf": [
                {"type": "string", "const": "low", "description": "Quiet."},
                {"type": "string", "const": "high"}
            ]},
            "Loop": {"$ref": "#/$defs/Loop"}
        }});
        string_set(schema.as_object().unwrap(), root.as_object().unwrap(), 0)
    }

    #[test]
    fn a_property_that_means_otherwise_alone_has_no_checks() {
        let root = |property: Value| {
            json!({
                "type": "object",
                "properties": {"q": property},
                "required": ["q"],
                "additionalProperties": false,
                "$defs": {"Q": {"type": "string"}}
            })
        };
        assert!(FieldChecks::new(&root(json!({"$ref": "#/$defs/Q"})), &["q"]).is_some());
        for property in [
            json!({"$ref": "#"}),
            json!({"$ref": "#/properties/q"}),
            json!({"items": {"$ref": "other.json"}}),
            json!({"$id": "https://example.com/q", "type": "string"}),
            json!({"$anchor": "q"}),
            json!({"$defs": {"X": {}}}),
        ] {
            assert!(
                FieldChecks::new(&root(property.clone()), &["q"]).is_none(),
                "{property}"
            );
        }
        // Root keywords the typed routes do not check.
        let mut wider = root(json!({"type": "string"}));
        wider["minProperties"] = json!(1);
        assert!(FieldChecks::new(&wider, &["q"]).is_none());
    }

    #[test]
    fn a_finite_set_of_strings_is_found_and_nothing_else() {
        let set = |items: &[&str]| Some(items.iter().map(|s| s.to_string()).collect());
        assert_eq!(
            strings(json!({"type": "string", "enum": ["a", "b"]})),
            set(&["a", "b"])
        );
        assert_eq!(strings(json!({"const": "a", "title": "A"})), set(&["a"]));
        assert_eq!(
            strings(json!({"$ref": "#/$defs/Level", "description": "How loud.", "default": "low"})),
            set(&["low", "high"])
        );
        for other in [
            // `null` too, or any string, or another type.
            json!({"anyOf": [{"$ref": "#/$defs/Level"}, {"type": "null"}]}),
            json!({"type": "string"}),
            json!({"enum": ["a", 1]}),
            json!({"type": "integer", "enum": ["a"]}),
            // A keyword that says more.
            json!({"enum": ["a"], "minLength": 2}),
            json!({"enum": ["a"], "const": "a"}),
            // `oneOf` refuses a string two branches accept.
            json!({"oneOf": [{"const": "a"}, {"const": "a"}]}),
            json!({"$ref": "#/$defs/Loop"}),
            json!({"$ref": "#/$defs/Missing"}),
            json!({"$ref": "other.json#/$defs/Level"}),
        ] {
            assert_eq!(strings(other.clone()), None, "{other}");
        }
    }
}

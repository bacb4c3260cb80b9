//! Parsing argument text into a `Value` in one pass that also applies the
//! nesting limit and turns integral floats into integers, so the parsed
//! tree never has to be walked again.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Marks the error raised when the nesting limit is passed, to tell it from
/// a syntax error after serde_json has wrapped it with a position.
const TOO_DEEP: &str = "behest: nesting limit exceeded";

/// Parses `text` into a `Value` no deeper than `max_depth` (the value
/// itself is level 1; only arrays and objects count).
pub(super) fn parse(text: &str, max_depth: usize) -> serde_json::Result<Value> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let value = Bounded {
        depth: 1,
        max_depth,
    }
    .deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
}

/// Whether `error` says the text nests too deeply: past `max_depth`, or
/// past serde_json's own limit of 128 levels when `max_depth` is higher.
pub(super) fn is_too_deep(error: &serde_json::Error) -> bool {
    let text = error.to_string();
    text.starts_with(TOO_DEEP) || text.starts_with("recursion limit exceeded")
}

/// A value at nesting level `depth`.
#[derive(Clone, Copy)]
struct Bounded {
    depth: usize,
    max_depth: usize,
}

impl Bounded {
    fn enter<E: serde::de::Error>(self) -> Result<Self, E> {
        if self.depth > self.max_depth {
            return Err(E::custom(TOO_DEEP));
        }
        Ok(Self {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for Bounded {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Value, E> {
        if let Some(integer) = integral(value) {
            return Ok(Value::Number(integer));
        }
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("number out of range"))
    }

    fn visit_str<E>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            // As serde_json does: a repeated key keeps its last value.
            let value = map.next_value_seed(inner)?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

/// The integer a float with no fractional part stands for, when the float
/// is surely exact: `1.0` is `1`, as JSON Schema's `"type": "integer"`
/// counts it.
///
/// From 2^53 on a float no longer holds every integer: the text
/// `12345678901234567.0` parses to …568.0, `9007199254740993.5` to an
/// integral …994.0, and `-9223372036854775809` (below `i64::MIN`) to a float
/// that would clamp to `i64::MIN`. Such floats stay floats, so an integer
/// field refuses them with an argument error instead of getting another
/// number than the model wrote; a float field still takes them.
pub(super) fn integral(float: f64) -> Option<Number> {
    /// 2^53: past it, and at it (which `…993.0` rounds to), a float is not
    /// surely the integer written.
    const EXACT: f64 = 9_007_199_254_740_992.0;
    if float.fract() != 0.0 || float.abs() >= EXACT {
        return None;
    }
    // Below 2^53 the cast is exact.
    Some(Number::from(float as i64))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn parses_like_serde_json() {
        let text = r#"{"a": [1, -2, 2.5, "x\u00e9", null, true, {"b": {}}], "a2": "y", "a2": "z"}"#;
        let ours = parse(text, 64).unwrap();
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn integral_floats_become_integers() {
        let value = parse(
            r#"[1.0, -0.0, 9007199254740991.0, 9007199254740993.0, 1e19, 1e30, 1.5]"#,
            4,
        )
        .unwrap();
        assert_eq!(
            value,
            json!([
                1,
                0,
                9_007_199_254_740_991u64,
                9_007_199_254_740_992.0,
                1e19,
                1e30,
                1.5
            ])
        );
        assert!(value[3].is_f64() && value[4].is_f64() && value[5].is_f64());
    }

    #[test]
    fn depth_counts_containers_only() {
        assert!(parse(&nested(4), 4).is_ok());
        assert!(parse(r#"[[[["deep scalar"]]]]"#, 4).is_ok());
        let error = parse(&nested(5), 4).unwrap_err();
        assert!(is_too_deep(&error), "{error}");
        let error = parse(&nested(200), 1000).unwrap_err();
        assert!(is_too_deep(&error), "serde_json's own limit: {error}");
    }

    #[test]
    fn syntax_errors_are_not_depth_errors() {
        for text in ["[1,", "{'a': 1}", "[] x", "\"\\ud800\""] {
            let error = parse(text, 4).unwrap_err();
            assert!(!is_too_deep(&error), "{text}: {error}");
        }
    }
}

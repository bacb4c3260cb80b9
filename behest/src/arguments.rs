//! Turning what the model sent into an arguments object: decoding provider
//! text, enforcing size and depth limits, and typed parsing with paths.

use serde::de::DeserializeOwned;
use serde_json::{Map, Number, Value};

use crate::json_text::{preview, quoted_list, scalar_len};
use crate::limits::Limits;
use crate::tool::{ArgumentIssue, LimitKind, ToolError, ToolResult};
use crate::validation::ArgumentValidator;

mod bounded;
mod field_checks;
mod nulls;
mod reader;

pub(crate) use field_checks::{read as read_checked, FieldChecks};
pub use nulls::drop_optional_nulls;
pub(crate) use nulls::{dropped_optional_nulls, has_null_member};
pub(crate) use reader::read;

/// Limits applied while decoding arguments.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DecodeLimits {
    pub max_bytes: usize,
    pub max_depth: usize,
}

impl From<&Limits> for DecodeLimits {
    fn from(limits: &Limits) -> Self {
        Self {
            max_bytes: limits.max_argument_bytes,
            max_depth: limits.max_argument_depth,
        }
    }
}

/// Decodes a call's arguments into a JSON object.
///
/// `arguments` is either the value itself or the JSON text a provider sends
/// (a `Value::String`), which is decoded exactly once. `""`, `null` and
/// `"null"` stand for "no arguments": they become `{}` when
/// `required_names` is empty and are an argument error otherwise.
///
/// Floats with no fractional part within ±2^53 (`1.0`) become
/// integers, so a field typed `i64` accepts `1.0` as `1`, as JSON Schema's
/// `"type": "integer"` does.
pub(crate) fn decode(
    arguments: Value,
    limits: DecodeLimits,
    required_names: &[String],
) -> ToolResult<Map<String, Value>> {
    let value = match arguments {
        Value::String(text) => decode_text(&text, limits)?,
        Value::Null => Value::Null,
        mut value => {
            walk(&mut value, limits)?;
            value
        }
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null if required_names.is_empty() => Ok(Map::new()),
        Value::Null => Err(ToolError::invalid_argument(
            "",
            format!(
                "no arguments were sent, but the tool requires {}",
                quoted_list(required_names)
            ),
        )),
        other => Err(ToolError::invalid_argument(
            "",
            format!(
                "the arguments must be a JSON object, but {}",
                describe_received(&other)
            ),
        )),
    }
}

fn decode_text(text: &str, limits: DecodeLimits) -> ToolResult<Value> {
    if text.len() > limits.max_bytes {
        return Err(ToolError::LimitExceeded {
            kind: LimitKind::ArgumentBytes,
            limit: limits.max_bytes,
            actual: Some(text.len()),
        });
    }
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(Value::Null);
    }
    // One pass parses, bounds the nesting (serde_json's own limit of 128
    // levels also holds, so no text can overflow the stack) and turns
    // integral floats into integers.
    bounded::parse(trimmed, limits.max_depth).map_err(|error| {
        if bounded::is_too_deep(&error) {
            return depth_error(limits.max_depth);
        }
        ToolError::invalid_argument(
            "",
            format!(
                "the arguments are not valid JSON: {error}{}",
                syntax_hint(&error)
            ),
        )
    })
}

/// A plain-words hint for the JSON syntax errors models make most.
fn syntax_hint(error: &serde_json::Error) -> &'static str {
    let text = error.to_string();
    if error.is_eof() {
        " (the text is cut short: close every string, array and object)"
    } else if text.starts_with("trailing characters") {
        " (there is text after the end of the arguments object)"
    } else if text.starts_with("key must be a string") {
        " (keys and strings need double quotes)"
    } else if text.contains("hex escape") || text.contains("surrogate") {
        " (a `\\u` escape must be 4 hex digits, and surrogates come in pairs)"
    } else if text.starts_with("number out of range") {
        " (a number is too large to represent)"
    } else {
        ""
    }
}

/// Bounds a value given as a value (text is bounded while it is parsed),
/// without recursion: checks the nesting depth (the value itself is at
/// level one) and the approximate encoded size, then turns integral floats
/// into integers. Nothing is changed unless both limits hold. (The value
/// route reads an object under the same limits without changing it:
/// [`read`].)
pub(crate) fn walk(value: &mut Value, limits: DecodeLimits) -> ToolResult<()> {
    if measure(value, limits)?.floats {
        normalise_all(value);
    }
    Ok(())
}

/// What [`measure`] finds of a value within the limits.
pub(crate) struct Measured {
    /// The approximate encoded size: scalars as [`scalar_len`] counts
    /// them, a bracket and a comma per item, a key with its quotes, colon
    /// and comma.
    size: usize,
    /// Whether the value holds a float.
    pub floats: bool,
}

/// The limits of [`walk`] (and of a value [`read`] skips): the value's
/// size and whether it holds a float.
pub(crate) fn measure(value: &Value, limits: DecodeLimits) -> ToolResult<Measured> {
    let DecodeLimits {
        max_bytes,
        max_depth,
    } = limits;
    let mut floats = false;
    // Most arguments are one object of scalars: one pass and no stack.
    if let Value::Object(map) = value {
        if max_depth >= 1 {
            // As the walk below counts an object: 1 for itself, 1 more.
            let mut size = 2usize;
            let mut flat = true;
            for (key, item) in map {
                match item {
                    Value::Array(_) | Value::Object(_) => {
                        flat = false;
                        break;
                    }
                    Value::Number(number) => floats |= number.is_f64(),
                    _ => {}
                }
                size += key.len() + 4 + scalar_len(item);
            }
            if flat {
                return if size > max_bytes {
                    Err(size_error(max_bytes))
                } else {
                    Ok(Measured { size, floats })
                };
            }
            floats = false;
        }
    }
    let mut size = 0usize;
    let mut stack: Vec<(&Value, usize)> = Vec::with_capacity(8);
    stack.push((value, 1));
    while let Some((value, depth)) = stack.pop() {
        size += scalar_len(value);
        match value {
            Value::Array(items) => {
                if depth > max_depth {
                    return Err(depth_error(max_depth));
                }
                size += items.len() + 1;
                stack.extend(items.iter().map(|item| (item, depth + 1)));
            }
            Value::Object(map) => {
                if depth > max_depth {
                    return Err(depth_error(max_depth));
                }
                size += 1;
                for (key, item) in map {
                    size += key.len() + 4;
                    stack.push((item, depth + 1));
                }
            }
            Value::Number(number) => floats |= number.is_f64(),
            _ => {}
        }
        if size > max_bytes {
            return Err(size_error(max_bytes));
        }
    }
    Ok(Measured { size, floats })
}

/// Turns every integral float in `value` into the integer it is; no stack
/// for a value without nested arrays or objects.
pub(crate) fn normalise_all(value: &mut Value) {
    let mut stack: Vec<&mut Value> = Vec::new();
    let mut next = Some(value);
    while let Some(value) = next.take().or_else(|| stack.pop()) {
        match value {
            Value::Number(number) => normalise(number),
            Value::Array(items) => {
                for item in items {
                    normalise_or_keep(item, &mut stack);
                }
            }
            Value::Object(map) => {
                for item in map.values_mut() {
                    normalise_or_keep(item, &mut stack);
                }
            }
            _ => {}
        }
    }
}

/// Normalises a number; keeps an array or object for later.
fn normalise_or_keep<'a>(item: &'a mut Value, stack: &mut Vec<&'a mut Value>) {
    match item {
        Value::Number(number) => normalise(number),
        Value::Array(_) | Value::Object(_) => stack.push(item),
        _ => {}
    }
}

/// An integral float (within ±2^53) becomes the integer it is.
fn normalise(number: &mut Number) {
    if let Some(integer) = as_integer(number) {
        *number = integer;
    }
}

/// The integer an integral float (within ±2^53) is; `None` for any other
/// number. The one rule of both routes for a number given as a value.
#[inline]
fn as_integer(number: &Number) -> Option<Number> {
    if !number.is_f64() {
        return None;
    }
    number.as_f64().and_then(bounded::integral)
}

fn size_error(max_bytes: usize) -> ToolError {
    ToolError::LimitExceeded {
        kind: LimitKind::ArgumentBytes,
        limit: max_bytes,
        actual: None,
    }
}

fn depth_error(max_depth: usize) -> ToolError {
    ToolError::LimitExceeded {
        kind: LimitKind::ArgumentDepth,
        limit: max_depth,
        actual: None,
    }
}

/// Describes a value that is not an arguments object, for the model.
fn describe_received(value: &Value) -> String {
    match value {
        Value::String(inner) => {
            let looks_like_json =
                matches!(inner.trim_start().as_bytes().first(), Some(b'{' | b'['));
            if looks_like_json {
                "received a string that itself contains JSON (the arguments were encoded twice); send the object, not a string holding it".to_owned()
            } else {
                format!("received the string {}", preview(value))
            }
        }
        Value::Array(_) => format!("received an array: {}", preview(value)),
        Value::Number(_) => format!("received the number {}", preview(value)),
        Value::Bool(_) => format!("received the boolean {}", preview(value)),
        Value::Null => "received null".to_owned(),
        Value::Object(_) => "received an object".to_owned(),
    }
}

/// Deserializes validated arguments into `T`, reporting the path of the
/// field that does not fit.
///
/// ```
/// #[derive(Debug, serde::Deserialize)]
/// struct Args { count: u8 }
///
/// let error = behest::arguments::parse::<Args>(serde_json::json!({"count": 300})).unwrap_err();
/// assert!(error.to_string().contains("`/count`"));
/// ```
pub fn parse<T: DeserializeOwned>(arguments: Value) -> ToolResult<T> {
    // Path tracking costs as much as the parse itself, so it only runs again
    // to explain a failure.
    T::deserialize(&arguments).or_else(|_| {
        serde_path_to_error::deserialize(&arguments).map_err(|error| {
            let path = json_pointer(error.path());
            ToolError::InvalidArguments {
                issues: vec![ArgumentIssue::new(path, error.into_inner().to_string())],
                omitted: 0,
            }
        })
    })
}

/// Decodes, validates and parses arguments as the runtime does, with the
/// default limits: for handlers that receive a call's raw arguments.
pub fn parse_validated<T: DeserializeOwned>(
    arguments: Value,
    validator: &ArgumentValidator,
) -> ToolResult<T> {
    parse_validated_with(arguments, validator, &Limits::default())
}

/// [`parse_validated`] under a runtime's limits (`runtime.limits()`).
pub fn parse_validated_with<T: DeserializeOwned>(
    arguments: Value,
    validator: &ArgumentValidator,
    limits: &Limits,
) -> ToolResult<T> {
    let limits = DecodeLimits::from(limits);
    let required = crate::validation::required_names(validator.schema());
    let mut arguments = Value::Object(decode(arguments, limits, &required)?);
    drop_optional_nulls(&mut arguments, validator.schema());
    if let Err((issues, omitted)) = validator.validate(&arguments) {
        return Err(ToolError::InvalidArguments { issues, omitted });
    }
    parse(arguments)
}

fn json_pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut pointer = String::new();
    for segment in path.iter() {
        match segment {
            Segment::Seq { index } => {
                pointer.push('/');
                pointer.push_str(&index.to_string());
            }
            Segment::Map { key } | Segment::Enum { variant: key } => {
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
            }
            Segment::Unknown => {}
        }
    }
    pointer
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIMITS: DecodeLimits = DecodeLimits {
        max_bytes: 1024,
        max_depth: 4,
    };

    fn nested(depth: usize) -> String {
        format!("{}{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// A value over a limit is left as it came (its floats floats); within
    /// both, its integral floats are integers, at any depth.
    #[test]
    fn walk_changes_a_value_only_within_the_limits() {
        let came = json!({"a": 1.0, "b": [2.0, {"c": 3.0}], "d": 2.5});
        for limits in [
            DecodeLimits {
                max_bytes: 20,
                max_depth: 4,
            },
            DecodeLimits {
                max_bytes: 1024,
                max_depth: 2,
            },
        ] {
            let mut value = came.clone();
            assert!(walk(&mut value, limits).is_err());
            assert_eq!(value.to_string(), came.to_string());
        }
        let mut value = came.clone();
        walk(&mut value, LIMITS).unwrap();
        assert_eq!(value.to_string(), r#"{"a":1,"b":[2,{"c":3}],"d":2.5}"#);
        let mut flat = json!({"a": 1.0, "b": "x"});
        walk(&mut flat, LIMITS).unwrap();
        assert_eq!(flat.to_string(), r#"{"a":1,"b":"x"}"#);
        let mut number = json!(4.0);
        walk(&mut number, LIMITS).unwrap();
        assert_eq!(number.to_string(), "4");
    }

    #[test]
    fn text_depth_is_checked_after_the_parser_s_own_limit() {
        let limits = DecodeLimits {
            max_bytes: 1 << 20,
            max_depth: 4,
        };
        assert!(decode_text(&nested(4), limits).is_ok());
        assert!(matches!(
            decode_text(&nested(5), limits),
            Err(ToolError::LimitExceeded { .. })
        ));
        assert!(matches!(
            decode_text(&nested(100_000), limits),
            Err(ToolError::LimitExceeded { .. })
        ));
        assert!(decode_text(r#"{"a": "[[[[[[[[\"[[["}"#, limits).is_ok());
    }

    #[test]
    fn integral_floats_become_integers() {
        let map = decode(json!(r#"{"a": 1.0, "b": 1.5, "c": [-2.0]}"#), LIMITS, &[]).unwrap();
        assert_eq!(Value::Object(map), json!({"a": 1, "b": 1.5, "c": [-2]}));
        // From 2^53 on a float may not be the number the model wrote: it
        // stays a float, which an integer field refuses.
        let map = decode(
            json!({"below": 9_007_199_254_740_991.0, "edge": 9_007_199_254_740_992.0, "big": 1e19}),
            LIMITS,
            &[],
        )
        .unwrap();
        assert_eq!(map["below"], json!(9_007_199_254_740_991u64));
        assert!(map["edge"].is_f64() && map["big"].is_f64());
        let map = decode(json!({"huge": 1e30}), LIMITS, &[]).unwrap();
        assert!(map["huge"].is_f64());
    }

    #[test]
    fn value_depth_is_checked_without_recursion() {
        let ok = json!({"a": {"b": {"c": [1]}}});
        assert!(decode(ok, LIMITS, &[]).is_ok());
        let deep = json!({"a": {"b": {"c": [[1]]}}});
        assert!(matches!(
            decode(deep, LIMITS, &[]),
            Err(ToolError::LimitExceeded {
                kind: LimitKind::ArgumentDepth,
                limit: 4,
                ..
            })
        ));
    }

    #[test]
    fn value_size_is_checked() {
        let big = json!({"text": "x".repeat(2000)});
        assert!(matches!(
            decode(big, LIMITS, &[]),
            Err(ToolError::LimitExceeded {
                kind: LimitKind::ArgumentBytes,
                ..
            })
        ));
    }

    #[test]
    fn parse_reports_the_failing_path() {
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            n: i64,
        }
        #[derive(Debug, serde::Deserialize)]
        #[allow(dead_code)]
        struct Args {
            items: Vec<Inner>,
        }
        let error = parse::<Args>(json!({"items": [{"n": 1}, {"n": "x"}]})).unwrap_err();
        let ToolError::InvalidArguments { issues, .. } = error else {
            panic!("expected an argument error");
        };
        assert_eq!(issues[0].path, "/items/1/n");
        assert!(
            issues[0].message.contains("expected i64"),
            "{}",
            issues[0].message
        );
    }
}

//! Plain helpers over JSON values shared by several layers (decoding,
//! validation messages, output limits): they import nothing of behest, so
//! every layer can use them without pointing upwards.

use serde_json::Value;

/// Approximate JSON-encoded size of a value, without recursion.
pub(crate) fn encoded_len_estimate(value: &Value) -> usize {
    let mut size = 0usize;
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        size += scalar_len(value);
        match value {
            Value::Array(items) => {
                size += items.len() + 1;
                stack.extend(items);
            }
            Value::Object(map) => {
                size += 1;
                for (key, item) in map {
                    size += key.len() + 4;
                    stack.push(item);
                }
            }
            _ => {}
        }
    }
    size
}

/// The encoded size of a scalar, or 1 for the bracket of a container.
pub(crate) fn scalar_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(number) if number.is_f64() => 24,
        Value::Number(_) => 20,
        Value::String(text) => text.len() + 2,
        Value::Array(_) | Value::Object(_) => 1,
    }
}

/// A short rendering of a value for messages: at most about 80 characters.
pub(crate) fn preview(value: &Value) -> String {
    const MAX: usize = 80;
    let text = value.to_string();
    if text.len() <= MAX {
        return text;
    }
    let mut end = MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Names in backquotes, separated by commas.
pub(crate) fn quoted_list(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    quoted.join(", ")
}

/// Whether `text` may hold a negative zero (`-0`, `-0.0`, `-0e5`): the
/// checked route reads it as the integer `0` (so that an integer field
/// accepts it), which a float field then gets as `0.0`, not `-0.0`. The
/// runtime sends such calls of a tool with float arguments down the
/// checked route, so that both routes give a tool the same arguments. A
/// tool without floats needs no scan: serde_json reads `-0` as the float
/// `-0.0`, which an integer field refuses, so such a call leaves the text
/// route anyway. A match inside a string only costs the shortcut.
pub(crate) fn has_negative_zero(text: &str) -> bool {
    // A `char` pattern is searched with `memchr`; "-0" would not be.
    text.match_indices('-').any(|(at, _)| {
        let Some(rest) = text.as_bytes()[at + 1..].strip_prefix(b"0") else {
            return false;
        };
        let fraction = match rest.first() {
            Some(b'.') => &rest[1..],
            _ => rest,
        };
        let zeros = fraction.iter().take_while(|&&byte| byte == b'0').count();
        !fraction.get(zeros).is_some_and(u8::is_ascii_digit)
    })
}

#[cfg(test)]
mod tests {
    use super::has_negative_zero;

    #[test]
    fn negative_zeros_are_found() {
        for text in [
            "-0",
            "[-0]",
            "-0.0",
            "-0.000e5",
            "-0e-3",
            "-0E1",
            r#"{"a": -0}"#,
        ] {
            assert!(has_negative_zero(text), "{text}");
        }
        for text in ["0", "-0.5", "-0.05", "-1", "-10", "10-01", r#"{"a": 0.0}"#] {
            assert!(!has_negative_zero(text), "{text}");
        }
    }
}

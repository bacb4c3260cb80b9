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

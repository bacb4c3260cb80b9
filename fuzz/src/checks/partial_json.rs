//! Text through the partial-JSON reader a streamed typed answer is read
//! with: it never panics, reads whole JSON as serde_json does, and reads
//! every cut of it without panicking, numbers and literals only as whole.

use serde_json::Value;

pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let read = behest::run::parse_partial(text);
    let Ok(whole) = serde_json::from_str::<Value>(text) else {
        return;
    };
    // serde_json's own recursion limit is 128, as the reader's.
    if let Some(read) = &read {
        assert_eq!(read, &whole, "{text:?}");
    }
    // Cuts: at most 64, spread over the text.
    let step = (text.len() / 64).max(1);
    for cut in (0..text.len()).step_by(step) {
        if !text.is_char_boundary(cut) {
            continue;
        }
        if let Some(Value::Object(partial)) = behest::run::parse_partial(&text[..cut]) {
            if let Value::Object(whole) = &whole {
                for (key, value) in &partial {
                    if value.is_number() || value.is_boolean() {
                        assert_eq!(Some(value), whole.get(key), "{:?} cut at {cut}", text);
                    }
                }
            }
        }
    }
}

//! Structure-aware mutants of the recorded provider streams
//! (`tests/data/provider-fixtures/*/stream-*.json`) through every stream
//! assembler: the input picks a stream, then, for each mutation, an event,
//! a node at any depth of it and a value of another JSON type to put there.
//! Each push and each finish returns; none panics.

use serde_json::{json, Value};

/// Every recorded stream, as its JSON array of events.
const STREAMS: &[&str] = &[
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-parallel-tool-use-events-2.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-parallel-tool-use-events.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-redacted-thinking-events.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-thinking-server-tool-use-events.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-thinking-tool-use-events.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-tool-use-empty-input-events-2.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-tool-use-empty-input-events.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-tool-use-events-2.json"),
    include_str!("../../../tests/data/provider-fixtures/anthropic/stream-tool-use-events.json"),
    include_str!("../../../tests/data/provider-fixtures/gemini/stream-partial-args-chunks-2.json"),
    include_str!("../../../tests/data/provider-fixtures/gemini/stream-partial-args-chunks.json"),
    include_str!("../../../tests/data/provider-fixtures/gemini/stream-thought-text-tool-call-chunks.json"),
    include_str!("../../../tests/data/provider-fixtures/gemini/stream-tool-call-chunks-2.json"),
    include_str!("../../../tests/data/provider-fixtures/gemini/stream-tool-call-chunks.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-chat/stream-parallel-tool-call-chunks-2.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-chat/stream-parallel-tool-call-chunks.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-chat/stream-reasoning-content-tool-call-chunks.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-chat/stream-tool-call-chunks-2.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-chat/stream-tool-call-chunks.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-responses/stream-function-call-events-2.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-responses/stream-function-call-events.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-responses/stream-parallel-function-call-events-2.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-responses/stream-parallel-function-call-events.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-responses/stream-reasoning-function-call-events.json"),
    include_str!("../../../tests/data/provider-fixtures/openai-responses/stream-reasoning-text-function-call-events.json"),
];

/// The values a node may be replaced by: one of each JSON type, and the
/// shapes the assemblers look for.
fn replacement(kind: u8) -> Value {
    match kind % 12 {
        0 => json!(null),
        1 => json!(true),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(u64::MAX),
        5 => json!(1.5e300),
        6 => json!(""),
        7 => json!("text"),
        8 => json!([]),
        9 => json!([{}]),
        10 => json!({}),
        _ => json!({"type": "text", "index": 0}),
    }
}

/// The `n`-th node of `value` in document order (wrapping), to replace.
fn nth_node(value: &mut Value, n: usize) -> &mut Value {
    fn count(value: &Value) -> usize {
        1 + match value {
            Value::Object(object) => object.values().map(count).sum(),
            Value::Array(items) => items.iter().map(count).sum(),
            _ => 0,
        }
    }
    let mut left = n % count(value);
    let mut node = value;
    while left > 0 {
        left -= 1;
        let children: Vec<usize> = match &*node {
            Value::Object(object) => object.values().map(count).collect(),
            Value::Array(items) => items.iter().map(count).collect(),
            _ => return node,
        };
        let mut child = 0;
        while left >= children[child] {
            left -= children[child];
            child += 1;
        }
        node = match node {
            Value::Object(object) => object.values_mut().nth(child).expect("counted"),
            Value::Array(items) => &mut items[child],
            _ => unreachable!("a node with children"),
        };
    }
    node
}

pub fn check(data: &[u8]) {
    let Some((&pick, mutations)) = data.split_first() else {
        return;
    };
    let text = STREAMS[usize::from(pick) % STREAMS.len()];
    let Ok(Value::Array(mut events)) = serde_json::from_str::<Value>(text) else {
        return;
    };
    if events.is_empty() {
        return;
    }
    // Four bytes a mutation: the event, the node (two bytes), the value.
    for mutation in mutations.chunks_exact(4) {
        let at = usize::from(mutation[0]) % events.len();
        let node = usize::from(u16::from_le_bytes([mutation[1], mutation[2]]));
        *nth_node(&mut events[at], node) = replacement(mutation[3]);
    }
    super::through_every_assembler(&events);
}

//! The token counts each provider reports, in one [`Usage`]. A stream
//! reports them in pieces that only grow (a start and a final count), so
//! pieces are merged by keeping the largest count of each kind.

use serde_json::Value;

use crate::conversation::Usage;

/// Usage of a Chat Completions response or final stream chunk.
pub fn chat(value: &Value) -> Option<Usage> {
    let usage = value.get("usage").filter(|usage| usage.is_object())?;
    Some(Usage {
        input_tokens: count(usage, "/prompt_tokens"),
        output_tokens: count(usage, "/completion_tokens"),
        cached_tokens: count(usage, "/prompt_tokens_details/cached_tokens"),
        reasoning_tokens: count(usage, "/completion_tokens_details/reasoning_tokens"),
        cache_write_tokens: 0,
    })
}

/// Usage of a Responses response, or of the response a stream event
/// carries (`response.completed`).
pub fn responses(value: &Value) -> Option<Usage> {
    let usage = value
        .get("usage")
        .or_else(|| value.pointer("/response/usage"))
        .filter(|usage| usage.is_object())?;
    Some(Usage {
        input_tokens: count(usage, "/input_tokens"),
        output_tokens: count(usage, "/output_tokens"),
        cached_tokens: count(usage, "/input_tokens_details/cached_tokens"),
        reasoning_tokens: count(usage, "/output_tokens_details/reasoning_tokens"),
        cache_write_tokens: 0,
    })
}

/// Usage of a Messages response, or of a stream's `message_start` or
/// `message_delta` event.
pub fn anthropic(value: &Value) -> Option<Usage> {
    let usage = value
        .get("usage")
        .or_else(|| value.pointer("/message/usage"))
        .filter(|usage| usage.is_object())?;
    Some(Usage {
        input_tokens: count(usage, "/input_tokens"),
        output_tokens: count(usage, "/output_tokens"),
        cached_tokens: count(usage, "/cache_read_input_tokens"),
        reasoning_tokens: 0,
        cache_write_tokens: count(usage, "/cache_creation_input_tokens"),
    })
}

/// Usage of a Gemini response or stream chunk (`usageMetadata`).
pub fn gemini(value: &Value) -> Option<Usage> {
    let usage = value
        .get("usageMetadata")
        .filter(|usage| usage.is_object())?;
    let thoughts = count(usage, "/thoughtsTokenCount");
    Some(Usage {
        input_tokens: count(usage, "/promptTokenCount"),
        // Gemini counts thoughts apart from the answer's tokens.
        output_tokens: count(usage, "/candidatesTokenCount").saturating_add(thoughts),
        cached_tokens: count(usage, "/cachedContentTokenCount"),
        reasoning_tokens: thoughts,
        cache_write_tokens: 0,
    })
}

/// The larger count of each kind: what a stream's pieces add up to.
pub fn merge(total: Option<Usage>, piece: Option<Usage>) -> Option<Usage> {
    match (total, piece) {
        (Some(a), Some(b)) => Some(Usage {
            input_tokens: a.input_tokens.max(b.input_tokens),
            output_tokens: a.output_tokens.max(b.output_tokens),
            cached_tokens: a.cached_tokens.max(b.cached_tokens),
            reasoning_tokens: a.reasoning_tokens.max(b.reasoning_tokens),
            cache_write_tokens: a.cache_write_tokens.max(b.cache_write_tokens),
        }),
        (a, b) => a.or(b),
    }
}

fn count(usage: &Value, pointer: &str) -> u64 {
    usage.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_format_is_read() {
        let chat_usage = chat(
            &json!({"usage": {"prompt_tokens": 10, "completion_tokens": 5,
            "prompt_tokens_details": {"cached_tokens": 4}, "completion_tokens_details": {"reasoning_tokens": 2}}}),
        );
        assert_eq!(
            chat_usage,
            Some(Usage {
                input_tokens: 10,
                output_tokens: 5,
                cached_tokens: 4,
                reasoning_tokens: 2,
                cache_write_tokens: 0,
            })
        );
        let completed = json!({"type": "response.completed", "response": {"usage": {"input_tokens": 7, "output_tokens": 3}}});
        assert_eq!(responses(&completed).map(|u| u.input_tokens), Some(7));
        let start = anthropic(
            &json!({"type": "message_start", "message": {"usage": {"input_tokens": 20, "output_tokens": 1}}}),
        );
        let delta = anthropic(&json!({"type": "message_delta", "usage": {"output_tokens": 15}}));
        assert_eq!(
            merge(start, delta),
            Some(Usage {
                input_tokens: 20,
                output_tokens: 15,
                ..Usage::default()
            })
        );
        let gemini_usage = gemini(
            &json!({"usageMetadata": {"promptTokenCount": 8, "candidatesTokenCount": 4, "thoughtsTokenCount": 6}}),
        );
        assert_eq!(
            gemini_usage,
            Some(Usage {
                input_tokens: 8,
                output_tokens: 10,
                cached_tokens: 0,
                reasoning_tokens: 6,
                cache_write_tokens: 0,
            })
        );
        assert_eq!(chat(&json!({"usage": null})), None);
    }
}

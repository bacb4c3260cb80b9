//! Token counts.

use serde::{Deserialize, Serialize};

/// The tokens one turn used, as the provider counted them; 0 where it
/// did not say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens read: the conversation and the tool declarations.
    pub input_tokens: u64,
    /// Tokens written, reasoning included.
    pub output_tokens: u64,
    /// Input tokens served from the provider's cache (part of
    /// `input_tokens` for OpenAI and Gemini, apart from it for Anthropic).
    pub cached_tokens: u64,
    /// Output tokens spent on reasoning (part of `output_tokens`).
    pub reasoning_tokens: u64,
    /// Input tokens written to the provider's cache (Anthropic's
    /// `cache_creation_input_tokens`, billed apart from `input_tokens`).
    #[serde(default)]
    pub cache_write_tokens: u64,
}

impl std::ops::Add for Usage {
    type Output = Usage;

    fn add(self, other: Usage) -> Usage {
        // Saturating: counts come from the provider, and a run's sum must
        // not overflow whatever a provider (or a mutated answer) says.
        Usage {
            input_tokens: self.input_tokens.saturating_add(other.input_tokens),
            output_tokens: self.output_tokens.saturating_add(other.output_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(other.reasoning_tokens),
            cache_write_tokens: self
                .cache_write_tokens
                .saturating_add(other.cache_write_tokens),
        }
    }
}

impl std::iter::Sum for Usage {
    fn sum<I: Iterator<Item = Usage>>(iter: I) -> Usage {
        iter.fold(Usage::default(), std::ops::Add::add)
    }
}

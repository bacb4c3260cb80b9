//! What a model's tokens cost ([`Price`]), and prices of the providers'
//! models, for [`UsageLimits::cost`](crate::run::UsageLimits::cost) and
//! [`RunUsage::cost`](crate::run::RunUsage::cost): a table one can set, and
//! a built-in one of list prices.

use std::collections::BTreeMap;

use crate::usage::Usage;

/// How a provider counts cached input tokens in [`Usage`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CachedInput {
    /// Part of `input_tokens` (OpenAI, Gemini).
    #[default]
    InInput,
    /// Apart from `input_tokens` (Anthropic).
    Apart,
}

/// What a model's tokens cost, in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct Price {
    /// Input tokens not served from the cache.
    pub input: f64,
    /// Input tokens served from the cache.
    pub cached_input: f64,
    /// Input tokens written to the cache (Anthropic).
    pub cache_write: f64,
    /// Output tokens other than reasoning.
    pub output: f64,
    /// Output tokens spent on reasoning.
    pub reasoning: f64,
    /// How the provider counts cached input.
    pub cached: CachedInput,
}

impl Price {
    /// `input` and `output` dollars per million tokens; cached input,
    /// cache writes and reasoning at those rates until set.
    pub fn per_million(input: f64, output: f64) -> Self {
        Self {
            input,
            cached_input: input,
            cache_write: input,
            output,
            reasoning: output,
            cached: CachedInput::InInput,
        }
    }

    /// Cached input at `dollars` per million tokens.
    #[must_use]
    pub fn cached_input(mut self, dollars: f64) -> Self {
        self.cached_input = dollars;
        self
    }

    /// Cache writes at `dollars` per million tokens.
    #[must_use]
    pub fn cache_write(mut self, dollars: f64) -> Self {
        self.cache_write = dollars;
        self
    }

    /// Reasoning at `dollars` per million tokens.
    #[must_use]
    pub fn reasoning(mut self, dollars: f64) -> Self {
        self.reasoning = dollars;
        self
    }

    /// Cached input counted apart from `input_tokens`, as Anthropic does.
    #[must_use]
    pub fn cached_apart(mut self) -> Self {
        self.cached = CachedInput::Apart;
        self
    }

    /// What `usage` costs, in US dollars.
    pub fn cost(&self, usage: &Usage) -> f64 {
        let uncached = match self.cached {
            CachedInput::InInput => usage.input_tokens.saturating_sub(usage.cached_tokens),
            CachedInput::Apart => usage.input_tokens,
        };
        let answer = usage.output_tokens.saturating_sub(usage.reasoning_tokens);
        let dollars = uncached as f64 * self.input
            + usage.cached_tokens as f64 * self.cached_input
            + usage.cache_write_tokens as f64 * self.cache_write
            + answer as f64 * self.output
            + usage.reasoning_tokens as f64 * self.reasoning;
        dollars / 1_000_000.0
    }
}

/// The day the built-in table's list prices were taken from the
/// providers' pricing pages. Prices change: check yours, and set them
/// with [`Prices::with`].
pub const PRICES_AS_OF: &str = "2025-11-30";

/// Model prices by model id. A model is found by the longest id that
/// starts its name, so dated versions (`gpt-4o-2024-08-06`,
/// `claude-sonnet-4-5-20250929`) find their family's price.
///
/// ```
/// use behest::run::{Price, Prices};
///
/// let prices = Prices::builtin().with("my-fine-tune", Price::per_million(3.0, 12.0));
/// assert_eq!(prices.get("gpt-4o-mini-2024-07-18"), prices.get("gpt-4o-mini"));
/// assert_ne!(prices.get("gpt-4o-mini"), prices.get("gpt-4o"));
/// assert!(prices.get("my-fine-tune").is_some());
/// assert!(prices.get("unknown-model").is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Prices {
    by_model: BTreeMap<String, Price>,
}

impl Prices {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// The list prices of current OpenAI, Anthropic and Gemini models as
    /// of [`PRICES_AS_OF`], in US dollars per million tokens: standard
    /// tier, no batch discount, prompts within each model's base context
    /// tier (Gemini's Pro models and Claude Sonnet cost more past 200 000
    /// input tokens). Anthropic's cache writes are its 5-minute
    /// ones; its cached input is counted apart from input, as its API
    /// counts it.
    pub fn builtin() -> Self {
        let openai = |input, cached, output| Price::per_million(input, output).cached_input(cached);
        let anthropic = |input, write, read, output| {
            Price::per_million(input, output)
                .cache_write(write)
                .cached_input(read)
                .cached_apart()
        };
        let table = [
            ("gpt-5", openai(1.25, 0.125, 10.0)),
            ("gpt-5.1", openai(1.25, 0.125, 10.0)),
            ("gpt-5-mini", openai(0.25, 0.025, 2.0)),
            ("gpt-5-nano", openai(0.05, 0.005, 0.40)),
            ("gpt-4.1", openai(2.0, 0.50, 8.0)),
            ("gpt-4.1-mini", openai(0.40, 0.10, 1.60)),
            ("gpt-4.1-nano", openai(0.10, 0.025, 0.40)),
            ("gpt-4o", openai(2.50, 1.25, 10.0)),
            // The first snapshot kept its launch price.
            ("gpt-4o-2024-05-13", openai(5.0, 5.0, 15.0)),
            ("gpt-4o-mini", openai(0.15, 0.075, 0.60)),
            ("o3", openai(2.0, 0.50, 8.0)),
            ("o3-mini", openai(1.10, 0.55, 4.40)),
            ("o1", openai(15.0, 7.50, 60.0)),
            ("o4-mini", openai(1.10, 0.275, 4.40)),
            ("claude-opus-4-5", anthropic(5.0, 6.25, 0.50, 25.0)),
            ("claude-opus-4-1", anthropic(15.0, 18.75, 1.50, 75.0)),
            ("claude-opus-4", anthropic(15.0, 18.75, 1.50, 75.0)),
            ("claude-3-7-sonnet", anthropic(3.0, 3.75, 0.30, 15.0)),
            ("claude-sonnet-4-5", anthropic(3.0, 3.75, 0.30, 15.0)),
            ("claude-sonnet-4", anthropic(3.0, 3.75, 0.30, 15.0)),
            ("claude-haiku-4-5", anthropic(1.0, 1.25, 0.10, 5.0)),
            ("claude-3-5-haiku", anthropic(0.80, 1.0, 0.08, 4.0)),
            ("gemini-3-pro-preview", openai(2.0, 0.20, 12.0)),
            ("gemini-2.5-pro", openai(1.25, 0.125, 10.0)),
            ("gemini-2.5-flash", openai(0.30, 0.03, 2.50)),
            ("gemini-2.5-flash-lite", openai(0.10, 0.01, 0.40)),
        ];
        Self {
            by_model: table
                .into_iter()
                .map(|(model, price)| (model.to_owned(), price))
                .collect(),
        }
    }

    /// This table with `model` priced at `price` (over any price it had).
    #[must_use]
    pub fn with(mut self, model: impl Into<String>, price: Price) -> Self {
        self.by_model.insert(model.into(), price);
        self
    }

    /// The price of `model`: that of the longest id in the table that
    /// starts `model` at a word's end (`gpt-4o-2024-08-06` is `gpt-4o`'s,
    /// `gpt-4o-mini` is not).
    pub fn get(&self, model: &str) -> Option<Price> {
        self.by_model
            .iter()
            .filter(|(id, _)| {
                model.strip_prefix(id.as_str()).is_some_and(|rest| {
                    rest.is_empty() || (rest.starts_with('-') && is_version(&rest[1..]))
                })
            })
            .max_by_key(|(id, _)| id.len())
            .map(|(_, price)| *price)
    }
}

/// Whether `rest` (what follows a model id and a dash) names a version of
/// it (a date: `2024-08-06`, `20250514`; `latest`, `preview…`) rather than
/// another model (`mini`, or `6` after `claude-opus-4`).
fn is_version(rest: &str) -> bool {
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits >= 4 || rest == "latest" || rest.starts_with("preview")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::Usage;

    #[test]
    fn versions_find_their_family_and_other_models_do_not() {
        let prices = Prices::builtin();
        assert_eq!(prices.get("gpt-4o-2024-08-06"), prices.get("gpt-4o"));
        assert_eq!(
            prices.get("claude-sonnet-4-5-20250929"),
            prices.get("claude-sonnet-4-5")
        );
        assert_eq!(
            prices.get("gemini-2.5-flash-preview-09-2025"),
            prices.get("gemini-2.5-flash")
        );
        assert_ne!(prices.get("gpt-4o-mini"), prices.get("gpt-4o"));
        assert_ne!(prices.get("gpt-5-mini"), prices.get("gpt-5"));
        assert!(prices.get("gpt-4o-audio-preview").is_none());
        assert_eq!(
            prices.get("claude-opus-4-20250514"),
            prices.get("claude-opus-4")
        );
        assert_eq!(
            prices.get("claude-opus-4-5-20251101"),
            prices.get("claude-opus-4-5")
        );
        // A later model of the family is not priced as an older one.
        assert!(prices.get("claude-opus-4-6").is_none());
        assert_ne!(prices.get("gpt-4o-2024-05-13"), prices.get("gpt-4o"));
        assert!(prices.get("gpt").is_none());
    }

    /// Anthropic's cached input is apart from its input count: a turn of
    /// 1 000 fresh and 9 000 cached tokens costs the fresh at the input
    /// rate and the cached at the read rate.
    #[test]
    fn anthropic_counts_cached_input_apart() {
        let price = Prices::builtin().get("claude-sonnet-4-5").unwrap();
        let usage = Usage {
            input_tokens: 1_000,
            cached_tokens: 9_000,
            output_tokens: 0,
            ..Usage::default()
        };
        let expected = (1_000.0 * 3.0 + 9_000.0 * 0.30) / 1_000_000.0;
        assert!((price.cost(&usage) - expected).abs() < 1e-12);
    }
}

//! What a run may spend: model requests, tokens, tool calls, money and
//! time ([`UsageLimits`]), counted as the run goes ([`RunUsage`], in the
//! run's books) and checked before each model request, after each answer
//! and before each tool call once its arguments are valid.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::model::Price;
use crate::usage::Usage;

/// What a run may spend. Every limit is off until set; a run past one
/// fails with [`RunError::UsageLimit`](super::RunError::UsageLimit) naming
/// it, before the request or the calls that would pass it.
///
/// ```
/// use std::time::Duration;
/// use behest::run::{Price, UsageLimits};
///
/// let limits = UsageLimits::new()
///     .requests(20)
///     .total_tokens(200_000)
///     .tool_calls(50)
///     .tool_calls_of("send_email", 1)
///     .cost(0.50, Price::per_million(2.50, 10.00))
///     .deadline(Duration::from_secs(120));
/// # let _ = limits;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct UsageLimits {
    /// Model requests (turns).
    pub requests: Option<u64>,
    /// Input tokens over all turns, as the providers count them (OpenAI's
    /// and Gemini's include cached reads, Anthropic's leave them out).
    pub input_tokens: Option<u64>,
    /// Output tokens, reasoning included, over all turns.
    pub output_tokens: Option<u64>,
    /// Input and output tokens together.
    pub total_tokens: Option<u64>,
    /// Tool calls in all.
    pub tool_calls: Option<u64>,
    /// Tool calls of one tool, by name.
    pub tool_calls_per_tool: BTreeMap<String, u64>,
    /// Which tool calls the call limits count. Default
    /// [`CountedCalls::Run`].
    pub counted_calls: CountedCalls,
    /// US dollars, at [`price`](Self::price).
    pub cost: Option<f64>,
    /// What the model's tokens cost, for [`cost`](Self::cost) and
    /// [`RunUsage::cost`].
    pub price: Option<Price>,
    /// How long the run may take, from its start.
    pub deadline: Option<Duration>,
}

impl UsageLimits {
    /// No limits.
    pub fn new() -> Self {
        Self::default()
    }

    /// At most `requests` model requests.
    #[must_use]
    pub fn requests(mut self, requests: u64) -> Self {
        self.requests = Some(requests);
        self
    }

    /// At most `tokens` input tokens in all.
    #[must_use]
    pub fn input_tokens(mut self, tokens: u64) -> Self {
        self.input_tokens = Some(tokens);
        self
    }

    /// At most `tokens` output tokens in all.
    #[must_use]
    pub fn output_tokens(mut self, tokens: u64) -> Self {
        self.output_tokens = Some(tokens);
        self
    }

    /// At most `tokens` input and output tokens in all.
    #[must_use]
    pub fn total_tokens(mut self, tokens: u64) -> Self {
        self.total_tokens = Some(tokens);
        self
    }

    /// At most `calls` tool calls in all.
    #[must_use]
    pub fn tool_calls(mut self, calls: u64) -> Self {
        self.tool_calls = Some(calls);
        self
    }

    /// At most `calls` calls of the tool `name`.
    #[must_use]
    pub fn tool_calls_of(mut self, name: impl Into<String>, calls: u64) -> Self {
        self.tool_calls_per_tool.insert(name.into(), calls);
        self
    }

    /// Which calls [`tool_calls`](Self::tool_calls) and
    /// [`tool_calls_of`](Self::tool_calls_of) count: every call that ran
    /// (the default), or only those that succeeded, as pydantic-ai counts.
    /// A call refused before it ran (an unknown tool, arguments that do
    /// not match the schema, a tool not offered) never counts.
    #[must_use]
    pub fn counted_calls(mut self, counted: CountedCalls) -> Self {
        self.counted_calls = counted;
        self
    }

    /// At most `dollars` US dollars, the model's tokens priced at `price`
    /// (a limit or a price that is not a finite number stops the run at its
    /// first request: it cannot be kept).
    #[must_use]
    pub fn cost(mut self, dollars: f64, price: Price) -> Self {
        self.cost = Some(dollars);
        self.price = Some(price);
        self
    }

    /// At most `deadline` from the run's start.
    #[must_use]
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

/// Which tool calls the call limits of [`UsageLimits`] count. A call
/// refused before it ran (an unknown tool, arguments that do not match the
/// schema, a tool not offered at its step) counts under neither: the model
/// may correct it without using up the run's calls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum CountedCalls {
    /// Every call whose arguments were valid and that was started: run,
    /// put to a person for approval or to a handler, whatever its outcome.
    #[default]
    Run,
    /// Only calls that succeeded. A call is refused while the calls that
    /// succeeded and those still running would reach the limit, so parallel
    /// calls cannot pass it together.
    Succeeded,
}

/// Which limit a run reached.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UsageLimit {
    /// [`UsageLimits::requests`].
    Requests,
    /// [`UsageLimits::input_tokens`].
    InputTokens,
    /// [`UsageLimits::output_tokens`].
    OutputTokens,
    /// [`UsageLimits::total_tokens`].
    TotalTokens,
    /// [`UsageLimits::tool_calls`].
    ToolCalls,
    /// [`UsageLimits::tool_calls_of`] this tool.
    ToolCallsOf(String),
    /// [`UsageLimits::cost`].
    Cost,
    /// [`UsageLimits::deadline`].
    Deadline,
}

impl std::fmt::Display for UsageLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Requests => f.write_str("model requests"),
            Self::InputTokens => f.write_str("input tokens"),
            Self::OutputTokens => f.write_str("output tokens"),
            Self::TotalTokens => f.write_str("total tokens"),
            Self::ToolCalls => f.write_str("tool calls"),
            Self::ToolCallsOf(tool) => write!(f, "calls of `{tool}`"),
            Self::Cost => f.write_str("cost in US dollars"),
            Self::Deadline => f.write_str("seconds"),
        }
    }
}

/// What a run has spent so far.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
#[non_exhaustive]
pub struct RunUsage {
    /// Model requests made.
    pub requests: u64,
    /// Their tokens.
    pub tokens: Usage,
    /// Tool calls counted ([`UsageLimits::counted_calls`]).
    pub tool_calls: u64,
    /// Tool calls counted, by tool.
    pub tool_calls_per_tool: BTreeMap<String, u64>,
}

impl RunUsage {
    /// What the tokens cost at `price`, in US dollars.
    pub fn cost(&self, price: &Price) -> f64 {
        price.cost(&self.tokens)
    }

    /// Counts the calls counted in `other` too.
    pub(crate) fn add_calls(&mut self, other: &RunUsage) {
        self.tool_calls = self.tool_calls.saturating_add(other.tool_calls);
        for (tool, calls) in &other.tool_calls_per_tool {
            let count = self.tool_calls_per_tool.entry(tool.clone()).or_default();
            *count = count.saturating_add(*calls);
        }
    }

    /// Takes one call of `tool` back.
    pub(crate) fn uncalled(&mut self, tool: &str) {
        self.tool_calls = self.tool_calls.saturating_sub(1);
        if let Some(count) = self.tool_calls_per_tool.get_mut(tool) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                self.tool_calls_per_tool.remove(tool);
            }
        }
    }

    /// Counts the calls of `tools`.
    pub(crate) fn called<'a>(&mut self, tools: impl IntoIterator<Item = &'a str>) {
        for tool in tools {
            self.tool_calls = self.tool_calls.saturating_add(1);
            let count = self.tool_calls_per_tool.entry(tool.to_owned()).or_default();
            *count = count.saturating_add(1);
        }
    }
}

/// A limit reached: which, what it allows and what the run would use.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reached {
    pub(crate) limit: UsageLimit,
    pub(crate) allowed: f64,
    pub(crate) used: f64,
}

impl UsageLimits {
    /// The first limit `usage` is past, or would be past with one more
    /// request. Token and cost limits stop the next request once they are
    /// reached, since no request costs nothing.
    pub(crate) fn before_request(&self, usage: &RunUsage) -> Option<Reached> {
        if let Some(requests) = self.requests {
            if usage.requests >= requests {
                return Some(reached(UsageLimit::Requests, requests, usage.requests + 1));
            }
        }
        self.spent(usage, |allowed, used| used >= allowed)
    }

    /// The first limit `usage` is past after an answer.
    pub(crate) fn after_answer(&self, usage: &RunUsage) -> Option<Reached> {
        self.spent(usage, |allowed, used| used > allowed)
    }

    /// The first limit the calls of `tools` would pass, on top of `usage`.
    pub(crate) fn before_calls<'a>(
        &self,
        usage: &RunUsage,
        tools: impl IntoIterator<Item = &'a str> + Clone,
    ) -> Option<Reached> {
        let mut after = usage.clone();
        after.called(tools);
        if let Some(calls) = self.tool_calls {
            if after.tool_calls > calls {
                return Some(reached(UsageLimit::ToolCalls, calls, after.tool_calls));
            }
        }
        self.tool_calls_per_tool.iter().find_map(|(tool, calls)| {
            let made = after.tool_calls_per_tool.get(tool).copied().unwrap_or(0);
            (made > *calls).then(|| reached(UsageLimit::ToolCallsOf(tool.clone()), *calls, made))
        })
    }

    /// The first token or cost limit `past` says `usage` is past.
    fn spent(&self, usage: &RunUsage, past: impl Fn(f64, f64) -> bool) -> Option<Reached> {
        let tokens = &usage.tokens;
        let counts = [
            (
                UsageLimit::InputTokens,
                self.input_tokens,
                tokens.input_tokens,
            ),
            (
                UsageLimit::OutputTokens,
                self.output_tokens,
                tokens.output_tokens,
            ),
            (
                UsageLimit::TotalTokens,
                self.total_tokens,
                tokens.input_tokens.saturating_add(tokens.output_tokens),
            ),
        ];
        for (limit, allowed, used) in counts {
            if let Some(allowed) = allowed {
                if past(allowed as f64, used as f64) {
                    return Some(Reached {
                        limit,
                        allowed: allowed as f64,
                        used: used as f64,
                    });
                }
            }
        }
        if let (Some(dollars), Some(price)) = (self.cost, &self.price) {
            let used = usage.cost(price);
            // A limit or a price that is no number cannot be kept.
            if !dollars.is_finite() || !used.is_finite() {
                return Some(Reached {
                    limit: UsageLimit::Cost,
                    allowed: if dollars.is_finite() { dollars } else { 0.0 },
                    used: f64::MAX,
                });
            }
            if past(dollars, used) {
                return Some(Reached {
                    limit: UsageLimit::Cost,
                    allowed: dollars,
                    used,
                });
            }
        }
        None
    }
}

impl Reached {
    /// The run's error for this limit.
    pub(crate) fn error(self) -> super::RunError {
        super::RunError::UsageLimit {
            limit: self.limit,
            allowed: super::Amount(self.allowed),
            used: super::Amount(self.used),
        }
    }

    /// The deadline `limits` set, passed after `elapsed`.
    pub(crate) fn deadline(limits: &UsageLimits, elapsed: Duration) -> Self {
        Self {
            limit: UsageLimit::Deadline,
            allowed: limits.deadline.unwrap_or_default().as_secs_f64(),
            used: elapsed.as_secs_f64(),
        }
    }
}

fn reached(limit: UsageLimit, allowed: u64, used: u64) -> Reached {
    Reached {
        limit,
        allowed: allowed as f64,
        used: used as f64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(input: u64, cached: u64, output: u64, reasoning: u64) -> Usage {
        Usage {
            input_tokens: input,
            output_tokens: output,
            cached_tokens: cached,
            reasoning_tokens: reasoning,
            cache_write_tokens: 0,
        }
    }

    /// Cached input and reasoning are priced apart, and cached input is
    /// taken out of the input count only where the provider counts it in.
    #[test]
    fn cached_and_reasoning_tokens_are_priced_apart() {
        let price = Price::per_million(2.0, 8.0)
            .cached_input(0.5)
            .reasoning(8.0);
        let spent = usage(1_000_000, 400_000, 100_000, 40_000);
        // 600k fresh at 2, 400k cached at 0.5, 60k answer at 8, 40k reasoning at 8.
        let expected = 1.2 + 0.2 + 0.48 + 0.32;
        assert!((price.cost(&spent) - expected).abs() < 1e-9);
        let apart = price.cached_apart();
        // All 1M input at 2 besides the 400k cached.
        let expected = 2.0 + 0.2 + 0.48 + 0.32;
        assert!((apart.cost(&spent) - expected).abs() < 1e-9);
    }

    #[test]
    fn limits_name_the_first_one_reached() {
        let limits = UsageLimits::new()
            .requests(2)
            .total_tokens(1_000)
            .tool_calls(3)
            .tool_calls_of("pay", 1);
        let mut run = RunUsage::default();
        assert_eq!(limits.before_request(&run), None);
        let answered = |run: &mut RunUsage| {
            run.requests += 1;
            run.tokens = run.tokens + usage(600, 0, 300, 0);
        };
        answered(&mut run);
        assert_eq!(limits.after_answer(&run), None);
        assert_eq!(limits.before_request(&run), None);
        answered(&mut run);
        let over = limits.after_answer(&run).unwrap();
        assert_eq!(over.limit, UsageLimit::TotalTokens);
        assert_eq!((over.allowed, over.used), (1_000.0, 1_800.0));
        assert_eq!(
            limits.before_request(&run).unwrap().limit,
            UsageLimit::Requests
        );
        assert_eq!(limits.before_calls(&run, ["look", "pay"]), None);
        run.called(["look", "pay"]);
        let twice = limits.before_calls(&run, ["pay"]).unwrap();
        assert_eq!(twice.limit, UsageLimit::ToolCallsOf("pay".into()));
        let many = limits.before_calls(&run, ["look", "look"]).unwrap();
        assert_eq!(many.limit, UsageLimit::ToolCalls);
    }
}

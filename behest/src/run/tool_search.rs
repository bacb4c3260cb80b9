//! Tool search: a registry of hundreds of tools offered a few at a time.
//! The tools marked deferred are not sent to the model; a `search_tools`
//! tool finds them by what they do, and the ones it found are offered from
//! the next step on. The request stays the same size however many tools
//! the registry holds. It works with every model: it needs nothing of the
//! provider.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Value};

use super::prepare::StepState;
use super::Message;
use crate::registry::ToolRegistry;
use crate::tool::{Tool, ToolOutput, ToolResult, ToolSpec};

/// The name of the search tool.
pub const SEARCH_TOOLS: &str = "search_tools";

/// A registry's deferred tools, and the search that finds them.
///
/// ```
/// use behest::run::{ScriptedTurn, ToolSearch};
/// use behest::{tool, Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
///
/// /// Get the current weather for a city.
/// #[tool]
/// fn get_weather(city: String) -> String { format!("Sunny in {city}.") }
///
/// /// Convert an amount between currencies.
/// #[tool]
/// fn convert_currency(amount: f64, to: String) -> String { format!("{amount} {to}") }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let registry = ToolRegistry::new().with(GetWeather)?.with(ConvertCurrency)?;
/// // Every tool deferred: the model first sees only `search_tools`.
/// let search = ToolSearch::new(&registry, |_| true);
/// let registry = registry.with(search.tool())?;
/// let model = ScriptedModel::new([
///     ScriptedTurn::tool_calls([ToolCall::new("s1", "search_tools", r#"{"query": "weather"}"#)])
///         .expect_tools(["search_tools"]),
///     ScriptedTurn::tool_calls([ToolCall::new("w1", "get_weather", r#"{"city": "Oslo"}"#)])
///         .expect_tools(["get_weather", "search_tools"]),
///     ScriptedTurn::text("Sunny in Oslo."),
/// ]);
/// let agent = Agent::new(model, ToolRuntime::new(registry)).prepare_tools(search.prepare());
/// let outcome = agent.invoke([Message::user("Weather in Oslo?")]).await;
/// assert_eq!(outcome.text(), Some("Sunny in Oslo."));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ToolSearch {
    deferred: Arc<Vec<ToolSpec>>,
    names: Arc<HashSet<String>>,
    limit: usize,
}

impl std::fmt::Debug for ToolSearch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSearch")
            .field("deferred", &self.deferred.len())
            .field("limit", &self.limit)
            .finish()
    }
}

impl ToolSearch {
    /// The tools of `registry` that `defer` picks are deferred: found by
    /// the search, not sent before.
    pub fn new(registry: &ToolRegistry, defer: impl Fn(&ToolSpec) -> bool) -> Self {
        let deferred: Vec<ToolSpec> = registry
            .specs()
            .filter(|spec| spec.name != SEARCH_TOOLS && defer(spec))
            .cloned()
            .collect();
        let names = deferred.iter().map(|spec| spec.name.clone()).collect();
        Self {
            deferred: Arc::new(deferred),
            names: Arc::new(names),
            limit: 5,
        }
    }

    /// How many tools a search finds at most (default 5).
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = limit.max(1);
        self
    }

    /// The names of the deferred tools, for a provider's own tool search
    /// (`Responses::tool_search`, `Messages::tool_search`).
    pub fn deferred_names(&self) -> Arc<HashSet<String>> {
        self.names.clone()
    }

    /// The `search_tools` tool, to add to the registry.
    pub fn tool(&self) -> SearchTools {
        SearchTools(self.clone())
    }

    /// The preparation of each step's tools
    /// ([`Agent::prepare_tools`](super::Agent::prepare_tools)): the tools
    /// not deferred, and the deferred ones a search found earlier in the
    /// conversation.
    pub fn prepare(
        &self,
    ) -> impl Fn(&StepState<'_>, Vec<ToolSpec>) -> Vec<ToolSpec> + Send + Sync + 'static {
        let names = self.names.clone();
        move |step, tools| {
            let found = found(step.transcript);
            tools
                .into_iter()
                .filter(|spec| !names.contains(&spec.name) || found.contains(&spec.name))
                .collect()
        }
    }

    /// The deferred tools that match `query` best, best first.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&ToolSpec> {
        // Words that say nothing of what a tool does match nothing.
        let terms: Vec<String> = words(query)
            .into_iter()
            .filter(|word| !STOP_WORDS.contains(&word.as_str()))
            .collect();
        let mut scored: Vec<(u32, &ToolSpec)> = self
            .deferred
            .iter()
            .map(|spec| (score(&terms, spec), spec))
            .filter(|(score, _)| *score > 0)
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        scored
            .into_iter()
            .take(limit.min(self.limit))
            .map(|(_, spec)| spec)
            .collect()
    }
}

/// English words too common to tell tools apart.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "any", "are", "at", "be", "by", "can", "do", "for", "from", "how", "i", "in",
    "is", "it", "me", "my", "of", "on", "or", "some", "that", "the", "this", "to", "tool", "tools",
    "what", "which", "with",
];

/// The lowercase words of a text, split at anything not a letter or a
/// digit and where a lowercase letter meets a capital (a tool's
/// `get_weather` and `getWeather` are both `get` and `weather`).
fn words(text: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut last_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            last_lower = false;
            if !word.is_empty() {
                words.push(std::mem::take(&mut word));
            }
            continue;
        }
        if c.is_uppercase() && last_lower && !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        last_lower = c.is_lowercase();
        word.extend(c.to_lowercase());
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}

/// How well a tool matches the query's words: a word of its name counts
/// three, of its description one; a word the query begins counts half
/// (`weath` finds `weather`).
fn score(terms: &[String], spec: &ToolSpec) -> u32 {
    let name = words(&spec.name);
    let description = words(&spec.description);
    let mut score = 0;
    for term in terms {
        let matches = |words: &[String]| {
            if words.iter().any(|word| word == term) {
                2
            } else if term.chars().count() >= 4
                && words.iter().any(|word| word.starts_with(term.as_str()))
            {
                1
            } else {
                0
            }
        };
        score += 3 * matches(&name) + matches(&description);
    }
    score
}

/// The tools the searches of `transcript` found.
fn found(transcript: &[Message]) -> HashSet<String> {
    let mut found = HashSet::new();
    for message in transcript {
        let Message::ToolResult(result) = message else {
            continue;
        };
        if result.tool_name != SEARCH_TOOLS || result.is_error {
            continue;
        }
        let value = result
            .structured
            .clone()
            .or_else(|| serde_json::from_str(&result.content).ok())
            .unwrap_or(Value::Null);
        for tool in value["tools"].as_array().into_iter().flatten() {
            if let Some(name) = tool["name"].as_str() {
                found.insert(name.to_owned());
            }
        }
    }
    found
}

/// The `search_tools` tool of a [`ToolSearch`].
#[derive(Debug, Clone)]
pub struct SearchTools(ToolSearch);

impl Tool for SearchTools {
    fn name(&self) -> &str {
        SEARCH_TOOLS
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            SEARCH_TOOLS,
            format!(
                "Find tools by what they do: {} more tools can be used than are listed. \
                 The tools found can be called from the next step on.",
                self.0.deferred.len()
            ),
            json!({
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "What the tool should do, in a few words.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many tools to find at most.",
                    },
                },
                "required": ["query"],
                "additionalProperties": false,
            }),
        )
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        let query = arguments["query"].as_str().unwrap_or_default();
        let limit = arguments["limit"]
            .as_u64()
            .and_then(|limit| usize::try_from(limit).ok())
            .unwrap_or(self.0.limit)
            .max(1);
        let tools: Vec<Value> = self
            .0
            .search(query, limit)
            .into_iter()
            .map(|spec| json!({ "name": spec.name, "description": spec.description }))
            .collect();
        let note = if tools.is_empty() {
            "No tool matches: search again with other words."
        } else {
            "These tools can be called from the next step on."
        };
        Ok(ToolOutput::json(json!({ "tools": tools, "note": note })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, description: &str) -> ToolSpec {
        ToolSpec::new(name, description, json!({"type": "object"}))
    }

    fn search_of(specs: &[ToolSpec]) -> ToolSearch {
        ToolSearch {
            names: Arc::new(specs.iter().map(|spec| spec.name.clone()).collect()),
            deferred: Arc::new(specs.to_vec()),
            limit: 5,
        }
    }

    #[test]
    fn names_count_more_than_descriptions_and_prefixes_less() {
        let search = search_of(&[
            spec("get_weather", "Current conditions for a city."),
            spec("plan_trip", "Plans a trip, looking at the weather."),
            spec("convert_currency", "Convert an amount."),
        ]);
        let names = |query: &str| -> Vec<&str> {
            search
                .search(query, 5)
                .into_iter()
                .map(|spec| spec.name.as_str())
                .collect()
        };
        assert_eq!(names("weather"), ["get_weather", "plan_trip"]);
        assert_eq!(names("WEATH"), ["get_weather", "plan_trip"]);
        assert_eq!(names("currency"), ["convert_currency"]);
        assert!(names("").is_empty());
        assert!(names("kettle").is_empty());
        assert!(names("a tool for the").is_empty());
        assert_eq!(
            super::words("getWeather HTTPServer 東京"),
            ["get", "weather", "httpserver", "東京"]
        );
        assert_eq!(search.search("weather", 1).len(), 1);
    }
}

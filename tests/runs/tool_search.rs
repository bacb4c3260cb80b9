//! Tool search: a registry of a thousand tools, all deferred, offered a few
//! at a time; the request does not grow with the registry.

use std::sync::{Arc, Mutex};

use behest::run::{Model, ModelError, ModelRequest, ToolSearch};
use behest::{
    Agent, AssistantMessage, Message, Tool, ToolCall, ToolOutput, ToolRegistry, ToolResult,
    ToolRuntime, ToolSpec,
};
use serde_json::{json, Value};

/// One of many tools, each about its own archive.
struct Archive(usize);

const DOMAINS: [&str; 5] = ["invoice", "shipment", "customer", "inventory", "payroll"];

impl Tool for Archive {
    fn name(&self) -> &str {
        // Names live as long as the tool: leaked once per tool of the test.
        Box::leak(format!("lookup_{}_{}", DOMAINS[self.0 % 5], self.0).into_boxed_str())
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            format!("lookup_{}_{}", DOMAINS[self.0 % 5], self.0),
            format!(
                "Look a record up in {} archive number {}.",
                DOMAINS[self.0 % 5],
                self.0
            ),
            json!({"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}),
        )
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(format!("record {}", arguments["id"])))
    }
}

/// Get the current weather for a city.
#[behest::tool]
fn get_weather(city: String) -> String {
    format!("Sunny in {city}.")
}

/// A model that searches, calls what it found, and answers; it keeps the
/// names and the JSON size of the tools each request offered.
#[derive(Clone, Default)]
struct Searcher(Arc<Mutex<Vec<Offered>>>);

/// The names of the tools a request offered, and their JSON's size.
type Offered = (Vec<String>, usize);

impl Model for Searcher {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let names = request.tools.iter().map(|spec| spec.name.clone()).collect();
        let size = serde_json::to_string(request.tools).unwrap().len();
        let turn = {
            let mut seen = self.0.lock().unwrap();
            seen.push((names, size));
            seen.len()
        };
        Ok(match turn {
            1 => AssistantMessage::tool_calls([ToolCall::new(
                "s1",
                "search_tools",
                json!({"query": "current weather in a city"}),
            )]),
            2 => AssistantMessage::tool_calls([ToolCall::new(
                "w1",
                "get_weather",
                json!({"city": "Paris"}),
            )]),
            _ => AssistantMessage::text("Sunny in Paris."),
        })
    }
}

async fn run_with(archives: usize) -> Vec<Offered> {
    let mut registry = ToolRegistry::new().with(GetWeather).unwrap();
    for n in 0..archives {
        registry = registry.with(Archive(n)).unwrap();
    }
    let search = ToolSearch::new(&registry, |_| true);
    let registry = registry.with(search.tool()).unwrap();
    let model = Searcher::default();
    let agent =
        Agent::new(model.clone(), ToolRuntime::new(registry)).prepare_tools(search.prepare());
    let outcome = agent.invoke([Message::user("Weather in Paris?")]).await;
    assert_eq!(outcome.text(), Some("Sunny in Paris."), "{outcome:?}");
    let seen = model.0.lock().unwrap().clone();
    seen
}

#[tokio::test]
async fn a_thousand_deferred_tools_are_found_by_search_and_never_sent_whole() {
    let thousand = run_with(1000).await;
    let ten = run_with(10).await;
    assert_eq!(thousand.len(), 3);
    assert_eq!(thousand[0].0, ["search_tools"]);
    let mut found = thousand[1].0.clone();
    found.sort();
    assert_eq!(found, ["get_weather", "search_tools"]);
    // The same requests, whatever the registry holds, but for the count
    // the search tool's description gives.
    for (big, small) in thousand.iter().zip(&ten) {
        assert_eq!(big.0, small.0);
        assert!(
            big.1.abs_diff(small.1) <= 2,
            "{} against {}",
            big.1,
            small.1
        );
    }
    assert!(thousand[1].1 < 2_000, "{} bytes of tools", thousand[1].1);
}

#[tokio::test]
async fn a_deferred_tool_not_found_yet_is_not_run() {
    let registry = ToolRegistry::new().with(GetWeather).unwrap();
    let search = ToolSearch::new(&registry, |spec| spec.name == "get_weather");
    let registry = registry.with(search.tool()).unwrap();
    // The model calls the deferred tool without searching: refused, and
    // told so; then it searches and calls it.
    let model = behest::ScriptedModel::new([
        behest::run::ScriptedTurn::tool_calls([ToolCall::new(
            "w0",
            "get_weather",
            r#"{"city":"Rome"}"#,
        )])
        .expect_tools(["search_tools"]),
        behest::run::ScriptedTurn::tool_calls([ToolCall::new(
            "s1",
            "search_tools",
            r#"{"query":"weather"}"#,
        )])
        .expect_error(
            "w0",
            "not offered at this step (tools that `search_tools` finds are offered from the step after the search)",
        ),
        behest::run::ScriptedTurn::tool_calls([ToolCall::new(
            "w1",
            "get_weather",
            r#"{"city":"Rome"}"#,
        )])
        .expect_ok("s1", "get_weather"),
        behest::run::ScriptedTurn::text("Sunny in Rome.").expect_ok("w1", "Sunny in Rome"),
    ]);
    let agent = Agent::new(model, ToolRuntime::new(registry)).prepare_tools(search.prepare());
    let outcome = agent.invoke([Message::user("Weather in Rome?")]).await;
    assert_eq!(outcome.text(), Some("Sunny in Rome."), "{outcome:?}");
}

/// A long page of notes, as a tool that fills the context returns.
#[behest::tool]
fn read_notes(page: u32) -> String {
    format!("page {page}: {}", "notes ".repeat(100))
}

/// Old turns compacted away: a tool found before is still offered, since
/// the turn that searched stays.
#[tokio::test]
async fn a_tool_found_before_compaction_is_offered_after_it() {
    use behest::run::{Compaction, ContextPolicy, ScriptedTurn};

    for compaction in [
        Compaction::DropOldTurns { keep: 2 },
        Compaction::DropToolOutputs { keep: 1 },
    ] {
        let registry = ToolRegistry::new()
            .with(ReadNotes)
            .unwrap()
            .with(GetWeather)
            .unwrap();
        let search = ToolSearch::new(&registry, |spec| spec.name == "get_weather");
        let registry = registry.with(search.tool()).unwrap();
        let read = |id: &str, page: u32| {
            ScriptedTurn::tool_calls([ToolCall::new(id, "read_notes", json!({ "page": page }))])
                .expect_tools(["read_notes", "get_weather", "search_tools"])
        };
        let model = behest::ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new(
                "s1",
                "search_tools",
                r#"{"query":"weather"}"#,
            )])
            .expect_tools(["read_notes", "search_tools"]),
            read("n1", 1),
            read("n2", 2),
            read("n3", 3),
            ScriptedTurn::tool_calls([ToolCall::new("w1", "get_weather", r#"{"city":"Rome"}"#)])
                .expect_tools(["read_notes", "get_weather", "search_tools"]),
            ScriptedTurn::text("Sunny in Rome.").expect_ok("w1", "Sunny in Rome"),
        ]);
        // Each page is about 150 tokens: past 100, the run compacts.
        let policy = ContextPolicy::new(200)
            .compact_at(0.5)
            .compaction(compaction.clone());
        let agent = Agent::new(model, ToolRuntime::new(registry))
            .prepare_tools(search.prepare())
            .context(policy);
        let run = agent.invoke([Message::user("Weather in Rome?")]);
        let compactions = Arc::new(Mutex::new(Vec::new()));
        let seen = compactions.clone();
        run.on(move |envelope, _| {
            if let behest::EventKind::Compacted { before, after } = envelope.kind {
                seen.lock().unwrap().push((before, after));
            }
        });
        let outcome = run.await;
        assert_eq!(
            outcome.text(),
            Some("Sunny in Rome."),
            "{compaction:?}: {outcome:?}"
        );
        // Each compaction made the conversation smaller: none ran for
        // nothing when only the kept turns could have gone.
        let compactions = compactions.lock().unwrap().clone();
        assert!(!compactions.is_empty(), "{compaction:?}");
        assert!(
            compactions.iter().all(|(before, after)| after < before),
            "{compaction:?}: {compactions:?}"
        );
        crate::context::every_provider_takes(outcome.transcript());
        let pages = outcome
            .transcript()
            .iter()
            .filter(|message| {
                matches!(message, Message::ToolResult(result)
                    if result.tool_name == "read_notes" && result.content.contains("notes notes"))
            })
            .count();
        assert!(pages < 3, "{compaction:?}: compacted, {pages} pages left");
    }
}

//! Specs kept in JSON files: `#[external_tool(schema = "..")]` registers
//! the file's schema exactly, and the struct reads what it accepts.

use behest::{external_tool, ExternalToolArgs, ToolCall, ToolError, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

/// The name and description come from the file.
#[external_tool(schema = "tests/specs/web_search.json")]
struct WebSearch {
    query: String,
    max_results: Option<u32>,
    safe: Option<bool>,
}

/// Look a user up.
#[external_tool(schema = "tests/specs/lookup.json")]
#[serde(rename_all = "camelCase")]
struct Lookup {
    user_id: String,
    fields: Vec<String>,
}

fn file(path: &str) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn the_registered_schema_is_the_files_exactly() {
    let spec = WebSearch::external_tool().spec_ref().clone();
    let file = file("tests/specs/web_search.json");
    assert_eq!(spec.name, "web_search");
    assert_eq!(spec.description, file["description"]);
    assert_eq!(spec.parameters, file["parameters"]);
    let lookup = Lookup::external_tool().spec_ref().clone();
    assert_eq!(lookup.name, "lookup");
    assert_eq!(lookup.description, "Look a user up.");
    assert_eq!(lookup.parameters, self::file("tests/specs/lookup.json"));
}

#[tokio::test]
async fn calls_are_validated_against_the_file_and_read_by_the_struct() {
    let registry = ToolRegistry::new()
        .with(WebSearch::external_tool())
        .unwrap()
        .with(Lookup::external_tool())
        .unwrap();
    let runtime = ToolRuntime::new(registry);
    // The file's `minLength` and `maximum`, which the struct cannot say.
    let refused = runtime
        .call(ToolCall::new(
            "c1",
            "web_search",
            json!({"query": "", "max_results": 50}),
        ))
        .await;
    let Err(ToolError::InvalidArguments { issues, .. }) = refused.outcome else {
        panic!("{refused:?}");
    };
    let paths: Vec<&str> = issues.iter().map(|issue| issue.path.as_str()).collect();
    assert_eq!(paths, ["/max_results", "/query"], "{issues:?}");
    // What passes the file is what the struct reads.
    let call = ToolCall::new(
        "c2",
        "lookup",
        json!({"userId": "u42", "fields": ["email"]}),
    );
    let lookup = Lookup::from_call(&call).unwrap();
    assert_eq!(lookup.user_id, "u42");
    assert_eq!(lookup.fields, ["email"]);
    let bad = ToolCall::new("c3", "lookup", json!({"userId": "42", "fields": []}));
    assert!(Lookup::from_call(&bad).is_err());
    let search =
        WebSearch::from_call(&ToolCall::new("c4", "web_search", json!({"query": "rust"}))).unwrap();
    assert_eq!(
        (search.query.as_str(), search.max_results, search.safe),
        ("rust", None, None)
    );
}

/// A hand-written tool whose spec is a file, read when the crate builds.
struct Search;

impl behest::Tool for Search {
    fn name(&self) -> &str {
        "web_search"
    }

    fn spec(&self) -> behest::ToolSpec {
        behest::tool_spec!("tests/specs/web_search.json")
    }

    async fn execute(&self, arguments: Value) -> behest::ToolResult<behest::ToolOutput> {
        Ok(behest::ToolOutput::text(format!(
            "results for {}",
            arguments["query"]
        )))
    }
}

#[tokio::test]
async fn tool_spec_and_schema_literals_are_the_files_and_the_json_written() {
    let spec = behest::tool_spec!("tests/specs/web_search.json");
    let file = file("tests/specs/web_search.json");
    assert_eq!(spec.name, "web_search");
    assert_eq!(spec.description, file["description"]);
    assert_eq!(spec.parameters, file["parameters"]);

    let schema = behest::schema!({
        "type": "object",
        "properties": {
            "celsius": {"type": "number", "minimum": -273.15},
            "city": {"type": "string", "enum": ["Oslo", "Rome"]},
            "exact": {"type": "boolean", "default": false}
        },
        "required": ["city"],
        "additionalProperties": false
    });
    assert_eq!(schema["properties"]["celsius"]["minimum"], json!(-273.15));
    assert_eq!(schema["properties"]["exact"]["default"], json!(false));
    let tool = behest::ExternalTool::new("thermometer", "Read a thermometer.", schema);
    let registry = ToolRegistry::new()
        .with(tool)
        .unwrap()
        .with(Search)
        .unwrap();
    let runtime = ToolRuntime::new(registry);
    let refused = runtime
        .call(ToolCall::new("c1", "thermometer", json!({"city": "Paris"})))
        .await;
    assert!(refused.outcome.is_err());
    let found = runtime
        .call(ToolCall::new("c2", "web_search", json!({"query": "rust"})))
        .await;
    assert_eq!(found.outcome.unwrap().to_text(), "results for \"rust\"");
}

/// A spec file edited after a build fails the next build: a scratch crate
/// in a temporary folder, built, its file edited, built again. Slow (it
/// builds behest in its own target folder), so run on demand:
/// `cargo test --test schemas -- --ignored`.
#[test]
#[ignore = "builds a scratch crate with cargo (minutes); run with --ignored"]
fn an_edited_spec_file_fails_the_next_build() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let scratch = std::env::temp_dir().join(format!("behest-spec-scratch-{}", std::process::id()));
    std::fs::create_dir_all(scratch.join("src")).unwrap();
    std::fs::write(
        scratch.join("Cargo.toml"),
        format!(
            "[package]\nname = \"scratch\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[dependencies]\nbehest = {{ path = {:?} }}\n\n[workspace]\n",
            root.join("behest")
        ),
    )
    .unwrap();
    std::fs::write(
        scratch.join("src/main.rs"),
        "/// Search.\n#[behest::external_tool(schema = \"search.json\")]\nstruct Search {\n    query: String,\n}\n\nfn main() {\n    let _ = Search::external_tool();\n}\n",
    )
    .unwrap();
    let spec = |properties: &str| {
        std::fs::write(
            scratch.join("search.json"),
            format!("{{\"type\": \"object\", \"properties\": {{{properties}}}, \"required\": [\"query\"]}}"),
        )
        .unwrap();
    };
    let build = || {
        std::process::Command::new(env!("CARGO"))
            .arg("build")
            .current_dir(&scratch)
            // Its own target folder: this test's cargo holds the main one.
            .env("CARGO_TARGET_DIR", root.join("target/spec-scratch"))
            .output()
            .unwrap()
    };
    spec(r#""query": {"type": "string"}"#);
    let first = build();
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    spec(r#""query": {"type": "integer"}"#);
    let second = build();
    let stderr = String::from_utf8_lossy(&second.stderr);
    std::fs::remove_dir_all(&scratch).unwrap();
    assert!(!second.status.success(), "the edited file was not noticed");
    assert!(stderr.contains("`query` is of type `integer`"), "{stderr}");
}

/// A `#[tool]` function whose spec is a file: its parameters are checked
/// against it when the crate builds, and its calls against the file.
#[behest::tool(schema = "tests/specs/web_search.json")]
fn find(query: String, max_results: Option<u32>, safe: Option<bool>) -> String {
    let limit = max_results.unwrap_or(5);
    format!(
        "{limit} results for {query} (safe: {})",
        safe.unwrap_or(true)
    )
}

#[tokio::test]
async fn a_tool_function_takes_its_spec_from_a_file() {
    let spec = behest::Tool::spec(&Find);
    let file = file("tests/specs/web_search.json");
    assert_eq!(spec.name, "web_search");
    assert_eq!(spec.parameters, file["parameters"]);
    let runtime = ToolRuntime::new(ToolRegistry::new().with(Find).unwrap());
    // The file's `minLength` holds on argument text too: no shortcut past
    // the schema.
    let empty = runtime
        .call(ToolCall::new(
            "c1",
            "web_search",
            Value::String(r#"{"query": ""}"#.into()),
        ))
        .await;
    assert!(
        matches!(empty.outcome, Err(ToolError::InvalidArguments { .. })),
        "{empty:?}"
    );
    let found = runtime
        .call(ToolCall::new(
            "c2",
            "web_search",
            json!({"query": "rust", "max_results": 2}),
        ))
        .await;
    assert_eq!(
        found.outcome.unwrap().to_text(),
        "2 results for rust (safe: true)"
    );
}

/// An enum with serde's derives alone: the macro cannot see its variants,
/// so registration compares them with the file's `enum` (which also
/// allows "quarter").
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Period {
    Day,
    Week,
    Month,
    Year,
}

/// A count defined elsewhere: an integer, where the file allows `1.5`.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Count(u32);

#[external_tool(schema = "tests/specs/report.json")]
struct Report {
    period: Period,
    top: Count,
}

#[behest::tool(schema = "tests/specs/report.json")]
fn sales_report(period: Period, top: Count) -> String {
    let _ = (period, top.0);
    String::new()
}

#[test]
fn registration_refuses_what_the_file_and_the_types_disagree_on() {
    let refusals = [
        ToolRegistry::new().with(Report::external_tool()).err(),
        ToolRegistry::new().with(SalesReport).err(),
    ];
    for refused in refusals {
        let Some(behest::RegistryError::SpecMismatch { name, message }) = refused else {
            panic!("registered: {refused:?}");
        };
        assert_eq!(name, "report");
        assert!(
            message.contains(
                "`period` in `tests/specs/report.json` (`/parameters/properties/period`) allows \"quarter\", which `Period` cannot read"
            ),
            "{message}"
        );
        assert!(
            message.contains("`top` in `tests/specs/report.json` (`/parameters/properties/top`) is of type `number`, but `Count` reads `integer`"),
            "{message}"
        );
    }
}

/// The variants of an enum the file need not list all of (the model can
/// only choose fewer); `other` reads whatever else comes.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Span {
    Day,
    Week,
    Month,
    Quarter,
    Year,
    #[serde(other)]
    Unknown,
}

#[external_tool(schema = "tests/specs/report.json")]
struct WideReport {
    period: Span,
    #[serde(deserialize_with = "count_from_number")]
    top: u32,
}

/// Reads `1.5` as 1: the file's `number` is read by this function, so the
/// field's type is not compared with it.
fn count_from_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<u32, D::Error> {
    let number = <f64 as serde::Deserialize>::deserialize(deserializer)?;
    Ok(number as u32)
}

#[tokio::test]
async fn a_type_that_reads_more_than_the_file_allows_registers() {
    let runtime = ToolRuntime::new(
        ToolRegistry::new()
            .with(WideReport::external_tool())
            .unwrap(),
    );
    let call = ToolCall::new("c", "report", json!({"period": "quarter", "top": 2.5}));
    let outcome = runtime.call(call).await.outcome;
    assert!(
        matches!(outcome, Err(ToolError::NotImplemented)),
        "{outcome:?}"
    );
    let report = WideReport::from_arguments(json!({"period": "week", "top": 2.5})).unwrap();
    assert!(matches!(report.period, Span::Week));
    assert_eq!(report.top, 2);
    // The file still decides what the model may send.
    let refused = WideReport::from_arguments(json!({"period": "decade", "top": 1}));
    assert!(matches!(refused, Err(ToolError::InvalidArguments { .. })));
}

//! Spec files round trip through structs: for each object schema of the
//! JSON-Schema-Test-Suite that a struct can express, the build script writes
//! the schema as a file and an `#[external_tool(schema = "..")]` struct for
//! it (`spec_round_trip/generate.rs`). Each pair must compile, register the
//! file exactly, and read every instance of the suite the way the runtime
//! judges it: what validation lets through, the struct reads; what it
//! refuses, the struct refuses too.
//!
//! The suite is vendored under `tests/data/json-schema-test-suite` (see
//! `tests/data/README.md`).

use behest::{ExternalTool, ToolCall, ToolError, ToolRegistry, ToolResult, ToolRuntime};
use serde_json::{json, Value};

/// One generated pair: where its schema comes from, its tool, and the
/// struct's own parse of a call's arguments.
struct Case {
    file: &'static str,
    group: usize,
    tool: ExternalTool,
    parse: fn(Value) -> ToolResult<()>,
}

/// The generated pairs; fields are named after the suite's properties
/// (`foo`, `bar`).
#[allow(clippy::disallowed_names)]
mod pairs {
    use super::Case;

    include!(concat!(env!("OUT_DIR"), "/spec_round_trip.rs"));
}

use pairs::cases;

#[tokio::test]
async fn the_suites_object_schemas_read_through_structs_as_the_runtime_judges() {
    let suite = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/json-schema-test-suite/tests/draft2020-12");
    let cases = cases();
    assert!(
        cases.len() >= 20,
        "only {} suite schemas became struct + file pairs",
        cases.len()
    );
    let (mut instances, mut disagreements) = (0usize, Vec::new());
    for case in cases {
        let text = std::fs::read_to_string(suite.join(case.file)).unwrap();
        let groups: Value = serde_json::from_str(&text).unwrap();
        let group = &groups[case.group];
        let mut file = group["schema"].clone();
        file["type"] = "object".into();
        assert_eq!(case.tool.spec_ref().parameters, file, "{}", case.file);
        let name = case.tool.spec_ref().name.clone();
        let registry = ToolRegistry::new()
            .with(case.tool)
            .unwrap_or_else(|error| panic!("{} group {}: {error}", case.file, case.group));
        let runtime = ToolRuntime::new(registry);
        for test in group["tests"].as_array().unwrap() {
            instances += 1;
            let data = &test["data"];
            let at = format!(
                "{} / {} / {}",
                case.file, group["description"], test["description"]
            );
            let accepted = accepts(&runtime, &name, data.clone(), &at).await;
            let read = (case.parse)(data.clone());
            if accepted != read.is_ok() {
                disagreements.push(format!(
                    "{at}: the runtime accepts: {accepted}, the struct reads: {read:?}"
                ));
            }
            // The file adds `"type": "object"`: other instances are refused,
            // but for `null`, which stands for "no arguments", read as `{}`.
            let expected = match data {
                Value::Object(_) => test["valid"] == true,
                Value::Null => accepts(&runtime, &name, json!({}), &at).await,
                _ => false,
            };
            if accepted != expected {
                disagreements.push(format!("{at}: the suite expects valid={expected}"));
            }
        }
    }
    println!("{instances} instances read through generated structs");
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

/// Whether the runtime lets a call with these arguments through to the
/// tool: an external tool's call that passes validation is left for a
/// handler, `NotImplemented` here.
async fn accepts(runtime: &ToolRuntime, name: &str, arguments: Value, at: &str) -> bool {
    let call = ToolCall::new("call", name, arguments);
    match runtime.call(call).await.outcome {
        Err(ToolError::NotImplemented) => true,
        Err(ToolError::InvalidArguments { .. }) => false,
        other => panic!("{at}: {other:?}"),
    }
}

//! Every kind of bad input a model sends gets one clear error result, under
//! its own call id, and never a panic or a hang.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use behest::{LimitKind, ToolCall, ToolError, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};
use support::{Add, Deep, Hangs, Now, PanicKind, Panics};

fn runtime() -> ToolRuntime {
    let mut registry = ToolRegistry::new();
    registry
        .register_tool(Arc::new(Add))
        .unwrap()
        .register_tool(Arc::new(Deep))
        .unwrap()
        .register_tool(Arc::new(Now))
        .unwrap()
        .register_tool(Arc::new(Panics {
            name: "panics",
            kind: PanicKind::BeforeAwait,
            reveal: false,
        }))
        .unwrap()
        .register_tool(Arc::new(Hangs { timeout: None }))
        .unwrap();
    ToolRuntime::builder(registry)
        .default_timeout(Duration::from_millis(200))
        .build()
}

/// What a row expects.
enum Expect {
    /// Success with this structured or text output.
    Output(Value),
    /// An error of this kind whose message contains every fragment.
    Error(&'static str, &'static [&'static str]),
}
use Expect::*;

fn nested(depth: usize) -> String {
    // The arguments object is level 1; `depth - 1` arrays below it.
    format!(
        r#"{{"nested": {}1{}}}"#,
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

fn rows() -> Vec<(&'static str, &'static str, Value, Expect)> {
    let two_mib = format!(r#"{{"text": "{}"}}"#, "x".repeat(2 * 1024 * 1024));
    vec![
        (
            "unknown tool",
            "weather",
            json!({}),
            Error("not_found", &["no tool named `weather`; the tools are `add`, `deep`, `now`, `panics`, `hangs`"]),
        ),
        (
            "near-miss name",
            "ad",
            json!({}),
            Error("not_found", &["did you mean `add`?"]),
        ),
        (
            "near-miss case",
            "Now",
            json!({}),
            Error("not_found", &["did you mean `now`?"]),
        ),
        (
            "empty text, tool takes none",
            "now",
            json!(""),
            Output(json!("12:00")),
        ),
        (
            "null, tool takes none",
            "now",
            Value::Null,
            Output(json!("12:00")),
        ),
        (
            "\"null\", tool takes none",
            "now",
            json!("null"),
            Output(json!("12:00")),
        ),
        (
            "{}, tool takes none",
            "now",
            json!("{}"),
            Output(json!("12:00")),
        ),
        (
            "empty text, tool needs arguments",
            "add",
            json!(""),
            Error("invalid_arguments", &["no arguments were sent", "`a`, `b`"]),
        ),
        (
            "\"null\", tool needs arguments",
            "add",
            json!("null"),
            Error("invalid_arguments", &["no arguments were sent"]),
        ),
        (
            "{}, tool needs arguments",
            "add",
            json!({}),
            Error(
                "invalid_arguments",
                &[
                    "`/a`: this required field is missing",
                    "`/b`: this required field is missing",
                ],
            ),
        ),
        (
            "array",
            "add",
            json!("[]"),
            Error(
                "invalid_arguments",
                &["must be a JSON object", "received an array: []"],
            ),
        ),
        (
            "array value",
            "add",
            json!([1, 2]),
            Error("invalid_arguments", &["received an array: [1,2]"]),
        ),
        (
            "number",
            "add",
            json!("7"),
            Error("invalid_arguments", &["received the number 7"]),
        ),
        (
            "double-encoded",
            "add",
            json!(r#""{\"a\": 1, \"b\": 2}""#),
            Error("invalid_arguments", &["encoded twice"]),
        ),
        (
            "plain string",
            "add",
            json!(r#""hello""#),
            Error("invalid_arguments", &["received the string \"hello\""]),
        ),
        (
            "truncated JSON",
            "add",
            json!(r#"{"a": 1, "b"#),
            Error("invalid_arguments", &["not valid JSON", "EOF"]),
        ),
        (
            "trailing garbage",
            "add",
            json!(r#"{"a": 1, "b": 2} }"#),
            Error(
                "invalid_arguments",
                &["not valid JSON", "trailing characters"],
            ),
        ),
        (
            "single quotes",
            "add",
            json!("{'a': 1, 'b': 2}"),
            Error(
                "invalid_arguments",
                &["not valid JSON", "key must be a string"],
            ),
        ),
        (
            "wrong type",
            "add",
            json!(r#"{"a": "1", "b": 2}"#),
            Error(
                "invalid_arguments",
                &["`/a`: expected an integer, got the string \"1\""],
            ),
        ),
        (
            "missing required",
            "add",
            json!({"a": 1}),
            Error(
                "invalid_arguments",
                &["`/b`: this required field is missing"],
            ),
        ),
        (
            "null for required",
            "add",
            json!({"a": 1, "b": null}),
            Error(
                "invalid_arguments",
                &["`/b`: expected an integer, got null"],
            ),
        ),
        (
            "extra property",
            "add",
            json!({"a": 1, "b": 2, "c": 3}),
            Error(
                "invalid_arguments",
                &["`/c`: `c` is not an accepted field; valid fields: `a`, `b`"],
            ),
        ),
        (
            "near-miss property",
            "add",
            json!({"a": 1, "bb": 2}),
            Error(
                "invalid_arguments",
                &[
                    "`/b`: this required field is missing",
                    "`/bb`: `bb` is not an accepted field; did you mean `b`?",
                ],
            ),
        ),
        (
            "1.0 for an integer is taken as 1",
            "add",
            json!(r#"{"a": 1.0, "b": 2}"#),
            Output(json!({"sum": 3})),
        ),
        (
            "1.5 for an integer",
            "add",
            json!({"a": 1.5, "b": 2}),
            Error(
                "invalid_arguments",
                &["`/a`: expected an integer, got the number 1.5"],
            ),
        ),
        (
            "beyond i64",
            "add",
            json!(r#"{"a": 9223372036854775808, "b": 0}"#),
            Error("invalid_arguments", &["`/a`", "expected i64"]),
        ),
        (
            "beyond u64",
            "add",
            json!(r#"{"a": 18446744073709551616, "b": 0}"#),
            Error("invalid_arguments", &["`/a`", "expected i64"]),
        ),
        (
            "1e400",
            "add",
            json!(r#"{"a": 1e400, "b": 0}"#),
            Error(
                "invalid_arguments",
                &["not valid JSON", "number out of range"],
            ),
        ),
        (
            "overflowing sum",
            "add",
            json!({"a": i64::MAX, "b": 1}),
            Error("execution", &["overflows"]),
        ),
        ("depth 63", "deep", json!(nested(63)), Output(json!("ok"))),
        ("depth 64", "deep", json!(nested(64)), Output(json!("ok"))),
        (
            "depth 65",
            "deep",
            json!(nested(65)),
            Error("limit_exceeded", &["more than 64 levels"]),
        ),
        (
            "depth 200 000",
            "deep",
            json!(nested(200_000)),
            Error("limit_exceeded", &["more than 64 levels"]),
        ),
        (
            "depth 65 as a value",
            "deep",
            serde_json::from_str(&nested(65)).unwrap(),
            Error("limit_exceeded", &["more than 64 levels"]),
        ),
        (
            "2 MiB of arguments",
            "deep",
            Value::String(two_mib),
            Error(
                "limit_exceeded",
                &["2097164 bytes", "limit of 1048576 bytes"],
            ),
        ),
        (
            "lone surrogate escape",
            "deep",
            json!(r#"{"text": "\ud800"}"#),
            Error("invalid_arguments", &["not valid JSON", "surrogate"]),
        ),
        (
            "a panicking tool",
            "panics",
            json!({}),
            Error("panicked", &["internal error"]),
        ),
        (
            "a tool that never finishes",
            "hangs",
            json!({}),
            Error("timeout", &["did not finish within 200ms"]),
        ),
    ]
}

#[tokio::test]
async fn every_bad_input_gets_a_clear_error() {
    support::quiet_deliberate_panics();
    let runtime = runtime();
    let mut failures = Vec::new();
    for (index, (label, tool, arguments, expect)) in rows().into_iter().enumerate() {
        let call_id = format!("call_{index}");
        let result = runtime.call(ToolCall::new(&call_id, tool, arguments)).await;
        println!("{label}: {}", result.to_model_text());
        assert_eq!(
            result.call_id, call_id,
            "{label}: the result keeps the call id"
        );
        assert_eq!(result.tool_name, tool, "{label}");
        match (&expect, &result.outcome) {
            (Output(expected), Ok(output)) => {
                let got = output
                    .structured
                    .clone()
                    .unwrap_or_else(|| json!(output.text.clone().unwrap_or_default()));
                if &got != expected {
                    failures.push(format!("{label}: output {got}, expected {expected}"));
                }
            }
            (Error(kind, fragments), Err(error)) => {
                let text = error.to_string();
                if error.kind() != *kind {
                    failures.push(format!(
                        "{label}: error kind {} ({text}), expected {kind}",
                        error.kind()
                    ));
                }
                for fragment in *fragments {
                    if !text.contains(fragment) {
                        failures.push(format!("{label}: message {text:?} lacks {fragment:?}"));
                    }
                }
            }
            (Output(_), Err(error)) => failures.push(format!("{label}: unexpected error {error}")),
            (Error(kind, _), Ok(output)) => {
                failures.push(format!("{label}: expected a {kind} error, got {output:?}"))
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} rows failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[tokio::test]
async fn panic_payloads_stay_out_of_the_model_text() {
    support::quiet_deliberate_panics();
    let result = runtime()
        .call(ToolCall::new("c", "panics", json!({})))
        .await;
    let error = result.outcome.unwrap_err();
    assert!(!error.to_string().contains("passwd"), "{error}");
    let ToolError::Panicked { payload, reveal } = error else {
        panic!("expected Panicked");
    };
    assert!(
        payload.contains("secret /etc/passwd"),
        "the payload is kept for logs"
    );
    assert!(!reveal);
}

#[tokio::test]
async fn argument_errors_carry_every_path_up_to_the_cap() {
    let mut properties = serde_json::Map::new();
    for i in 0..15 {
        properties.insert(format!("f{i}"), json!({"type": "integer"}));
    }
    let schema = json!({"type": "object", "properties": properties});
    let mut registry = ToolRegistry::new();
    registry
        .register(
            "many",
            Arc::new(behest::ExternalTool::new("many", "Many fields.", schema)),
        )
        .unwrap();
    let runtime = ToolRuntime::new(registry);
    let bad: serde_json::Map<String, Value> =
        (0..15).map(|i| (format!("f{i}"), json!("x"))).collect();
    let result = runtime
        .call(ToolCall::new("c", "many", Value::Object(bad)))
        .await;
    let Err(ToolError::InvalidArguments { issues, omitted }) = result.outcome else {
        panic!("expected an argument error");
    };
    assert_eq!(issues.len(), 10);
    assert_eq!(omitted, 5);
    assert!(issues
        .iter()
        .all(|issue| issue.message == "expected an integer, got the string \"x\""));
    let text = ToolError::InvalidArguments { issues, omitted }.to_string();
    assert!(text.contains("- and 5 more"), "{text}");
}

#[tokio::test]
async fn limit_errors_are_typed() {
    let result = runtime()
        .call(ToolCall::new("c", "deep", json!(nested(65))))
        .await;
    assert!(matches!(
        result.outcome,
        Err(ToolError::LimitExceeded {
            kind: LimitKind::ArgumentDepth,
            limit: 64,
            ..
        })
    ));
}

//! For every representative tool: arguments the schema accepts deserialize
//! and run the tool; arguments it rejects never reach the function.

use crate::representative;

use std::sync::atomic::Ordering;

use behest::{ToolCall, ToolError, ToolRegistry, ToolRuntime};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{json, Value};

const KEYS: &[&str] = &[
    "destination",
    "city",
    "country",
    "stops",
    "nights",
    "mode",
    "budget",
    "to",
    "kind",
    "address",
    "number",
    "body",
    "headers",
    "urgent",
    "root",
    "name",
    "children",
    "query",
    "limit",
    "archived",
    "extra",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(0i64),
            Just(1),
            Just(-1),
            Just(255),
            Just(256),
            Just(4_294_967_296),
            Just(i64::MAX)
        ]
        .prop_map(|n| json!(n)),
        prop_oneof![Just(1.0f64), Just(2.5), Just(1e300), Just(-0.0)].prop_map(|n| json!(n)),
        prop_oneof![
            Just("car"),
            Just("train"),
            Just("email"),
            Just("team"),
            Just("phone"),
            Just(""),
            Just("Paris")
        ]
        .prop_map(|s| json!(s)),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(KEYS), inner, 0..5).prop_map(|map| {
                Value::Object(map.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
            }),
        ]
    })
}

/// A valid call of each tool, to mutate.
fn valid_examples() -> Vec<(&'static str, Value)> {
    vec![
        (
            "plan_trip",
            json!({"destination": {"city": "Paris", "country": "FR"}, "stops": [{"city": "Lyon", "nights": 2}], "mode": "train", "budget": 500}),
        ),
        (
            "send_message",
            json!({"to": {"kind": "email", "address": "a@b.c"}, "body": "hi", "headers": {"x": "y"}, "urgent": true}),
        ),
        (
            "count_nodes",
            json!({"root": {"name": "a", "children": [{"name": "b", "children": []}]}}),
        ),
        (
            "search_docs",
            json!({"query": "tools", "limit": 2, "archived": null}),
        ),
        ("now", json!({})),
    ]
}

/// A random change at a random place: remove, replace or add a field.
fn mutate(value: &mut Value, place: usize, action: u8, replacement: Value, key: &str) {
    // The JSON Pointers of every object in the value.
    let mut objects = Vec::new();
    let mut stack = vec![(String::new(), &*value)];
    while let Some((path, current)) = stack.pop() {
        match current {
            Value::Object(map) => {
                for (k, v) in map {
                    stack.push((
                        format!("{path}/{}", k.replace('~', "~0").replace('/', "~1")),
                        v,
                    ));
                }
                objects.push(path);
            }
            Value::Array(items) => {
                stack.extend(
                    items
                        .iter()
                        .enumerate()
                        .map(|(i, v)| (format!("{path}/{i}"), v)),
                );
            }
            _ => {}
        }
    }
    let Some(path) = objects.get(place % objects.len().max(1)).cloned() else {
        return;
    };
    let Some(Value::Object(map)) = value.pointer_mut(&path) else {
        return;
    };
    let existing: Vec<String> = map.keys().cloned().collect();
    match (action % 3, existing.is_empty()) {
        (0, false) => {
            map.remove(&existing[place % existing.len()]);
        }
        (1, false) => {
            map.insert(existing[place % existing.len()].clone(), replacement);
        }
        _ => {
            map.insert(key.to_owned(), replacement);
        }
    }
}

/// The JSON Pointers of every value below the root.
fn field_paths(value: &Value) -> Vec<String> {
    let mut paths = Vec::new();
    let mut stack = vec![(String::new(), value)];
    while let Some((path, current)) = stack.pop() {
        let children: Vec<(String, &Value)> = match current {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (format!("{path}/{k}"), v))
                .collect(),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("{path}/{i}"), v))
                .collect(),
            _ => Vec::new(),
        };
        for (child_path, child) in children {
            paths.push(child_path.clone());
            stack.push((child_path, child));
        }
    }
    paths
}

#[test]
fn accepted_arguments_run_and_rejected_ones_never_do() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut registry = ToolRegistry::new();
    registry.register_all(representative::all()).unwrap();
    let runtime = ToolRuntime::new(registry);
    let mut runner = TestRunner::new(Config {
        cases: 300,
        failure_persistence: None,
        ..Config::default()
    });

    let mutated = (
        json_value(),
        0usize..64,
        any::<u8>(),
        prop::sample::select(KEYS),
        0usize..5,
    );
    let random = (json_value(), 0usize..5);
    let (accepted, rejected) = (std::cell::Cell::new(0usize), std::cell::Cell::new(0usize));
    let check = |tool: &str, arguments: Value| -> Result<(), TestCaseError> {
        let validator = runtime.registry().validator(tool).unwrap();
        // `null` for an optional field means "left out" (strict mode sends
        // it so): the runtime accepts what the schema accepts without it.
        let mut normalized = arguments.clone();
        behest::arguments::drop_optional_nulls(&mut normalized, validator.schema());
        let schema_accepts = normalized.is_object() && validator.is_valid(&normalized);
        let before = representative::CALLS.load(Ordering::SeqCst);
        let result = rt.block_on(runtime.call(ToolCall::new("c", tool, arguments.clone())));
        let ran = representative::CALLS.load(Ordering::SeqCst) - before;
        if schema_accepts {
            accepted.set(accepted.get() + 1);
            prop_assert_eq!(
                ran,
                1,
                "{} accepted {} but did not run: {:?}",
                tool,
                arguments,
                result.outcome
            );
            prop_assert!(
                !matches!(result.outcome, Err(ToolError::InvalidArguments { .. })),
                "{} accepted {} but it did not deserialize: {:?}",
                tool,
                arguments,
                result.outcome
            );
        } else {
            rejected.set(rejected.get() + 1);
            prop_assert_eq!(
                ran,
                0,
                "{} rejected {} but the function ran",
                tool,
                arguments
            );
            prop_assert!(result.is_error());
        }
        Ok(())
    };
    let examples = valid_examples();
    runner
        .run(&mutated, |(replacement, place, action, key, which)| {
            let (tool, example) = &examples[which];
            let mut arguments = example.clone();
            mutate(&mut arguments, place, action, replacement, key);
            check(tool, arguments)
        })
        .unwrap();
    runner
        .run(&random, |(arguments, which)| {
            check(examples[which].0, arguments)
        })
        .unwrap();
    // Every field of every example, replaced by every boundary value.
    let boundaries = [
        json!(null),
        json!(true),
        json!(-1),
        json!(0),
        json!(255),
        json!(256),
        json!(65_536),
        json!(4_294_967_295u64),
        json!(4_294_967_296u64),
        json!(u64::MAX),
        json!(i64::MIN),
        json!(1.0),
        json!(2.5),
        json!(1e300),
        json!(""),
        json!("car"),
        json!([]),
        json!({}),
    ];
    for (tool, example) in &examples {
        check(tool, example.clone()).unwrap();
        for path in field_paths(example) {
            for boundary in &boundaries {
                let mut arguments = example.clone();
                *arguments.pointer_mut(&path).unwrap() = boundary.clone();
                check(tool, arguments).unwrap();
            }
        }
    }
    let (accepted, rejected) = (accepted.get(), rejected.get());
    assert!(
        accepted > 50 && rejected > 50,
        "both sides are exercised: {accepted} accepted, {rejected} rejected"
    );
}

//! A Chat Completions stream reads each chunk of the usual shape straight
//! from its text (`StreamAssembler::push_json`) and any other through a
//! `serde_json::Value` (`push`). Over generated chunks, the usual and the
//! odd (fields of other types, escapes, duplicated keys, errors, usage,
//! fields kept for the server), both ways must add the same pieces and
//! assemble the same message.

use behest::providers::openai::chat::Stream;
use behest::providers::StreamAssembler;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::Value;

/// A member's raw JSON value: mostly one of the type the field has.
fn value(valid: &'static [&'static str]) -> impl Strategy<Value = String> {
    let odd = prop::sample::select(vec![
        "null", "0", "-1", "1.0", "true", "\"\"", "[]", "{}", "\"x\"", "[1]",
    ]);
    prop_oneof![
        24 => prop::sample::select(valid),
        1 => odd,
    ]
    .prop_map(str::to_owned)
}

/// A member's name as JSON: now and then with an escape, which names
/// the same member.
fn name(name: &'static str) -> impl Strategy<Value = String> {
    (0..12u8).prop_map(move |escaped| match escaped {
        0 => {
            let mut chars = name.chars();
            let first = chars.next().unwrap_or('x');
            format!("\"\\u{:04x}{}\"", u32::from(first), chars.as_str())
        }
        _ => format!("\"{name}\""),
    })
}

/// Some of `members` (each maybe twice, with another value), in any
/// order, as (name, value) pairs of JSON text.
fn members(
    members: Vec<(&'static str, BoxedStrategy<String>)>,
) -> impl Strategy<Value = Vec<(String, String)>> {
    let picked: Vec<_> = members
        .into_iter()
        .map(|(member, value)| {
            let again = value.clone();
            (0..16u8, name(member), value, again).prop_map(|(times, name, value, again)| {
                match times {
                    // Absent a quarter of the time, twice a sixteenth.
                    0..=3 => vec![],
                    4 => vec![(name.clone(), value), (name, again)],
                    _ => vec![(name, value)],
                }
            })
        })
        .collect();
    (picked, any::<prop::sample::Index>()).prop_map(|(members, turn)| {
        let mut members: Vec<(String, String)> = members.into_iter().flatten().collect();
        if !members.is_empty() {
            let at = turn.index(members.len());
            members.rotate_left(at);
        }
        members
    })
}

/// The members as a JSON object.
fn as_object(members: &[(String, String)]) -> String {
    let members: Vec<String> = members
        .iter()
        .map(|(name, value)| format!("{name}: {value}"))
        .collect();
    format!("{{{}}}", members.join(", "))
}

/// An object of some of `members`.
fn object(members: Vec<(&'static str, BoxedStrategy<String>)>) -> impl Strategy<Value = String> {
    self::members(members).prop_map(|members| as_object(&members))
}

/// An object of some of `members`, now and then their values as an
/// array instead (which a derived struct reads, and the `Value` reading
/// does not).
fn or_array(members: Vec<(&'static str, BoxedStrategy<String>)>) -> impl Strategy<Value = String> {
    (self::members(members), 0..10u8).prop_map(|(members, shape)| match shape {
        0 => {
            let values: Vec<&str> = members.iter().map(|(_, value)| value.as_str()).collect();
            format!("[{}]", values.join(", "))
        }
        _ => as_object(&members),
    })
}

fn fragment() -> BoxedStrategy<String> {
    let function = or_array(vec![
        (
            "name",
            value(&["\"get_weather\"", "\"\"", "\"f\\u0031\""]).boxed(),
        ),
        (
            "arguments",
            value(&["\"\"", "\"{\\\"city\\\": \"", "\"Paris\\\"}\""]).boxed(),
        ),
    ]);
    let fragment = object(vec![
        ("index", value(&["0", "1", "7"]).boxed()),
        ("id", value(&["\"call_1\"", "\"call_2\"", "\"\""]).boxed()),
        ("type", value(&["\"function\""]).boxed()),
        ("function", function.boxed()),
        (
            "extra_content",
            prop_oneof![9 => Just("null".to_owned()), 1 => Just("{\"google\": {}}".to_owned())]
                .boxed(),
        ),
    ]);
    // Now and then a fragment as an array, which no reading takes for one.
    prop_oneof![
        19 => fragment,
        1 => Just("[0, \"call_1\", \"function\"]".to_owned()),
    ]
    .boxed()
}

fn chunk() -> impl Strategy<Value = String> {
    let texts = &[
        "\"Hello\"",
        "\"\"",
        "\" wor\\nld \\u00e9\\\"\"",
        "\"\\ud83d\\ude00\"",
    ];
    let delta = object(vec![
        ("role", value(&["\"assistant\""]).boxed()),
        ("content", value(texts).boxed()),
        ("reasoning_content", value(texts).boxed()),
        ("reasoning", value(texts).boxed()),
        ("refusal", value(texts).boxed()),
        (
            "tool_calls",
            prop_oneof![
                prop::collection::vec(fragment(), 0..3)
                    .prop_map(|fragments| format!("[{}]", fragments.join(", "))),
                value(&["null"]),
            ]
            .boxed(),
        ),
    ]);
    let choice = object(vec![
        ("index", value(&["0"]).boxed()),
        (
            "delta",
            prop_oneof![4 => delta, 1 => value(&["null"])].boxed(),
        ),
        (
            "finish_reason",
            value(&["null", "\"stop\"", "\"tool_calls\"", "\"length\""]).boxed(),
        ),
        ("logprobs", value(&["null"]).boxed()),
    ]);
    let choices = prop_oneof![
        6 => prop::collection::vec(choice, 0..3)
            .prop_map(|choices| format!("[{}]", choices.join(", "))),
        1 => value(&["null"]),
    ];
    object(vec![
        ("id", value(&["\"chatcmpl-1\""]).boxed()),
        ("object", value(&["\"chat.completion.chunk\""]).boxed()),
        ("choices", choices.boxed()),
        (
            "usage",
            prop_oneof![9 => Just("null".to_owned()), 1 => Just("{\"prompt_tokens\": 3, \"completion_tokens\": 5}".to_owned())]
                .boxed(),
        ),
    ])
    .prop_flat_map(|chunk| {
        // Now and then an error report (even `"error": null` is one).
        (Just(chunk), 0..30u8).prop_map(|(chunk, error)| match error {
            0 | 1 => {
                let error = ["{\"message\": \"boom\"}", "null"][usize::from(error)];
                let rest = chunk.strip_prefix('{').unwrap_or("}");
                let comma = if rest == "}" { "" } else { ", " };
                format!("{{\"error\": {error}{comma}{rest}")
            }
            _ => chunk,
        })
    })
}

#[test]
fn chunks_read_straight_add_what_they_add_through_a_value() {
    let mut runner = TestRunner::new(Config {
        cases: 2_000,
        failure_persistence: None,
        ..Config::default()
    });
    let (straight, through) = (std::cell::Cell::new(0u32), std::cell::Cell::new(0u32));
    let stream = prop::collection::vec(chunk(), 1..6);
    runner
        .run(&stream, |chunks| {
            let (mut fast, mut slow) = (Stream::new(), Stream::new());
            // As the model clients read: each event's pieces into one
            // buffer kept for the whole stream.
            let (mut into, mut pieces) = (Stream::new(), Vec::new());
            for text in &chunks {
                let value: Value = serde_json::from_str(text).expect("generated JSON");
                let expected = slow.push(&value).map_err(|error| error.to_string());
                pieces.clear();
                let got_into = match into.__push_json_into(text, &mut pieces) {
                    // The pieces go to the buffer only, as `exchange`
                    // sends both.
                    Some(pushed) => pushed.map(|mut pushed| {
                        assert!(pushed.deltas.is_empty(), "{text}");
                        pushed.deltas = std::mem::take(&mut pieces);
                        pushed
                    }),
                    None => into.push(&value),
                }
                .map_err(|error| error.to_string());
                prop_assert_eq!(&got_into, &expected, "{}", text);
                let got = match fast.push_json(text) {
                    Some(pushed) => {
                        straight.set(straight.get() + 1);
                        pushed
                    }
                    None => {
                        through.set(through.get() + 1);
                        fast.push(&value)
                    }
                }
                .map_err(|error| error.to_string());
                prop_assert_eq!(got, expected, "{}", text);
            }
            let slow = slow.finish();
            prop_assert_eq!(&into.finish(), &slow, "{:?}", chunks);
            prop_assert_eq!(fast.finish(), slow, "{:?}", chunks);
            Ok(())
        })
        .unwrap();
    let (straight, through) = (straight.get(), through.get());
    println!("read straight {straight} times, through a Value {through} times");
    // Both ways must be common, or the property says little.
    assert!(
        straight > 1_000 && through > 1_000,
        "straight {straight}, through {through}"
    );
}

#[test]
fn text_that_is_not_a_chunk_is_left_to_the_value_reading() {
    let mut stream = Stream::new();
    for text in [
        "",
        "{",
        "[]",
        "\"x\"",
        "{} x",
        "{\"choices\": [{\"delta\": {\"content\": 5}}]}",
        // Arrays where objects go: a derived struct would read them.
        r#"{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": ["f", "{}"]}]}}]}"#,
        r#"{"choices": [{"delta": {"tool_calls": [[0, "c1"]]}}]}"#,
        r#"{"choices": [[null, {"content": "x"}]]}"#,
    ] {
        assert!(stream.push_json(text).is_none(), "{text}");
    }
    let usual = r#"{"choices": [{"index": 0, "delta": {"content": "Hi"}}]}"#;
    let pushed = stream.push_json(usual).expect("the usual shape").unwrap();
    assert_eq!(pushed.deltas, [behest::ModelDelta::Text("Hi".to_owned())]);
}

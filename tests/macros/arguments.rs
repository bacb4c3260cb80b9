//! The arguments struct `#[tool]` generates reads and describes arguments
//! exactly as the same struct with `#[derive(Deserialize, JsonSchema)]`
//! would: same schema, same values, same error messages. Only a JSON array
//! differs: the derive reads one in field order, the generated struct, like
//! the schema, wants an object.

// The tools' functions are never called here: only their arguments structs.
#![allow(dead_code)]

use crate::support;

use behest::tool;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use support::WideArgs;

/// Mixes every kind of argument.
#[tool]
fn mixed(
    /// # Count
    /// How many, at least one.
    count: i64,
    /// What kind.
    #[arg(rename = "type")]
    kind: String,
    maybe: Option<bool>,
    #[arg(default = 5)] limit: u32,
    /// Labels.
    tags: Vec<String>,
    point: Option<Point>,
) -> String {
    format!("{count} {kind} {maybe:?} {limit} {tags:?} {point:?}")
}

#[derive(Debug, Deserialize, JsonSchema)]
struct Point {
    x: f64,
    y: f64,
}

/// The derive's twin of `MixedArgs`.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct MixedTwin {
    /// # Count
    /// How many, at least one.
    count: i64,
    /// What kind.
    #[serde(rename = "type")]
    kind: String,
    maybe: Option<bool>,
    #[schemars(with = "u32")]
    limit: Option<u32>,
    /// Labels.
    tags: Vec<String>,
    point: Option<Point>,
}

/// Takes unknown arguments.
#[tool(allow_unknown_arguments)]
fn lenient(first: u8, second: Option<String>) -> String {
    format!("{first} {second:?}")
}

#[derive(Deserialize, JsonSchema)]
struct LenientTwin {
    first: u8,
    second: Option<String>,
}

/// The schema of `T` without the root's title and description, which only
/// name and describe the Rust type.
fn schema<T: JsonSchema>() -> Value {
    let mut schema = Value::from(schemars::schema_for!(T));
    let root = schema.as_object_mut().unwrap();
    root.remove("title");
    root.remove("description");
    schema
}

#[test]
fn the_schema_is_the_derives() {
    assert_eq!(schema::<MixedArgs>(), schema::<MixedTwin>());
    assert_eq!(schema::<LenientArgs>(), schema::<LenientTwin>());
    let mixed = schema::<MixedArgs>();
    assert_eq!(mixed["properties"]["count"]["title"], "Count");
    assert_eq!(
        mixed["properties"]["count"]["description"],
        "How many, at least one."
    );
    assert_eq!(
        mixed["required"],
        serde_json::json!(["count", "type", "limit", "tags"])
    );
    let wide = schema::<WideArgs>();
    assert_eq!(wide["properties"].as_object().unwrap().len(), 13);
    assert_eq!(wide["properties"]["m"]["description"], "The last one.");
}

/// Both structs' reading of `text`, as comparable text.
fn read<A, B>(text: &str, show: fn(A) -> String, show_twin: fn(B) -> String) -> (String, String)
where
    A: for<'de> Deserialize<'de>,
    B: for<'de> Deserialize<'de>,
{
    let ours = serde_json::from_str::<A>(text).map(show);
    let theirs = serde_json::from_str::<B>(text).map(show_twin);
    let text = |result: Result<String, serde_json::Error>| match result {
        Ok(value) => value,
        Err(error) => format!("error: {error}").replace("Twin", "Args"),
    };
    (text(ours), text(theirs))
}

fn show_mixed(a: MixedArgs) -> String {
    format!(
        "{} {} {:?} {:?} {:?} {:?}",
        a.count, a.kind, a.maybe, a.limit, a.tags, a.point
    )
}

fn show_mixed_twin(a: MixedTwin) -> String {
    format!(
        "{} {} {:?} {:?} {:?} {:?}",
        a.count, a.kind, a.maybe, a.limit, a.tags, a.point
    )
}

#[test]
fn values_and_messages_are_the_derives() {
    let texts = [
        r#"{"count": 1, "type": "a", "tags": []}"#,
        r#"{"count": 1, "type": "a", "tags": ["x"], "maybe": true, "limit": 9, "point": {"x": 1, "y": 2.5}}"#,
        r#"{"tags": [], "type": "a", "count": -4, "limit": null, "maybe": null, "point": null}"#,
        r#"{"count": 1, "tags": []}"#,
        r#"{"count": 1, "type": "a"}"#,
        r#"{"count": 1, "type": "a", "tags": [], "kind": "b"}"#,
        r#"{"count": 1, "count": 2, "type": "a", "tags": []}"#,
        r#"{"count": "1", "type": "a", "tags": []}"#,
        r#"{"count": 1.5, "type": "a", "tags": []}"#,
        r#"{"count": 1, "type": "a", "tags": [], "point": {"x": 1}}"#,
        r#"{"count": 1, "type": "a", "tags": [], "limit": -1}"#,
        r#"{"count": 1, "type": "a", "tags": [1]}"#,
        "{}",
        "null",
        r#""text""#,
        "7",
        r#"{"count": 1, "type": "a", "tags": []"#,
    ];
    for text in texts {
        let (ours, theirs) = read(text, show_mixed, show_mixed_twin);
        assert_eq!(ours, theirs, "{text}");
    }
    let (ours, theirs) = read(
        r#"{"first": 3, "extra": [1, {"deep": true}], "second": "s"}"#,
        |a: LenientArgs| format!("{} {:?}", a.first, a.second),
        |a: LenientTwin| format!("{} {:?}", a.first, a.second),
    );
    assert_eq!(
        (ours.as_str(), theirs.as_str()),
        ("3 Some(\"s\")", "3 Some(\"s\")")
    );
}

#[test]
fn an_array_is_refused_where_the_derive_reads_it_in_order() {
    let text = r#"[1, "a", null, null, [], null]"#;
    let (ours, theirs) = read(text, show_mixed, show_mixed_twin);
    assert_eq!(
        ours,
        "error: invalid type: sequence, expected struct MixedArgs at line 1 column 1"
    );
    assert!(!theirs.starts_with("error"), "{theirs}");
}

#[test]
fn past_twelve_arguments_the_derives_read_them() {
    let text = r#"{"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1, "g": 1, "h": 1, "i": 1, "j": 1, "k": 1, "l": 1}"#;
    let args: WideArgs = serde_json::from_str(text).unwrap();
    assert_eq!((args.a, args.m), (1, None));
    let error = serde_json::from_str::<WideArgs>(r#"{"z": 1}"#)
        .err()
        .unwrap();
    assert!(
        error.to_string().starts_with("unknown field `z`"),
        "{error}"
    );
}

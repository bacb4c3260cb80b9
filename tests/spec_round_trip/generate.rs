//! Writes the struct + spec file pairs of `tests/schemas/spec_round_trip.rs`: one
//! `#[external_tool(schema = "..")]` struct per object schema of the
//! JSON-Schema-Test-Suite that a struct can express, and the schema as its
//! file. Run by the build script; the suite's files are read in place.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::{Map, Value};

/// Root keywords a struct with a spec file can stand for: properties (the
/// fields) and keywords that constrain the object without naming fields
/// the struct would have to read.
const ROOT_KEYWORDS: &[&str] = &[
    "$schema",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "minProperties",
    "maxProperties",
    "dependentRequired",
    "propertyNames",
];

/// Writes `spec_round_trip.rs` and the schema files into `out`; with no
/// suite, a `cases()` that finds none.
pub fn generate(suite: Option<&Path>, out: &Path) {
    let mut code = String::new();
    let mut cases = String::new();
    if let Some(suite) = suite {
        let dir = suite.join("tests/draft2020-12");
        // Naming a folder that does not exist would rerun the script on
        // every build.
        if dir.is_dir() {
            println!("cargo::rerun-if-changed={}", dir.display());
        }
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .map(|entries| entries.filter_map(Result::ok).map(|e| e.path()).collect())
            .unwrap_or_default();
        files.retain(|path| path.extension().is_some_and(|ext| ext == "json"));
        files.sort();
        let schemas = out.join("spec_round_trip");
        std::fs::create_dir_all(&schemas).expect("create the schema folder");
        for path in files {
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(Value::Array(groups)) = serde_json::from_str::<Value>(&text) else {
                continue;
            };
            let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
            for (index, group) in groups.iter().enumerate() {
                let Some(schema) = expressible(&group["schema"]) else {
                    continue;
                };
                let number = cases.matches("Case {").count();
                let json = schemas.join(format!("case_{number}.json"));
                write_if_changed(&json, &serde_json::to_string_pretty(&schema).unwrap());
                write_case(&mut code, number, &file_name, index, &schema, &json);
                writeln!(
                    cases,
                    "        Case {{ file: {file_name:?}, group: {index}, tool: Case{number}::external_tool(), parse: |arguments| <Case{number} as behest::ExternalToolArgs>::from_arguments(arguments).map(drop) }},"
                )
                .unwrap();
            }
        }
    }
    writeln!(
        code,
        "/// Every generated pair.\npub fn cases() -> Vec<Case> {{\n    vec![\n{cases}    ]\n}}"
    )
    .unwrap();
    write_if_changed(&out.join("spec_round_trip.rs"), &code);
}

/// Writes `text` unless the file holds it already, so that an unchanged
/// output does not rebuild what includes it.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    std::fs::write(path, text).expect("write a generated file");
}

/// The schema as a spec file when a struct can express it: an object with
/// fields for its properties (`"type": "object"` added where the suite
/// leaves the root's type open, as a tool's arguments need one).
fn expressible(schema: &Value) -> Option<Value> {
    let root = schema.as_object()?;
    if !root.keys().all(|key| ROOT_KEYWORDS.contains(&key.as_str())) {
        return None;
    }
    if root
        .keys()
        .all(|key| key == "$schema" || key == "description")
    {
        return None;
    }
    if root.get("type").is_some_and(|kind| kind != "object") {
        return None;
    }
    if root
        .get("additionalProperties")
        .is_some_and(|extra| !extra.is_boolean())
    {
        return None;
    }
    let properties = match root.get("properties") {
        Some(Value::Object(properties)) => properties.clone(),
        Some(_) => return None,
        None => Map::new(),
    };
    // A property nobody may send, or a reference, has no field type.
    if properties
        .values()
        .any(|property| property == &Value::Bool(false) || property.to_string().contains("$ref"))
    {
        return None;
    }
    let required: Vec<&str> = match root.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        Some(_) => return None,
        None => Vec::new(),
    };
    if !required.iter().all(|name| properties.contains_key(*name)) {
        return None;
    }
    let mut file = root.clone();
    file.insert("type".to_owned(), Value::String("object".to_owned()));
    Some(Value::Object(file))
}

/// The struct for one schema, with an enum for each property whose
/// `enum` lists only strings.
fn write_case(
    code: &mut String,
    number: usize,
    file_name: &str,
    group: usize,
    schema: &Value,
    json: &Path,
) {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut fields = String::new();
    for (index, (name, property)) in properties.iter().enumerate() {
        let rust_type = match string_enum(property) {
            Some(values) => {
                let enum_name = format!("Case{number}Field{index}");
                write_enum(code, &enum_name, &values);
                enum_name
            }
            None => field_type(property).to_owned(),
        };
        let rust_type = if required.contains(&name.as_str()) {
            rust_type
        } else {
            format!("Option<{rust_type}>")
        };
        if is_plain_ident(name) {
            writeln!(fields, "    {name}: {rust_type},").unwrap();
        } else {
            writeln!(
                fields,
                "    #[serde(rename = {name:?})]\n    field_{index}: {rust_type},"
            )
            .unwrap();
        }
    }
    writeln!(
        code,
        "/// `{file_name}`, group {group}.\n#[behest::external_tool(schema = {:?})]\nstruct Case{number} {{\n{fields}}}\n",
        json.display().to_string()
    )
    .unwrap();
}

fn write_enum(code: &mut String, name: &str, values: &[String]) {
    let mut variants = String::new();
    for (index, value) in values.iter().enumerate() {
        writeln!(variants, "    #[serde(rename = {value:?})]\n    V{index},").unwrap();
    }
    writeln!(
        code,
        "/// Values of a property.\n#[behest::data(input)]\n#[allow(dead_code)]\nenum {name} {{\n{variants}}}\n"
    )
    .unwrap();
}

/// The strings an `enum` lists, when it lists only (distinct) strings.
fn string_enum(property: &Value) -> Option<Vec<String>> {
    let values = property.get("enum")?.as_array()?;
    let strings: Vec<String> = values
        .iter()
        .map(|value| value.as_str().map(str::to_owned))
        .collect::<Option<_>>()?;
    let mut distinct = strings.clone();
    distinct.sort();
    distinct.dedup();
    (distinct.len() == strings.len() && !strings.is_empty()).then_some(strings)
}

/// The Rust type that reads a property: by its one `type`, or any JSON.
fn field_type(property: &Value) -> &'static str {
    match property.get("type").and_then(Value::as_str) {
        Some("string") => "String",
        Some("integer") => "i64",
        Some("number") => "f64",
        Some("boolean") => "bool",
        Some("array") => "Vec<serde_json::Value>",
        Some("object") => "serde_json::Map<String, serde_json::Value>",
        Some("null") => "()",
        _ => "serde_json::Value",
    }
}

/// A lower-case Rust identifier that is not a keyword.
fn is_plain_ident(name: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum",
        "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
        "mut", "pub", "ref", "return", "self", "static", "struct", "super", "trait", "true",
        "type", "unsafe", "use", "where", "while", "abstract", "become", "box", "do", "final",
        "macro", "override", "priv", "try", "typeof", "unsized", "virtual", "yield", "gen",
    ];
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_lowercase() || first == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name != "_"
        && !KEYWORDS.contains(&name)
}

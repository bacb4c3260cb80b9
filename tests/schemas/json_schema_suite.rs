//! The official JSON-Schema-Test-Suite (draft 2020-12, required tests)
//! against the validator exactly as the registry configures it.
//!
//! The suite is vendored under `tests/data/json-schema-test-suite` (its
//! origin and licence in `tests/data/README.md`) and read relative to the
//! crate: the test always runs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use behest::validation::ArgumentValidator;
use serde_json::Value;

/// The keyword check the macros run on spec files when a crate builds.
#[path = "../../behest-macros/src/internals/schema_keywords.rs"]
#[allow(dead_code)]
mod schema_keywords;

/// Cases whose verdict we knowingly differ on, as (file, case description,
/// test description or "*" for the whole case, reason).
const EXCEPTIONS: &[(&str, &str, &str, &str)] = &[(
    "vocabulary.json",
    "schema that uses custom metaschema with with no validation vocabulary",
    "no validation: invalid number, but it still validates",
    "tool schemas are always checked with the full draft 2020-12 vocabularies: a custom \
     meta-schema that drops the validation vocabulary would make a tool accept any arguments",
)];

/// The vendored test data (`tests/data/README.md` says where it comes
/// from).
fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

/// Every remote document, keyed by the URI the suite serves it under.
fn remotes(root: &Path) -> HashMap<String, Value> {
    let mut documents = HashMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                let relative = path
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&path).unwrap();
                documents.insert(
                    format!("http://localhost:1234/{relative}"),
                    serde_json::from_str(&text).unwrap(),
                );
            }
        }
    }
    documents
}

/// The required test files of the suite, in name order.
fn suite_files(suite: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(suite.join("tests/draft2020-12"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(
        files.len() > 40,
        "the suite is incomplete: {} files",
        files.len()
    );
    files
}

/// Every case of the required tests, with the name of its file.
fn suite_cases(suite: &Path) -> Vec<(String, Value)> {
    suite_files(suite)
        .iter()
        .flat_map(|path| {
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            let cases: Vec<Value> =
                serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
            cases.into_iter().map(move |case| (file.clone(), case))
        })
        .collect()
}

fn is_exception(file: &str, case: &str, test: &str) -> bool {
    EXCEPTIONS
        .iter()
        .any(|&(f, c, t, _)| f == file && c == case && (t == "*" || t == test))
}

#[test]
fn validator_agrees_with_every_required_verdict() {
    let suite = data_dir().join("json-schema-test-suite");
    let documents = remotes(&suite.join("remotes"));

    let (mut checked, mut excepted) = (0usize, 0usize);
    let mut disagreements = Vec::new();
    for (file, case) in &suite_cases(&suite) {
        let description = case["description"].as_str().unwrap();
        let validator =
            ArgumentValidator::compile_with_documents(&case["schema"], documents.clone());
        for test in case["tests"].as_array().unwrap() {
            let test_description = test["description"].as_str().unwrap();
            let expected = test["valid"].as_bool().unwrap();
            let verdict = match &validator {
                Ok(validator) => Ok(validator.is_valid(&test["data"])),
                Err(error) => Err(error.to_string()),
            };
            if is_exception(file, description, test_description) {
                excepted += 1;
                continue;
            }
            checked += 1;
            match verdict {
                Ok(valid) if valid == expected => {}
                Ok(valid) => disagreements.push(format!(
                    "{file} / {description} / {test_description}: expected valid={expected}, got {valid}"
                )),
                Err(error) => disagreements.push(format!(
                    "{file} / {description} / {test_description}: schema refused: {error}"
                )),
            }
        }
    }
    println!("{checked} verdicts checked, {excepted} listed exceptions");
    assert!(
        disagreements.is_empty(),
        "{} disagreements:\n{}",
        disagreements.len(),
        disagreements.join("\n")
    );
}

/// `$ref` inlining must keep every verdict of each suite schema it accepts.
#[test]
fn inlining_references_keeps_every_verdict() {
    let suite = data_dir().join("json-schema-test-suite");
    let (mut accepted, mut refused, mut with_refs) = (0usize, 0usize, 0usize);
    let mut disagreements = Vec::new();
    for (file, case) in &suite_cases(&suite) {
        let description = case["description"].as_str().unwrap();
        let mut inlined = case["schema"].clone();
        let mut lints = Vec::new();
        behest::providers::schema::inline_refs(&mut inlined, &mut lints);
        if !lints.is_empty() {
            refused += 1;
            continue;
        }
        let Ok(validator) = ArgumentValidator::compile(&inlined) else {
            refused += 1;
            continue;
        };
        accepted += 1;
        with_refs += usize::from(case["schema"].to_string().contains("\"$ref\""));
        for test in case["tests"].as_array().unwrap() {
            let test_description = test["description"].as_str().unwrap();
            if is_exception(file, description, test_description) {
                continue;
            }
            if validator.is_valid(&test["data"]) != test["valid"].as_bool().unwrap() {
                disagreements.push(format!("{file} / {description} / {test_description}"));
            }
        }
    }
    println!("{accepted} schemas inlined ({with_refs} with references), {refused} refused");
    assert!(
        with_refs > 20,
        "the suite exercises inlining: {with_refs} schemas with references"
    );
    assert!(
        disagreements.is_empty(),
        "inlining changed verdicts:\n{}",
        disagreements.join("\n")
    );
}

#[test]
fn listed_exceptions_have_reasons() {
    for (file, case, test, reason) in EXCEPTIONS {
        assert!(
            !reason.trim().is_empty(),
            "{file} / {case} / {test} needs a reason"
        );
    }
}

/// The check spec files get when a crate builds (the keywords' kinds,
/// then the draft's meta-schema) agrees with registration, which has no
/// other documents than the schema: on every schema of the suite, it
/// refuses exactly what the registry's compile refuses, but for `$ref`s
/// to other documents, which registration cannot resolve (nothing is
/// fetched) and the build does not follow; and on the hand-broken schemas
/// below, both refuse.
#[test]
fn compile_time_checks_agree_with_registration() {
    let suite = data_dir().join("json-schema-test-suite");
    let (mut checked, mut refused, mut unresolved) = (0, 0, 0);
    for (file, case) in &suite_cases(&suite) {
        let schema = &case["schema"];
        let built = build_check(schema);
        let registered = ArgumentValidator::compile(schema);
        checked += 1;
        match (&built, &registered) {
            (Ok(()), Ok(_)) => {}
            (Err(_), Err(_)) => refused += 1,
            (Ok(()), Err(error)) if error.message.contains("never fetched") => unresolved += 1,
            _ => panic!(
                "{file} / {}: when building: {built:?}; at registration: {:?}",
                case["description"],
                registered.err()
            ),
        }
    }
    println!("{checked} schemas: {refused} refused by both, {unresolved} with references to other documents");
    assert!(checked > 300, "only {checked} schemas");
    let broken = [
        serde_json::json!({"type": "strnig"}),
        serde_json::json!({"required": "a"}),
        serde_json::json!({"properties": {"a": {"minLength": -1}}}),
        serde_json::json!({"properties": {"a": {"maximum": "ten"}}}),
        serde_json::json!({"anyOf": []}),
        serde_json::json!({"items": {"type": 7}}),
        serde_json::json!({"enum": "a"}),
        serde_json::json!({"pattern": 3}),
    ];
    for schema in broken {
        let mut problems = Vec::new();
        schema_keywords::keywords(&schema, "", &mut problems);
        assert!(
            !problems.is_empty(),
            "{schema}: not pointed at when building"
        );
        assert!(
            ArgumentValidator::compile(&schema).is_err(),
            "{schema}: accepted at registration"
        );
    }
    // Past what the pointed checks know, the meta-schemas decide, both
    // when building and at registration, per draft.
    let draft7 = "http://json-schema.org/draft-07/schema#";
    let meta_only = [
        serde_json::json!({"minProperties": 1.5}),
        serde_json::json!({"$schema": draft7, "items": [{"type": "string"}], "additionalItems": 3}),
        serde_json::json!({"$schema": draft7, "dependencies": {"a": 5}}),
    ];
    for schema in meta_only {
        assert!(
            build_check(&schema).is_err(),
            "{schema}: accepted when building"
        );
        assert!(
            ArgumentValidator::compile(&schema).is_err(),
            "{schema}: accepted at registration"
        );
    }
    let draft7_tuple = serde_json::json!({"$schema": draft7, "items": [{"type": "string"}]});
    assert_eq!(build_check(&draft7_tuple), Ok(()));
    assert!(ArgumentValidator::compile(&draft7_tuple).is_ok());
}

/// What the macros check when a crate builds: the keywords' kinds, then
/// the meta-schema of the schema's draft.
fn build_check(schema: &Value) -> Result<(), Vec<(String, String)>> {
    let mut problems = Vec::new();
    schema_keywords::keywords(schema, "", &mut problems);
    if problems.is_empty() {
        if let Err(problem) = schema_keywords::meta_schema(schema) {
            problems.push(problem);
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

//! Compiled argument validators and the messages they write for the model.
//!
//! Every schema is compiled once, with one configuration (the draft its
//! `$schema` names, 2020-12 without one; `format` as annotation only; no
//! network), and each failure is rewritten as "path: what was expected,
//! what was given".

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, Retrieve, Uri, ValidationError, Validator};
use serde_json::{Map, Value};

use crate::json_text::{preview, quoted_list};
use crate::suggest::closest;
use crate::tool::ArgumentIssue;

/// How many problems one argument error lists; the rest are counted.
pub const MAX_REPORTED_ISSUES: usize = 10;

/// The deepest nesting of JSON values a schema may have. Compiling and
/// checking a schema recurses per level: a schema from a remote server
/// nested deeper could overflow the stack of the thread registering it.
/// Arguments nest at most 64 deep by default, and describing one level
/// takes two (`properties`, then the name).
pub const MAX_SCHEMA_DEPTH: usize = 160;

/// The most JSON values (objects, arrays, strings, ... at every depth) a
/// schema may have: compiling costs time and memory in proportion.
pub const MAX_SCHEMA_VALUES: usize = 200_000;

/// The longest `pattern` (or `patternProperties` key) a schema may use, in
/// bytes. Matching is linear in the text with the engine configured below,
/// but compiling grows with the pattern.
pub const MAX_PATTERN_BYTES: usize = 4096;

/// The most bytes all of a schema's patterns may have together: each
/// compiles to its own program.
pub const MAX_PATTERN_BYTES_IN_ALL: usize = 64 * 1024;

/// A JSON Schema compiled for validating tool arguments.
///
/// This is the validator the registry builds for each tool, exposed so that
/// tests and tools can check values exactly as the runtime does.
#[derive(Clone)]
pub struct ArgumentValidator {
    validator: Arc<Validator>,
    schema: Arc<Value>,
}

/// A schema that could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SchemaError {
    /// JSON Pointer into the schema where the problem is (`""`: the root).
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl ArgumentValidator {
    /// Compiles `schema` in the draft its `$schema` names (drafts 4, 6, 7,
    /// 2019-09 and 2020-12, as remote MCP servers send them), or 2020-12
    /// without one. A schema that does not conform to its draft's
    /// meta-schema, or names another meta-schema, is refused. References to
    /// documents other than `schema` itself are refused: nothing is fetched.
    pub fn compile(schema: &Value) -> Result<Self, SchemaError> {
        Self::compile_with_documents(schema, HashMap::new())
    }

    /// Compiles `schema`, resolving `$ref`s to other documents from
    /// `documents`, keyed by their absolute URI. Nothing is fetched.
    pub fn compile_with_documents(
        schema: &Value,
        documents: HashMap<String, Value>,
    ) -> Result<Self, SchemaError> {
        Self::build(schema, documents, None)
    }

    /// Compiles `schema` to check what another party sends: `format` is an
    /// annotation whatever the draft, as the official MCP SDKs treat it
    /// (drafts up to 7 would otherwise assert it).
    #[cfg(feature = "mcp")]
    pub(crate) fn compile_lenient(schema: &Value) -> Result<Self, SchemaError> {
        Self::build(schema, HashMap::new(), Some(false))
    }

    /// `formats`: whether `format` asserts (`None`: as the draft says).
    fn build(
        schema: &Value,
        documents: HashMap<String, Value>,
        formats: Option<bool>,
    ) -> Result<Self, SchemaError> {
        check_bounds(schema)?;
        // A custom meta-schema given among the documents is written in a
        // draft too: the schema is read in that one.
        let draft = draft_of(schema).or_else(|error| {
            let uri = schema
                .get("$schema")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match documents.get(uri.trim_end_matches('#')) {
                Some(meta) => draft_of(meta),
                None => Err(error),
            }
        })?;
        let meta = match draft {
            Draft::Draft4 => jsonschema::draft4::meta::validate(schema),
            Draft::Draft6 => jsonschema::draft6::meta::validate(schema),
            Draft::Draft7 => jsonschema::draft7::meta::validate(schema),
            Draft::Draft201909 => jsonschema::draft201909::meta::validate(schema),
            _ => jsonschema::draft202012::meta::validate(schema),
        };
        if let Err(error) = meta {
            return Err(SchemaError {
                path: error.instance_path().as_str().to_owned(),
                message: format!("not a valid JSON Schema ({}): {error}", draft_name(draft)),
            });
        }
        let mut options = jsonschema::options()
            .with_draft(draft)
            .with_pattern_options(pattern_options())
            .with_retriever(Documents(documents));
        if let Some(formats) = formats {
            options = options.should_validate_formats(formats);
        }
        let validator = options.build(schema).map_err(|error| SchemaError {
            path: error.instance_path().as_str().to_owned(),
            message: format!("the schema cannot be compiled: {error}"),
        })?;
        Ok(Self {
            validator: Arc::new(validator),
            schema: Arc::new(schema.clone()),
        })
    }

    /// Whether `instance` is valid.
    pub fn is_valid(&self, instance: &Value) -> bool {
        self.validator.is_valid(instance)
    }

    /// Checks `instance`, listing up to [`MAX_REPORTED_ISSUES`] problems
    /// and the count of the rest.
    pub fn validate(&self, instance: &Value) -> Result<(), (Vec<ArgumentIssue>, usize)> {
        if self.validator.is_valid(instance) {
            return Ok(());
        }
        let mut issues = Vec::new();
        for error in self.validator.iter_errors(instance) {
            describe(&error, &self.schema, instance, &mut issues);
        }
        // Grouped by path, so that the model reads its mistakes field by field.
        issues.sort_by(|a, b| a.path.cmp(&b.path));
        issues.dedup();
        let omitted = issues.len().saturating_sub(MAX_REPORTED_ISSUES);
        issues.truncate(MAX_REPORTED_ISSUES);
        Err((issues, omitted))
    }

    /// The schema this validator was compiled from.
    pub fn schema(&self) -> &Value {
        &self.schema
    }
}

impl fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// The draft `schema` is written in: the one its `$schema` names, or
/// 2020-12 when it names none. A `$schema` behest does not know (a custom
/// meta-schema) is an error: nothing is fetched to learn it.
pub(crate) fn draft_of(schema: &Value) -> Result<Draft, SchemaError> {
    let refused = |message: String| SchemaError {
        path: "/$schema".to_owned(),
        message,
    };
    match schema.get("$schema") {
        None => Ok(Draft::Draft202012),
        Some(Value::String(uri)) => match Draft::from_schema_uri(uri) {
            Draft::Unknown => Err(refused(format!(
                "`$schema` names `{uri}`, not a draft behest knows (4, 6, 7, 2019-09, 2020-12)"
            ))),
            draft => Ok(draft),
        },
        Some(other) => Err(refused(format!(
            "`$schema` must be a URI string, found {other}"
        ))),
    }
}

/// The regular-expression engine for `pattern`: fancy-regex, which hands
/// every pattern without lookaround or backreferences to the linear-time
/// `regex` engine (`^(a+)+$` included), and stops the backtracking the
/// others need after a bounded number of steps; compiled programs and the
/// lazy DFA's cache have a bounded size.
fn pattern_options() -> jsonschema::PatternOptions<jsonschema::FancyRegex> {
    jsonschema::PatternOptions::fancy_regex()
        .backtrack_limit(1_000_000)
        .size_limit(10 << 20)
        .dfa_size_limit(2 << 20)
}

/// Refuses a schema whose size would make compiling it unbounded work:
/// nesting deeper than [`MAX_SCHEMA_DEPTH`], more than
/// [`MAX_SCHEMA_VALUES`] values, or a pattern longer than
/// [`MAX_PATTERN_BYTES`]. Walked without recursion, so that the check
/// itself cannot overflow the stack.
fn check_bounds(schema: &Value) -> Result<(), SchemaError> {
    let refused = |at: &Value, message: String| SchemaError {
        path: path_to(schema, at),
        message,
    };
    // (value, its depth, what its keys are)
    let mut pending: Vec<(&Value, usize, Keys)> = vec![(schema, 1, Keys::Keywords)];
    let mut values = 0usize;
    let mut pattern_bytes = 0usize;
    while let Some((value, depth, keys)) = pending.pop() {
        values += 1;
        if values > MAX_SCHEMA_VALUES {
            return Err(SchemaError {
                path: String::new(),
                message: format!(
                    "the schema is too large: more than {MAX_SCHEMA_VALUES} JSON values"
                ),
            });
        }
        if depth > MAX_SCHEMA_DEPTH {
            return Err(refused(
                value,
                format!("the schema is nested too deeply: more than {MAX_SCHEMA_DEPTH} levels"),
            ));
        }
        match value {
            Value::Object(object) => {
                for (key, child) in object {
                    let pattern = match (keys, key.as_str(), child) {
                        (Keys::Patterns, _, _) => Some(key.len()),
                        (Keys::Keywords, "pattern", Value::String(pattern)) => Some(pattern.len()),
                        _ => None,
                    };
                    if let Some(length) = pattern {
                        pattern_bytes += length;
                        if length > MAX_PATTERN_BYTES || pattern_bytes > MAX_PATTERN_BYTES_IN_ALL {
                            return Err(refused(
                                child,
                                format!(
                                    "the pattern is too long: more than {MAX_PATTERN_BYTES} bytes, or {MAX_PATTERN_BYTES_IN_ALL} for all of the schema's patterns"
                                ),
                            ));
                        }
                    }
                    let child_keys = match (keys, key.as_str()) {
                        (Keys::Data, _) => Keys::Data,
                        (Keys::Keywords, "patternProperties") => Keys::Patterns,
                        // Values, not schemas: a `pattern` key there is data.
                        (Keys::Keywords, "enum" | "const" | "default" | "examples") => Keys::Data,
                        _ => Keys::Keywords,
                    };
                    pending.push((child, depth + 1, child_keys));
                }
            }
            Value::Array(items) => {
                // The items of `enum` and `examples` stay data; those of
                // `allOf` and the like are schemas.
                let item_keys = if keys == Keys::Data {
                    Keys::Data
                } else {
                    Keys::Keywords
                };
                pending.extend(items.iter().map(|child| (child, depth + 1, item_keys)));
            }
            _ => {}
        }
    }
    Ok(())
}

/// What the keys of an object met in a schema are.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keys {
    /// Keywords, or property names under `properties` (whose values are
    /// schemas, so keywords again one level down).
    Keywords,
    /// The regular expressions of `patternProperties`.
    Patterns,
    /// Values of `enum`, `const`, `default`, `examples`: not a schema.
    Data,
}

/// The JSON pointer of `target` (found by address) in `root`; built only
/// for an error, so the walk above keeps no paths.
fn path_to(root: &Value, target: &Value) -> String {
    let mut pending = vec![(root, String::new())];
    while let Some((value, path)) = pending.pop() {
        if std::ptr::eq(value, target) {
            return path;
        }
        match value {
            Value::Object(object) => pending.extend(
                object
                    .iter()
                    .map(|(key, child)| (child, join_pointer(&path, key))),
            ),
            Value::Array(items) => pending.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(index, child)| (child, format!("{path}/{index}"))),
            ),
            _ => {}
        }
    }
    String::new()
}

/// How people name `draft`.
fn draft_name(draft: Draft) -> &'static str {
    match draft {
        Draft::Draft4 => "draft 4",
        Draft::Draft6 => "draft 6",
        Draft::Draft7 => "draft 7",
        Draft::Draft201909 => "draft 2019-09",
        _ => "draft 2020-12",
    }
}

/// Serves `$ref`s from documents given up front; fetches nothing.
struct Documents(HashMap<String, Value>);

impl Retrieve for Documents {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let key = uri.as_str();
        let key = key.strip_suffix('#').unwrap_or(key);
        self.0
            .get(key)
            .cloned()
            .ok_or_else(|| format!("`{key}` is not available: schemas are never fetched").into())
    }
}

/// Appends the issues one validation error stands for.
/// `root` is the whole instance validated, to read what an error only
/// points at.
fn describe(
    error: &ValidationError<'_>,
    schema: &Value,
    root: &Value,
    issues: &mut Vec<ArgumentIssue>,
) {
    let path = error.instance_path().as_str();
    let instance = error.instance();
    let message = match error.kind() {
        ValidationErrorKind::Type { kind } => {
            format!("expected {}, got {}", expected_types(kind), given(instance))
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            issues.push(ArgumentIssue::new(
                join_pointer(path, name),
                "this required field is missing".to_owned(),
            ));
            return;
        }
        ValidationErrorKind::AdditionalProperties { unexpected }
        | ValidationErrorKind::UnevaluatedProperties { unexpected } => {
            let known = known_properties(schema, error.schema_path().as_str());
            unknown_fields(path, unexpected, &known, issues);
            return;
        }
        // `additionalProperties: false` with no `properties` beside it (a
        // tool without arguments) reports one of the object's properties
        // as failing a `false` subschema, at the object's path: every
        // property the object has is one too many.
        ValidationErrorKind::FalseSchema if is_unknown_property(error) => {
            let known = known_properties(schema, error.schema_path().as_str());
            let object = root.pointer(path).and_then(Value::as_object);
            let names = object.into_iter().flat_map(Map::keys);
            let unexpected = names.filter(|name| !known.contains(name));
            unknown_fields(path, unexpected, &known, issues);
            return;
        }
        ValidationErrorKind::Enum { options } => {
            format!(
                "expected one of {}, got {}",
                options_list(options),
                preview(instance)
            )
        }
        ValidationErrorKind::Constant { expected_value } => {
            format!(
                "expected {}, got {}",
                preview(expected_value),
                preview(instance)
            )
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            if let Some(branch) = deepest_branch(context, path) {
                for inner in branch {
                    describe(inner, schema, root, issues);
                }
                return;
            }
            match branch_expectations(context, path) {
                Some(expected) => format!("expected {expected}, got {}", preview(instance)),
                None => format!(
                    "{} does not match any of the allowed shapes",
                    given(instance)
                ),
            }
        }
        ValidationErrorKind::Minimum { limit } => bound("at least", limit, instance),
        ValidationErrorKind::Maximum { limit } => bound("at most", limit, instance),
        ValidationErrorKind::ExclusiveMinimum { limit } => bound("greater than", limit, instance),
        ValidationErrorKind::ExclusiveMaximum { limit } => bound("less than", limit, instance),
        ValidationErrorKind::MinLength { limit } => {
            let characters = plural(*limit, "character");
            format!("must have at least {characters}, got {}", preview(instance))
        }
        ValidationErrorKind::MaxLength { limit } => {
            let characters = plural(*limit, "character");
            format!("must have at most {characters}, got {}", preview(instance))
        }
        ValidationErrorKind::MinItems { limit } => {
            let items = plural(*limit, "item");
            format!("must have at least {items}, got {}", count(instance))
        }
        ValidationErrorKind::MaxItems { limit } => {
            let items = plural(*limit, "item");
            format!("must have at most {items}, got {}", count(instance))
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!(
                "must match the pattern `{pattern}`, got {}",
                preview(instance)
            )
        }
        ValidationErrorKind::UniqueItems => "the items must be unique".to_owned(),
        _ => format!("{}", error.masked()).replace('\n', " "),
    };
    issues.push(ArgumentIssue::new(path, message));
}

/// `1 character`, `2 characters`.
fn plural(count: u64, noun: &str) -> String {
    if count == 1 {
        format!("1 {noun}")
    } else {
        format!("{count} {noun}s")
    }
}

/// In an `anyOf`/`oneOf` failure, the one branch that got furthest into the
/// value (its errors are below `path`), if exactly one did. Reporting it
/// beats "matches none of the shapes" for `Option<Struct>` and tagged enums.
fn deepest_branch<'e>(
    context: &'e [Vec<ValidationError<'static>>],
    path: &str,
) -> Option<&'e [ValidationError<'static>]> {
    let depth = |branch: &Vec<ValidationError<'static>>| {
        branch
            .iter()
            .filter(|error| error.instance_path().as_str().len() > path.len())
            .count()
            + usize::from(branch.iter().any(is_inner_only))
    };
    let scores: Vec<usize> = context.iter().map(depth).collect();
    let best = *scores.iter().max()?;
    if best == 0 || scores.iter().filter(|&&s| s == best).count() != 1 {
        return None;
    }
    let index = scores.iter().position(|&s| s == best)?;
    Some(&context[index])
}

/// "a string or null" when every branch failed on one simple check at
/// `path` (a type, an enum or a constant).
fn branch_expectations(context: &[Vec<ValidationError<'static>>], path: &str) -> Option<String> {
    let mut expected = Vec::new();
    for branch in context {
        let [only] = branch.as_slice() else {
            return None;
        };
        if only.instance_path().as_str() != path {
            return None;
        }
        expected.push(match only.kind() {
            ValidationErrorKind::Type { kind } => expected_types(kind),
            ValidationErrorKind::Enum { options } => format!("one of {}", options_list(options)),
            ValidationErrorKind::Constant { expected_value } => preview(expected_value),
            _ => return None,
        });
    }
    (!expected.is_empty()).then(|| expected.join(" or "))
}

fn bound(relation: &str, limit: &Value, instance: &Value) -> String {
    format!("must be {relation} {limit}, got {}", preview(instance))
}

fn count(instance: &Value) -> String {
    match instance {
        Value::Array(items) => items.len().to_string(),
        other => preview(other),
    }
}

/// Errors that show the value had the right type but wrong content.
fn is_inner_only(error: &ValidationError<'_>) -> bool {
    matches!(
        error.kind(),
        ValidationErrorKind::Required { .. }
            | ValidationErrorKind::AdditionalProperties { .. }
            | ValidationErrorKind::UnevaluatedProperties { .. }
    )
}

fn expected_types(kind: &TypeKind) -> String {
    let names: Vec<&str> = match kind {
        TypeKind::Single(single) => vec![single.as_str()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
    };
    let with_article: Vec<String> = names.iter().map(|name| article(name)).collect();
    with_article.join(" or ")
}

fn article(type_name: &str) -> String {
    match type_name {
        "null" => "null".to_owned(),
        "integer" | "object" | "array" => format!("an {type_name}"),
        other => format!("a {other}"),
    }
}

/// "a string \"abc\"", "null", "an object": the JSON type and the value.
fn given(instance: &Value) -> String {
    match instance {
        Value::Null => "null".to_owned(),
        Value::Bool(_) => format!("the boolean {}", preview(instance)),
        Value::Number(n) if n.is_f64() => format!("the number {}", preview(instance)),
        Value::Number(_) => format!("the integer {}", preview(instance)),
        Value::String(_) => format!("the string {}", preview(instance)),
        Value::Array(_) => format!("an array {}", preview(instance)),
        Value::Object(_) => format!("an object {}", preview(instance)),
    }
}

fn options_list(options: &Value) -> String {
    match options {
        Value::Array(items) => {
            let shown: Vec<String> = items.iter().take(20).map(preview).collect();
            let more = items.len().saturating_sub(shown.len());
            if more > 0 {
                format!("{} (and {more} more)", shown.join(", "))
            } else {
                shown.join(", ")
            }
        }
        other => preview(other),
    }
}

/// A `false` subschema met under `additionalProperties` or
/// `unevaluatedProperties`: a property that is not accepted.
fn is_unknown_property(error: &ValidationError<'_>) -> bool {
    let keyword = error.schema_path().as_str().rsplit('/').next();
    matches!(
        keyword,
        Some("additionalProperties" | "unevaluatedProperties")
    )
}

/// One issue per property of the object at `path` that is not accepted.
fn unknown_fields<'a>(
    path: &str,
    unexpected: impl IntoIterator<Item = &'a String>,
    known: &[String],
    issues: &mut Vec<ArgumentIssue>,
) {
    for name in unexpected {
        // A hostile name is repeated cut, in the path too.
        issues.push(ArgumentIssue::new(
            join_pointer(path, &crate::suggest::shown(name)),
            unknown_field_message(name, known),
        ));
    }
}

fn unknown_field_message(name: &str, known: &[String]) -> String {
    if known.is_empty() {
        return format!(
            "`{}` is not an accepted field: none are accepted here",
            crate::suggest::shown(name)
        );
    }
    let mut message = format!("`{}` is not an accepted field", crate::suggest::shown(name));
    match closest(name, known.iter().map(String::as_str), 1).first() {
        Some(best) => message.push_str(&format!("; did you mean `{best}`? valid fields: ")),
        None => message.push_str("; valid fields: "),
    }
    message.push_str(&quoted_list(known));
    message
}

/// The property names declared next to the keyword at `keyword_path`.
fn known_properties(schema: &Value, keyword_path: &str) -> Vec<String> {
    let parent = keyword_path
        .rsplit_once('/')
        .map_or("", |(parent, _keyword)| parent);
    schema
        .pointer(parent)
        .and_then(|object| object.get("properties"))
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// `path` joined with one more JSON Pointer segment.
pub(crate) fn join_pointer(path: &str, segment: &str) -> String {
    format!("{path}/{}", segment.replace('~', "~0").replace('/', "~1"))
}

/// The names an object schema lists under `required`.
pub(crate) fn required_of(object: &Map<String, Value>) -> impl Iterator<Item = &str> {
    object
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// The names of the required properties at the root of `schema`.
pub(crate) fn required_names(schema: &Value) -> Vec<String> {
    schema
        .as_object()
        .into_iter()
        .flat_map(required_of)
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn issues(schema: Value, instance: Value) -> Vec<ArgumentIssue> {
        let validator = ArgumentValidator::compile(&schema).unwrap();
        validator.validate(&instance).unwrap_err().0
    }

    #[test]
    fn type_errors_say_what_was_expected_and_given() {
        let found = issues(
            json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
            json!({"n": "3"}),
        );
        assert_eq!(
            found,
            vec![ArgumentIssue::new(
                "/n",
                "expected an integer, got the string \"3\""
            )]
        );
    }

    #[test]
    fn missing_fields_point_at_the_field() {
        let found = issues(
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            json!({}),
        );
        assert_eq!(
            found,
            vec![ArgumentIssue::new(
                "/city",
                "this required field is missing"
            )]
        );
    }

    #[test]
    fn unknown_fields_list_the_valid_ones() {
        let found = issues(
            json!({
                "type": "object",
                "properties": {"city": {"type": "string"}, "units": {"type": "string"}},
                "additionalProperties": false
            }),
            json!({"cty": "Paris"}),
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "/cty");
        assert_eq!(
            found[0].message,
            "`cty` is not an accepted field; did you mean `city`? valid fields: `city`, `units`"
        );
    }

    #[test]
    fn unknown_fields_of_an_object_without_properties_are_named() {
        let schema = json!({"type": "object", "additionalProperties": false});
        let found = issues(schema, json!({"a/b": 1, "c": 2}));
        let found: Vec<(&str, &str)> = found
            .iter()
            .map(|issue| (issue.path.as_str(), issue.message.as_str()))
            .collect();
        assert_eq!(
            found,
            [
                (
                    "/a~1b",
                    "`a/b` is not an accepted field: none are accepted here"
                ),
                ("/c", "`c` is not an accepted field: none are accepted here"),
            ]
        );
    }

    #[test]
    fn optional_struct_reports_the_inner_error() {
        let found = issues(
            json!({
                "type": "object",
                "properties": {"address": {"anyOf": [
                    {"$ref": "#/$defs/Address"}, {"type": "null"}
                ]}},
                "$defs": {"Address": {
                    "type": "object",
                    "properties": {"zip": {"type": "string"}},
                    "required": ["zip"]
                }}
            }),
            json!({"address": {"zip": 75001}}),
        );
        assert_eq!(
            found,
            vec![ArgumentIssue::new(
                "/address/zip",
                "expected a string, got the integer 75001"
            )]
        );
    }

    #[test]
    fn invalid_schemas_are_refused() {
        let error = ArgumentValidator::compile(&json!({"type": "strnig"})).unwrap_err();
        assert!(error.message.contains("not a valid JSON Schema"), "{error}");
    }

    #[test]
    fn remote_references_are_never_fetched() {
        let schema = json!({"$ref": "https://example.com/schema.json"});
        let error = ArgumentValidator::compile(&schema).unwrap_err();
        assert!(error.message.contains("never fetched"), "{error}");
    }
}

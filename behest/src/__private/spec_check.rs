//! What a spec file and the Rust type that reads its arguments must agree
//! on beyond what the macro sees in the tokens: the values of an enum and
//! the JSON type of an argument whose type is defined elsewhere.
//!
//! The macro checks names, `required` and the types it can see when the
//! crate builds. An enum's variants are visible to it only through
//! `#[behest::data]` (the `__BEHEST_WIRE_VARIANTS` constant, compared in a
//! `const` item); everything else is compared here, with schemars'
//! rendering of the type, when the tool is registered.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde_json::Value;

/// The wire names of a unit-only enum's variants, as `#[behest::data]`
/// declares them in an inherent constant of the enum. An inherent constant
/// wins over this trait's, so `<T>::__BEHEST_WIRE_VARIANTS` (with the trait
/// in scope) is `Some` exactly for such enums, in a `const` item.
pub trait NoWireVariants {
    /// No variants known when the crate builds.
    const __BEHEST_WIRE_VARIANTS: Option<&'static [&'static str]> = None;
}

impl<T: ?Sized> NoWireVariants for T {}

/// Whether `a` and `b` hold the same names, in any order (for the `const`
/// check of an enum against a spec file's `enum`).
pub const fn same_names(a: &[&str], b: &[&str]) -> bool {
    contains_all(a, b) && contains_all(b, a)
}

const fn contains_all(haystack: &[&str], needles: &[&str]) -> bool {
    let mut n = 0;
    while n < needles.len() {
        let mut found = false;
        let mut h = 0;
        while h < haystack.len() {
            if same_text(haystack[h], needles[n]) {
                found = true;
            }
            h += 1;
        }
        if !found {
            return false;
        }
        n += 1;
    }
    true
}

const fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Where the schema at `pointer` in the spec file `text` (named `shown`)
/// and the type `A` that reads the arguments disagree, in a message for
/// the registry's error; `None` when they agree.
pub fn spec_conflict<A: JsonSchema>(text: &str, pointer: &str, shown: &str) -> Option<String> {
    let file: Value = serde_json::from_str(text).ok()?;
    let file = file.pointer(pointer).unwrap_or(&file);
    conflict(file, &super::schema_of::<A>(), shown, pointer)
}

/// See [`spec_conflict`]; `file` and `rust` are the two arguments schemas.
fn conflict(file: &Value, rust: &Value, shown: &str, pointer: &str) -> Option<String> {
    let file_properties = file.get("properties")?.as_object()?;
    let rust_properties = rust.get("properties")?.as_object()?;
    let mut problems = Vec::new();
    for (name, in_file) in file_properties {
        // Names and `required` were compared when the crate was built.
        let Some(in_rust) = rust_properties.get(name) else {
            continue;
        };
        let at = format!("`{name}` in `{shown}` (`{pointer}/properties/{name}`)");
        let type_name = type_name(in_rust).unwrap_or_else(|| "its type".to_owned());
        if let Some(problem) = disagreement(in_file, file, in_rust, rust, &type_name) {
            problems.push(format!("{at} {problem}"));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// How one property's schema in the file and in Rust disagree, if they do.
fn disagreement(
    file_schema: &Value,
    file_root: &Value,
    rust_schema: &Value,
    rust_root: &Value,
    type_name: &str,
) -> Option<String> {
    let file_values = values(file_schema, file_root, 0);
    let rust_values = values(rust_schema, rust_root, 0);
    match (file_values, rust_values) {
        (Some(file_values), Some(rust_values)) => {
            let extra = listed(file_values.difference(&rust_values));
            let missing = listed(rust_values.difference(&file_values));
            match (extra, missing) {
                (None, None) => None,
                (Some(extra), None) => Some(format!(
                    "allows {extra}, which `{type_name}` cannot read: add the variant, or remove the value from the file"
                )),
                (None, Some(missing)) => Some(format!(
                    "does not allow {missing}, which `{type_name}` has: add the value to the file's `enum`, or remove the variant"
                )),
                (Some(extra), Some(missing)) => Some(format!(
                    "allows {extra}, which `{type_name}` cannot read, and not {missing}, which it has: make the file's `enum` and the variants the same"
                )),
            }
        }
        (None, Some(rust_values)) => {
            let all = listed(rust_values.iter()).unwrap_or_default();
            Some(format!(
                "takes any value of its type, but `{type_name}` reads only {all}: list them in the file's `enum`"
            ))
        }
        // The file narrows what the type reads: fine.
        (Some(_), None) => None,
        (None, None) => {
            let file_types = types(file_schema, file_root, 0)?;
            let rust_types = types(rust_schema, rust_root, 0)?;
            let unreadable: Vec<String> = file_types
                .iter()
                // A number type reads integers too.
                .filter(|kind| {
                    let readable = rust_types.contains(*kind)
                        || (kind.as_str() == "integer" && rust_types.contains("number"));
                    !readable
                })
                .map(|kind| format!("`{kind}`"))
                .collect();
            let readable: Vec<String> = rust_types.iter().map(|kind| format!("`{kind}`")).collect();
            (!unreadable.is_empty()).then(|| {
                format!(
                    "is of type {}, but `{type_name}` reads {}: change the type or the file",
                    unreadable.join(" or "),
                    readable.join(" or ")
                )
            })
        }
    }
}

/// `values` as `"a", "b"`, or `None` when there are none.
fn listed<'a>(values: impl Iterator<Item = &'a String>) -> Option<String> {
    let values: Vec<&str> = values.map(String::as_str).collect();
    (!values.is_empty()).then(|| values.join(", "))
}

/// The name of the Rust type a property's schema refers to (`Mode` for
/// `{"$ref": "#/$defs/Mode"}`, or an `Option` of it).
fn type_name(schema: &Value) -> Option<String> {
    if let Some(reference) = schema.get("$ref").and_then(Value::as_str) {
        return reference.rsplit('/').next().map(str::to_owned);
    }
    ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key)?.as_array())
        .flatten()
        .find_map(type_name)
}

/// Deep enough for any schema schemars writes; a deeper `$ref` chain is
/// not compared.
const MAX_DEPTH: usize = 16;

/// `schema` with its `$ref` into the root's `$defs` followed.
fn resolved<'a>(schema: &'a Value, root: &'a Value, depth: usize) -> Option<&'a Value> {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) if depth < MAX_DEPTH => {
            let target = root.pointer(reference.strip_prefix('#')?)?;
            resolved(target, root, depth + 1)
        }
        Some(_) => None,
        None => Some(schema),
    }
}

/// The values a schema allows when it lists them (`enum`, `const`, or a
/// choice of those), as JSON text, without `null` (whether an argument may
/// be left out or null is `required`'s business).
fn values(schema: &Value, root: &Value, depth: usize) -> Option<BTreeSet<String>> {
    let schema = resolved(schema, root, depth)?;
    if let Some(value) = schema.get("const") {
        return Some(without_null(std::slice::from_ref(value)));
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return Some(without_null(values));
    }
    let branches = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key)?.as_array())?;
    let mut all = BTreeSet::new();
    for branch in branches {
        if is_null(branch) {
            continue;
        }
        all.extend(values(branch, root, depth + 1)?);
    }
    Some(all)
}

fn without_null(values: &[Value]) -> BTreeSet<String> {
    values
        .iter()
        .filter(|value| !value.is_null())
        .map(Value::to_string)
        .collect()
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

/// The JSON types a schema names, without `null`; `None` when it does not
/// say (any type, or a shape this comparison leaves to validation).
fn types(schema: &Value, root: &Value, depth: usize) -> Option<BTreeSet<String>> {
    let schema = resolved(schema, root, depth)?;
    match schema.get("type") {
        Some(Value::String(kind)) => Some(BTreeSet::from([kind.clone()])),
        Some(Value::Array(kinds)) => Some(
            kinds
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        ),
        Some(_) => None,
        None => {
            let branches = ["oneOf", "anyOf"]
                .iter()
                .find_map(|key| schema.get(*key)?.as_array())?;
            let mut all = BTreeSet::new();
            for branch in branches {
                all.extend(types(branch, root, depth + 1)?);
            }
            Some(all)
        }
    }
    .map(|mut kinds| {
        kinds.remove("null");
        kinds
    })
    .filter(|kinds| !kinds.is_empty())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(file: Value, rust: Value) -> Option<String> {
        conflict(&file, &rust, "x.json", "")
    }

    fn with_mode(mode: Value) -> Value {
        json!({"type": "object", "properties": {"mode": mode}})
    }

    fn rust_mode(variants: Value) -> Value {
        json!({
            "type": "object",
            "properties": {"mode": {"$ref": "#/$defs/Mode"}},
            "$defs": {"Mode": {"type": "string", "enum": variants}}
        })
    }

    #[test]
    fn the_same_values_in_any_order_agree() {
        let file = with_mode(json!({"type": "string", "enum": ["slow", "fast"]}));
        assert_eq!(check(file, rust_mode(json!(["fast", "slow"]))), None);
    }

    #[test]
    fn a_value_the_type_cannot_read_is_named() {
        let file = with_mode(json!({"enum": ["fast", "slow", "auto"]}));
        let problem = check(file, rust_mode(json!(["fast", "slow"]))).unwrap();
        assert!(
            problem.contains("`mode` in `x.json` (`/properties/mode`)"),
            "{problem}"
        );
        assert!(
            problem.contains("allows \"auto\", which `Mode` cannot read"),
            "{problem}"
        );
    }

    #[test]
    fn a_variant_the_file_leaves_out_is_named() {
        let file = with_mode(json!({"enum": ["fast"]}));
        let problem = check(file, rust_mode(json!(["fast", "slow"]))).unwrap();
        assert!(
            problem.contains("does not allow \"slow\", which `Mode` has"),
            "{problem}"
        );
    }

    #[test]
    fn documented_variants_and_optional_enums_are_read_through_their_choices() {
        // schemars writes documented variants as `oneOf` of `const`s, and
        // `Option<Mode>` as `anyOf` of the enum and `null`.
        let rust = json!({
            "type": "object",
            "properties": {"mode": {"anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}]}},
            "$defs": {"Mode": {"oneOf": [
                {"type": "string", "const": "fast", "description": "Quick."},
                {"type": "string", "const": "slow", "description": "Careful."}
            ]}}
        });
        let agreeing = with_mode(json!({"enum": ["fast", "slow"]}));
        assert_eq!(check(agreeing, rust.clone()), None);
        let problem = check(with_mode(json!({"enum": ["fast"]})), rust).unwrap();
        assert!(problem.contains("\"slow\""), "{problem}");
    }

    #[test]
    fn a_free_string_for_an_enum_is_refused() {
        let file = with_mode(json!({"type": "string"}));
        let problem = check(file, rust_mode(json!(["fast", "slow"]))).unwrap();
        assert!(
            problem
                .contains("takes any value of its type, but `Mode` reads only \"fast\", \"slow\""),
            "{problem}"
        );
    }

    #[test]
    fn a_file_that_narrows_a_string_agrees() {
        let file = with_mode(json!({"type": "string", "enum": ["a"]}));
        let rust = with_mode(json!({"type": "string"}));
        assert_eq!(check(file, rust), None);
    }

    #[test]
    fn types_of_types_defined_elsewhere_are_compared() {
        let rust = json!({
            "type": "object",
            "properties": {"count": {"$ref": "#/$defs/Count"}},
            "$defs": {"Count": {"type": "integer", "format": "uint32"}}
        });
        let number = json!({"type": "object", "properties": {"count": {"type": "number"}}});
        let problem = check(number, rust.clone()).unwrap();
        assert!(
            problem.contains("is of type `number`, but `Count` reads `integer`"),
            "{problem}"
        );
        let integer = json!({"type": "object", "properties": {"count": {"type": "integer"}}});
        assert_eq!(check(integer, rust), None);
        // A number field reads an integer property.
        let file = json!({"type": "object", "properties": {"x": {"type": "integer"}}});
        let rust = json!({"type": "object", "properties": {"x": {"type": ["number", "null"]}}});
        assert_eq!(check(file, rust), None);
    }

    #[test]
    fn shapes_it_cannot_compare_are_left_to_validation() {
        let file = with_mode(json!({"allOf": [{"minLength": 1}]}));
        assert!(check(file, rust_mode(json!(["a"]))).is_some());
        let file = json!({"type": "object", "properties": {"v": {"type": "string"}}});
        let rust = json!({"type": "object", "properties": {"v": true}});
        assert_eq!(check(file, rust), None);
        let cyclic = json!({
            "type": "object",
            "properties": {"v": {"$ref": "#/$defs/A"}},
            "$defs": {"A": {"$ref": "#/$defs/A"}}
        });
        assert_eq!(check(cyclic.clone(), cyclic), None);
    }

    #[test]
    fn names_compare_as_sets_when_the_crate_builds() {
        assert!(same_names(&["a", "b"], &["b", "a"]));
        assert!(!same_names(&["a", "b"], &["a"]));
        assert!(!same_names(&["a"], &["a", "ab"]));
        assert!(same_names(&[], &[]));
    }
}

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

/// Whether an enum whose variants are `variants` (`None`: not known when
/// the crate builds) reads `value`: for the `const` check of each value of
/// a spec file's `enum` against the enum of its field.
pub const fn reads_value(variants: Option<&[&str]>, value: &str) -> bool {
    let Some(variants) = variants else {
        return true;
    };
    let mut i = 0;
    while i < variants.len() {
        if same_text(variants[i], value) {
            return true;
        }
        i += 1;
    }
    false
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

/// Where `parameters`, the schema at `pointer` in the spec file `shown`
/// (as the tool's spec registers it), and the type `A` that reads the
/// arguments disagree, in a message for the registry's error; `None` when
/// they agree. `fields` are the properties to compare, each with the Rust
/// type that reads it as the code spells it (a field read by a function of
/// its own, `with = ..`, is left out).
pub fn spec_conflict<A: JsonSchema>(
    parameters: &Value,
    pointer: &str,
    shown: &str,
    fields: &[(&str, &str)],
) -> Option<String> {
    conflict(parameters, &super::schema_of::<A>(), shown, pointer, fields)
}

/// See [`spec_conflict`]; `file` and `rust` are the two arguments schemas.
fn conflict(
    file: &Value,
    rust: &Value,
    shown: &str,
    pointer: &str,
    fields: &[(&str, &str)],
) -> Option<String> {
    let file_properties = file.get("properties")?.as_object()?;
    let rust_properties = rust.get("properties")?.as_object()?;
    let mut problems = Vec::new();
    for (name, type_text) in fields {
        // Names and `required` were compared when the crate was built.
        let (Some(in_file), Some(in_rust)) =
            (file_properties.get(*name), rust_properties.get(*name))
        else {
            continue;
        };
        let at = format!(
            "`{name}` in `{shown}` (`{}`)",
            crate::validation::join_pointer(&format!("{pointer}/properties"), name)
        );
        if let Some(problem) = disagreement(in_file, file, in_rust, rust, type_text) {
            problems.push(format!("{at} {problem}"));
        }
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// How one property's schema in the file and in Rust disagree, if they
/// do: the file lets through something the type cannot read. The file may
/// allow less than the type reads (fewer variants, a pattern).
fn disagreement(
    file_schema: &Value,
    file_root: &Value,
    rust_schema: &Value,
    rust_root: &Value,
    type_name: &str,
) -> Option<String> {
    let rust_values = values(rust_schema, rust_root, 0);
    match (values(file_schema, file_root, 0), rust_values) {
        (Listed::Values(file_values), Listed::Values(rust_values)) => {
            let extra = listed(file_values.difference(&rust_values))?;
            let readable = listed(rust_values.iter()).unwrap_or_default();
            Some(format!(
                "allows {extra}, which `{type_name}` cannot read (it reads {readable}): add the variant, or remove the value from the file"
            ))
        }
        (Listed::Any, Listed::Values(rust_values)) => {
            let readable = listed(rust_values.iter()).unwrap_or_default();
            Some(format!(
                "takes any value of its type, but `{type_name}` reads only {readable}: list them in the file's `enum`"
            ))
        }
        (Listed::Any | Listed::Values(_), Listed::Any) => {
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
        // A shape this comparison does not follow: validation decides.
        (Listed::Unknown, _) | (_, Listed::Unknown) => None,
    }
}

/// `values` as `"a", "b"`, or `None` when there are none.
fn listed<'a>(values: impl Iterator<Item = &'a String>) -> Option<String> {
    let values: Vec<&str> = values.map(String::as_str).collect();
    (!values.is_empty()).then(|| values.join(", "))
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

/// What a schema says of the values it allows.
enum Listed {
    /// Exactly these (`enum`, `const`, or a choice of those), as JSON
    /// text, without `null` (whether an argument may be left out or null
    /// is `required`'s business).
    Values(BTreeSet<String>),
    /// Any value of its type: no keyword that narrows the values to a few.
    Any,
    /// Narrowed some other way (`pattern`, `allOf`, `not`, a reference not
    /// followed): not compared.
    Unknown,
}

/// Keywords that leave a schema's values open besides the annotations:
/// they bound sizes but do not name the values.
const OPEN_KEYWORDS: &[&str] = &[
    "type",
    "$comment",
    "format",
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
];

fn values(schema: &Value, root: &Value, depth: usize) -> Listed {
    let Some(schema) = resolved(schema, root, depth) else {
        return Listed::Unknown;
    };
    if let Some(value) = schema.get("const") {
        return Listed::Values(without_null(std::slice::from_ref(value)));
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return Listed::Values(without_null(values));
    }
    let Some(object) = schema.as_object() else {
        // `true`: anything.
        return if schema == &Value::Bool(true) {
            Listed::Any
        } else {
            Listed::Unknown
        };
    };
    if let Some(branches) = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| object.get(*key)?.as_array())
    {
        let mut all = BTreeSet::new();
        for branch in branches.iter().filter(|branch| !is_null(branch)) {
            match values(branch, root, depth + 1) {
                Listed::Values(values) => all.extend(values),
                other => return other,
            }
        }
        return Listed::Values(all);
    }
    if object.keys().all(|key| {
        OPEN_KEYWORDS.contains(&key.as_str())
            || crate::providers::schema::ANNOTATIONS.contains(&key.as_str())
    }) {
        Listed::Any
    } else {
        Listed::Unknown
    }
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
        let fields = [
            ("mode", "Mode"),
            ("count", "Count"),
            ("v", "V"),
            ("x", "f64"),
        ];
        conflict(&file, &rust, "x.json", "", &fields)
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
            problem.contains(
                "allows \"auto\", which `Mode` cannot read (it reads \"fast\", \"slow\")"
            ),
            "{problem}"
        );
    }

    #[test]
    fn a_file_may_offer_fewer_variants_than_the_type_reads() {
        // The model cannot choose `slow`; nothing it sends goes unread
        // (an `other` variant or an alias read more than the schema says).
        let file = with_mode(json!({"enum": ["fast"]}));
        assert_eq!(check(file, rust_mode(json!(["fast", "slow"]))), None);
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
        let agreeing = with_mode(json!({"enum": ["fast", "slow", null]}));
        assert_eq!(check(agreeing, rust.clone()), None);
        let problem = check(with_mode(json!({"enum": ["fast", "quick"]})), rust).unwrap();
        assert!(problem.contains("\"quick\""), "{problem}");
    }

    #[test]
    fn a_free_string_for_an_enum_is_refused() {
        let file = with_mode(json!({"type": "string", "minLength": 1}));
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
    fn shapes_it_cannot_follow_are_left_to_validation() {
        let narrowed = [
            json!({"allOf": [{"$ref": "#/$defs/Mode"}]}),
            json!({"type": "string", "pattern": "^(fast|slow)$"}),
            json!({"not": {"const": "auto"}}),
            json!({"$ref": "#/$defs/Elsewhere"}),
        ];
        for mode in narrowed {
            assert_eq!(
                check(with_mode(mode.clone()), rust_mode(json!(["fast"]))),
                None,
                "{mode}"
            );
        }
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
    fn only_the_fields_the_macro_lists_are_compared() {
        // A field read by a function of its own is not listed.
        let file = with_mode(json!({"type": "string"}));
        let rust = rust_mode(json!(["fast"]));
        assert_eq!(conflict(&file, &rust, "x.json", "", &[]), None);
    }

    #[test]
    fn a_value_is_read_when_a_variant_has_its_name() {
        assert!(reads_value(Some(&["a", "bc"]), "bc"));
        assert!(!reads_value(Some(&["a", "bc"]), "b"));
        assert!(!reads_value(Some(&[]), "a"));
        assert!(reads_value(None, "anything"));
    }
}

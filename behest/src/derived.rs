//! Schemas derived from Rust types, as behest gives them: schemars' draft
//! 2020-12 schema, without the root `title`, with the range of every
//! fixed-size integer spelled out. Generated code reaches them through
//! `__private`; the run's typed answers and agents' typed inputs use them
//! too.

use schemars::JsonSchema;
use serde_json::Value;

/// The draft 2020-12 schema of `T`, without the root `title`, with the
/// range of every fixed-size integer spelled out.
#[inline(always)]
pub fn schema_of<T: JsonSchema>() -> Value {
    finish_schema(root_schema::<T>())
}

/// What schemars generates for `T`, as it is.
#[inline(always)]
pub(crate) fn root_schema<T: JsonSchema>() -> Value {
    schemars::generate::SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
        .into()
}

/// What `into_root_schema_for` gives for the type named `name` whose
/// schema is `json_schema`, key order included: the schema, its `title`
/// if it has none, `$schema`, then the definitions it uses under `$defs`
/// (the draft 2020-12 settings have no transforms). schemars writes a
/// reference back to the root as `"#"`; without the root's id in hand,
/// the generator files the root among the definitions instead, and that
/// entry is taken out and its references pointed at the root. Another type
/// of the same name (a user's `SearchArgs` beside the generated one) is a
/// definition of its own, with another schema, and stays.
pub(crate) fn root_schema_with(
    name: &str,
    json_schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
) -> Value {
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let mut schema = json_schema(&mut generator);
    let meta_schema = generator.settings().meta_schema.clone();
    let mut definitions = generator.take_definitions(false);
    let refers_back = definitions.get(name) == Some(schema.as_value());
    let object = schema.ensure_object();
    object
        .entry("title")
        .or_insert_with(|| Value::String(name.to_owned()));
    if let Some(meta_schema) = meta_schema {
        object.insert(
            "$schema".to_owned(),
            Value::String(meta_schema.into_owned()),
        );
    }
    if refers_back {
        // `retain` keeps the others' order, as `remove` might not.
        definitions.retain(|key, _| key != name);
    }
    if !definitions.is_empty() {
        let defs = object
            .entry("$defs")
            .or_insert_with(|| Value::Object(serde_json::Map::new()));
        if let Value::Object(defs) = defs {
            defs.append(&mut definitions);
        }
    }
    let mut schema = Value::from(schema);
    if refers_back {
        point_at_root(&mut schema, &format!("#/$defs/{name}"));
    }
    schema
}

/// Every `$ref` to `target` in `schema` made a reference to the root.
fn point_at_root(schema: &mut Value, target: &str) {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                if object.get("$ref").and_then(Value::as_str) == Some(target) {
                    object.insert("$ref".to_owned(), Value::String("#".to_owned()));
                }
                stack.extend(object.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

/// `schema` as behest gives it: no root `title` (it only names the Rust
/// type), every fixed-size integer's range spelled out.
pub(crate) fn finish_schema(mut schema: Value) -> Value {
    if let Value::Object(root) = &mut schema {
        root.remove("title");
    }
    bound_integers(&mut schema);
    schema
}

/// Adds the `minimum`/`maximum` of the Rust integer type named by
/// `format` where schemars leaves them out (it does for 32- and 64-bit
/// types), so that every number the schema accepts also deserializes.
fn bound_integers(schema: &mut Value) {
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                let range = object
                    .get("format")
                    .and_then(Value::as_str)
                    .and_then(integer_range);
                if let Some((min, max)) = range {
                    object.entry("minimum").or_insert(min);
                    object.entry("maximum").or_insert(max);
                }
                stack.extend(object.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

fn integer_range(format: &str) -> Option<(Value, Value)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "int64" | "int" => (i64::MIN.into(), i64::MAX.into()),
        "uint8" => (0.into(), u8::MAX.into()),
        "uint16" => (0.into(), u16::MAX.into()),
        "uint32" => (0.into(), u32::MAX.into()),
        "uint64" | "uint" => (0.into(), u64::MAX.into()),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use schemars::JsonSchema;

    use super::{root_schema, root_schema_with};

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Place {
        city: String,
        unit: Option<Unit>,
    }

    /// A type that refers to itself, below the root.
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Arguments {
        count: i64,
        places: Vec<Place>,
        first: Place,
        unit: Unit,
        tree: Option<Tree>,
        tags: Option<Vec<String>>,
    }

    /// The root schema refers back to itself.
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Batch {
        steps: Vec<Batch>,
        first: Option<Box<Batch>>,
        place: Place,
        tree: Tree,
    }

    /// The root schema built without generics is schemars' own, to the
    /// text (with serde_json's `preserve_order`, to the key order).
    fn same<T: JsonSchema>() {
        let expected = root_schema::<T>();
        let got = root_schema_with(&T::schema_name(), T::json_schema);
        assert_eq!(got, expected);
        assert_eq!(got.to_string(), expected.to_string());
    }

    #[test]
    fn a_root_schema_without_generics_is_schemars_own() {
        same::<Arguments>();
        same::<Place>();
        same::<Unit>();
        same::<Option<Vec<Place>>>();
        same::<Batch>();
        same::<Tree>();
        let batch = root_schema::<Batch>();
        assert_eq!(batch["properties"]["steps"]["items"]["$ref"], "#");
        assert!(batch["$defs"].get("Batch").is_none());
        assert!(root_schema::<Arguments>()["$defs"]["Tree"].is_object());
    }
}

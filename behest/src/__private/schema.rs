//! `JsonSchema` for generated arguments structs: one object builder, where
//! a derive would expand the same steps per tool. The schema is the one
//! `schemars_derive` makes for the struct: each field's subschema with its
//! doc as title/description, `required` for the fields a missing value does
//! not fill, `additionalProperties: false` when unknown fields are refused.

use schemars::{json_schema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde_json::Value;

use super::de::missing;
use super::{ArgumentDeserialize, ArgumentSchema};

/// One field of a generated arguments struct.
pub struct Property {
    name: &'static str,
    doc: &'static str,
    schema: fn(&mut SchemaGenerator) -> Schema,
    optional: fn() -> bool,
}

/// The field for argument `name` of type `T`; `doc` is its doc comment.
/// (A defaulted argument is an `Option<T>` field shown, as by the derive's
/// `#[schemars(with = "T")]`, as a required `T`; the spec then makes it
/// optional and shows its default.) Its bounds are where an argument type
/// that cannot be read or described is reported, with the fix.
pub fn property<T>(name: &'static str, doc: &'static str) -> Property
where
    T: ArgumentSchema + ArgumentDeserialize,
{
    Property {
        name,
        doc,
        schema: T::subschema,
        optional: reads_missing::<T>,
    }
}

/// Whether a field of type `F` that is not sent reads as a value (`None`),
/// exactly as the generated `Deserialize` decides it.
fn reads_missing<F: for<'de> Deserialize<'de>>() -> bool {
    missing::<F, serde::de::value::Error>("").is_ok()
}

/// The schema of an object with `properties`, in order.
pub fn object(
    generator: &mut SchemaGenerator,
    properties: &[Property],
    deny_unknown: bool,
) -> Schema {
    let mut schema = json_schema!({"type": "object"});
    if deny_unknown {
        schema.insert("additionalProperties".to_owned(), Value::Bool(false));
    }
    let deserializing = generator.contract().is_deserialize();
    let mut fields = serde_json::Map::new();
    let mut required = Vec::new();
    for property in properties {
        let mut subschema = (property.schema)(generator);
        let (title, description) = title_and_description(property.doc);
        for (key, text) in [("title", title), ("description", description)] {
            if !text.is_empty() {
                subschema.insert(key.to_owned(), Value::from(text));
            }
        }
        fields.insert(property.name.to_owned(), subschema.into());
        if !(deserializing && (property.optional)()) {
            required.push(Value::from(property.name));
        }
    }
    if !properties.is_empty() {
        schema.insert("properties".to_owned(), Value::Object(fields));
    }
    if !required.is_empty() {
        schema.insert("required".to_owned(), Value::Array(required));
    }
    schema
}

/// A doc comment as schemars reads it: a first line starting with `#` is
/// the title, the rest the description.
fn title_and_description(doc: &str) -> (&str, &str) {
    let doc = doc.strip_prefix(' ').unwrap_or(doc).trim_ascii();
    match doc.strip_prefix('#') {
        Some(_) => {
            let (first, rest) = doc.split_once('\n').unwrap_or((doc, ""));
            (
                first.trim_start_matches('#').trim_ascii(),
                rest.trim_ascii(),
            )
        }
        None => ("", doc),
    }
}

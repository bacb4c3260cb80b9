//! Support for the code `#[tool]` and `#[external_tool]` generate. Not public
//! API: only generated code names these items, through `::behest::__private`.

pub use ::core;
pub use ::schemars;
pub use ::serde;
pub use ::serde_json;
pub use ::std::borrow::Cow;
pub use ::std::string::String;
pub use ::std::sync::{Arc, OnceLock};
pub use ::std::time::Duration;
pub use ::std::vec::Vec;

use schemars::JsonSchema;
use serde_json::Value;
use std::any::TypeId;
use std::collections::BTreeMap;
use std::sync::{PoisonError, RwLock};

use crate::tool::{ToolAnnotations, ToolSpec};

pub mod de;
pub mod dispatch;
pub mod field_checks;
pub mod plain;
pub mod schema;
mod spec_check;
mod typed;

pub use spec_check::{reads_value, spec_conflict, NoWireVariants};
pub use typed::{finish_async, finish_deferred, finish_sync, TypedTool};

/// The parts of a spec the macro knows from the tokens.
pub struct SpecParts {
    pub name: &'static str,
    pub description: &'static str,
    pub title: Option<&'static str>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub allow_unknown_arguments: bool,
    pub strict: bool,
    pub needs_approval: bool,
    pub timeout: Option<Duration>,
}

/// The value of a `schema!` literal, checked when the crate was built.
pub fn json_literal(text: &str) -> Value {
    serde_json::from_str(text).expect("`schema!` checked the JSON when the crate was built")
}

impl SpecParts {
    /// No name or description, no hints, unknown arguments refused: what
    /// the generated code starts from.
    pub const DEFAULT: Self = Self {
        name: "",
        description: "",
        title: None,
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
        allow_unknown_arguments: false,
        strict: false,
        needs_approval: false,
        timeout: None,
    };

    /// The spec, with the parameters schema of `A`, where the properties
    /// named in `defaults` are optional and show their default.
    #[inline(always)]
    pub fn build<A: JsonSchema>(
        &self,
        output_schema: Option<Value>,
        defaults: &[(&str, Value)],
    ) -> ToolSpec {
        self.build_from(root_schema::<A>(), output_schema, defaults)
    }

    /// [`build`](Self::build) for a `#[tool]`, from the name and the
    /// `json_schema` of its arguments struct: nothing here is generic, so
    /// no tool compiles a copy of schemars' root-schema code.
    pub fn build_with(
        &self,
        name: &str,
        json_schema: fn(&mut schemars::SchemaGenerator) -> schemars::Schema,
        output_schema: Option<Value>,
        defaults: &[(&str, Value)],
    ) -> ToolSpec {
        self.build_from(root_schema_with(name, json_schema), output_schema, defaults)
    }

    /// [`build`](Self::build) after the one generic step: most of the work
    /// is compiled once here, not once per tool.
    fn build_from(
        &self,
        parameters: Value,
        output_schema: Option<Value>,
        defaults: &[(&str, Value)],
    ) -> ToolSpec {
        let mut parameters =
            finish_parameters(finish_schema(parameters), self.allow_unknown_arguments);
        apply_defaults(&mut parameters, defaults);
        self.with_parameters(parameters, output_schema)
    }

    /// The spec with the schema a spec file gives (`schema = ".."`), as
    /// the file says it: `text` is the file, the schema at `pointer`.
    pub fn build_from_file(
        &self,
        text: &str,
        pointer: &str,
        output_schema: Option<Value>,
    ) -> ToolSpec {
        let file: Value =
            serde_json::from_str(text).expect("the spec file was checked when the crate was built");
        let parameters = file.pointer(pointer).cloned().unwrap_or(file);
        self.with_parameters(parameters, output_schema)
    }

    fn with_parameters(&self, parameters: Value, output_schema: Option<Value>) -> ToolSpec {
        ToolSpec {
            name: self.name.to_owned(),
            description: self.description.trim().to_owned(),
            parameters,
            output_schema,
            annotations: ToolAnnotations {
                title: self.title.map(str::to_owned),
                read_only_hint: self.read_only,
                destructive_hint: self.destructive,
                idempotent_hint: self.idempotent,
                open_world_hint: self.open_world,
            },
        }
    }
}

/// Marks each named property optional and records its default.
fn apply_defaults(schema: &mut Value, defaults: &[(&str, Value)]) {
    for (name, value) in defaults {
        if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|entry| entry != name);
        }
        if let Some(Value::Object(property)) = schema.pointer_mut(&format!("/properties/{name}")) {
            property.insert("default".to_owned(), value.clone());
        }
    }
    if schema
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(Vec::is_empty)
    {
        if let Value::Object(root) = schema {
            root.remove("required");
        }
    }
}

/// A parameter's default as JSON, for the schema.
pub fn default_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The draft 2020-12 schema of an arguments type, without the root `title`
/// and `description` that only name the Rust type, refusing properties it
/// does not declare unless `allow_unknown` is set.
pub fn parameters_schema<A: JsonSchema>(allow_unknown: bool) -> Value {
    finish_parameters(schema_of::<A>(), allow_unknown)
}

fn finish_parameters(mut schema: Value, allow_unknown: bool) -> Value {
    if let Value::Object(root) = &mut schema {
        root.remove("description");
        if !allow_unknown && !root.contains_key("additionalProperties") {
            root.insert("additionalProperties".to_owned(), Value::Bool(false));
        }
    }
    schema
}

/// The draft 2020-12 schema of `T`, without the root `title`, with the
/// range of every fixed-size integer spelled out.
#[inline(always)]
pub fn schema_of<T: JsonSchema>() -> Value {
    finish_schema(root_schema::<T>())
}

/// What schemars generates for `T`, as it is.
#[inline(always)]
fn root_schema<T: JsonSchema>() -> Value {
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
fn root_schema_with(
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

/// What a `#[tool]` tells the registry about itself: its spec, and
/// whether the runtime's text route may read its arguments.
#[derive(Debug)]
pub struct Described {
    /// The spec.
    pub spec: ToolSpec,
    /// `Some` when the tool's options leave its types' parse, with the
    /// checks of the arguments that are not [`Plain`](plain::Plain),
    /// accepting exactly what its schema accepts.
    pub plain: Option<crate::tool::PlainArguments>,
}

impl Described {
    /// The spec and, for `fields` (the arguments' wire names and, for each
    /// plain type, what it is: `None` where the options rule out the typed
    /// routes), the typed routes ([`plain::route`]).
    pub fn new(
        spec: ToolSpec,
        fields: Option<&[(&'static str, Option<plain::PlainField>)]>,
    ) -> Self {
        let plain = fields.and_then(|fields| plain::route(&spec.parameters, fields));
        Self { spec, plain }
    }
}

/// The one [`Described`] of a `#[tool]`, by the tool's type: built by
/// `build` on first use and kept for the life of the process. One map,
/// compiled here: a `static` in each tool would be an item of its own,
/// evaluated in every rebuild of the crate that defines the tools, and with
/// many tools that shows.
///
/// `build` runs without the lock held, so that building one tool's spec
/// may ask for another's; if two threads build the same one at once, the
/// first stored is the one every caller gets.
pub fn described(tool: TypeId, build: &dyn Fn() -> Described) -> &'static Described {
    static KNOWN: RwLock<BTreeMap<TypeId, &'static Described>> = RwLock::new(BTreeMap::new());
    if let Some(&known) = KNOWN
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&tool)
    {
        return known;
    }
    let built = build();
    let mut known = KNOWN.write().unwrap_or_else(PoisonError::into_inner);
    // One leak per tool type, as a `static` of the tool would hold it.
    known
        .entry(tool)
        .or_insert_with(|| Box::leak(Box::new(built)))
}

fn finish_schema(mut schema: Value) -> Value {
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

/// The compiled validator of a spec's parameters, for `#[external_tool]`.
pub fn compile_validator(spec: &ToolSpec) -> crate::validation::ArgumentValidator {
    match crate::validation::ArgumentValidator::compile(&spec.parameters) {
        Ok(validator) => validator,
        // schemars emits valid 2020-12; a failure here is a bug worth a loud stop.
        Err(error) => panic!(
            "behest: the generated schema of `{}` is invalid: {error}",
            spec.name
        ),
    }
}

/// Compile-time check of an argument type; its message names the fix.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it does not implement `schemars::JsonSchema` (version 1)",
    label = "no JSON Schema for this type",
    note = "derive it: `#[behest::data(input)]` on the type, or `#[derive(serde::Deserialize, schemars::JsonSchema)]` (schemars 1.x); or use a type that has one"
)]
pub trait ArgumentSchema {
    /// The schema of the argument, as a property of the arguments object.
    fn subschema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema;
}
impl<T: JsonSchema> ArgumentSchema for T {
    fn subschema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        generator.subschema_for::<T>()
    }
}

/// Compile-time check of an argument type; its message names the fix.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool argument: it does not implement `serde::Deserialize`",
    label = "the model's JSON cannot be read into this type",
    note = "derive it: `#[behest::data(input)]` on the type, or `#[derive(serde::Deserialize, schemars::JsonSchema)]`; or use a type that has one"
)]
pub trait ArgumentDeserialize: serde::de::DeserializeOwned {}
impl<T: serde::de::DeserializeOwned> ArgumentDeserialize for T {}

/// Asserts that `T` can describe a tool argument.
pub const fn assert_argument_schema<T: ArgumentSchema>() {}

/// Asserts that the model's JSON can be read into `T`.
pub const fn assert_argument_deserialize<T: ArgumentDeserialize>() {}

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

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

pub use crate::derived::schema_of;
use crate::derived::{finish_schema, root_schema, root_schema_with};
use crate::tool::{ToolAnnotations, ToolSpec};

pub mod de;
pub mod dispatch;
#[cfg(feature = "mcp")]
pub mod mcp;
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

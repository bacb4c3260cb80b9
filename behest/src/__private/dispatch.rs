//! Compile-time dispatch on types for generated code, by "autoref
//! specialization": a method call on `&&&Probe<T>` (or `&&Probe<T>`,
//! `&Probe<T>`) picks the first level whose bounds `T` meets. One probe
//! type carries every ladder:
//!
//! - output: `String` is text, any other `Serialize` type structured JSON,
//!   anything else a compile error on the return type;
//! - errors: a `ToolError` stays, a `std::error::Error` keeps its source,
//!   anything `Display` becomes its message;
//! - `Result` or not: split a return value into success and error;
//! - plain arguments: read straight into their types on the typed routes;
//! - readable arguments: `Deserialize` of the arguments struct, or a stub
//!   that keeps a missing `Deserialize` to one compile error.

use std::convert::Infallible;
use std::fmt::Display;

use std::marker::PhantomData;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::de::{Deserializer, Error as _};
use serde_json::Value;

use super::de::Fields;
use super::plain::{Plain, PlainField};
use super::schema_of;
use crate::tool::IntoToolOutput;
use crate::tool::{ToolError, ToolOutput, ToolResult};

/// Carries a type for dispatch; holds no value.
pub struct Probe<T>(PhantomData<fn() -> T>);

impl<T> Probe<T> {
    /// A probe of `T`.
    #[inline(always)]
    pub fn new() -> Self {
        Self(PhantomData)
    }
    /// A probe of the type of `value`.
    #[inline(always)]
    pub fn of(_value: &T) -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Probe<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Splits `Result<T, E>` into its parts.
pub struct ResultSplit<T, E>(PhantomData<fn() -> (T, E)>);
/// Treats any other value as a success.
pub struct ValueSplit<V>(PhantomData<fn() -> V>);

pub trait SplitResult<T, E> {
    #[inline(always)]
    fn __behest_split(&self) -> ResultSplit<T, E> {
        ResultSplit(PhantomData)
    }
}
impl<T, E> SplitResult<T, E> for &Probe<Result<T, E>> {}

pub trait SplitValue<V> {
    #[inline(always)]
    fn __behest_split(&self) -> ValueSplit<V> {
        ValueSplit(PhantomData)
    }
}
impl<V> SplitValue<V> for Probe<V> {}

impl<T, E> ResultSplit<T, E> {
    #[inline(always)]
    pub fn ok(&self) -> Probe<T> {
        Probe::new()
    }
    #[inline(always)]
    pub fn err(&self) -> Probe<E> {
        Probe::new()
    }
    #[inline(always)]
    pub fn split(self, value: Result<T, E>) -> Result<T, E> {
        value
    }
}

impl<V> ValueSplit<V> {
    #[inline(always)]
    pub fn ok(&self) -> Probe<V> {
        Probe::new()
    }
    #[inline(always)]
    pub fn err(&self) -> Probe<Infallible> {
        Probe::new()
    }
    #[inline(always)]
    pub fn split(self, value: V) -> Result<V, Infallible> {
        Ok(value)
    }
}

/// Level 0: types that are output as they are.
pub struct Native;
/// Level 1: `Serialize` types, output as structured JSON.
pub struct Json;
/// Level 2: anything else, refused at compile time.
pub struct Unsupported;

pub trait NativeOutput {
    #[inline(always)]
    fn __behest_output(&self) -> Native {
        Native
    }
    fn __behest_output_schema(&self) -> Option<Value> {
        None
    }
}
impl<T: IntoToolOutput> NativeOutput for &&Probe<T> {}

pub trait JsonOutput<T> {
    #[inline(always)]
    fn __behest_output(&self) -> Json {
        Json
    }
}
impl<T: serde::Serialize> JsonOutput<T> for &Probe<T> {}

pub trait UnsupportedOutput {
    #[inline(always)]
    fn __behest_output(&self) -> Unsupported {
        Unsupported
    }
}
impl<T> UnsupportedOutput for Probe<T> {}

/// Output schemas, by the same levels: native output has none,
/// `Serialize + JsonSchema` output has its schema.
pub trait JsonOutputSchema {
    fn __behest_output_schema(&self) -> Option<Value>;
}
impl<T: serde::Serialize + JsonSchema> JsonOutputSchema for &Probe<T> {
    fn __behest_output_schema(&self) -> Option<Value> {
        Some(schema_of::<T>())
    }
}
pub trait NoOutputSchema {
    fn __behest_output_schema(&self) -> Option<Value> {
        None
    }
}
impl<T> NoOutputSchema for Probe<T> {}

impl Native {
    #[inline(always)]
    pub fn convert<T: IntoToolOutput>(self, value: T) -> ToolResult<ToolOutput> {
        value.into_tool_output()
    }
}

impl Json {
    #[inline(always)]
    pub fn convert<T: serde::Serialize>(self, value: T) -> ToolResult<ToolOutput> {
        serde_json::to_value(value)
            .map(ToolOutput::json)
            .map_err(|error| ToolError::Execution {
                message: "the tool's result could not be serialized".to_owned(),
                source: Some(Arc::new(error)),
            })
    }
}

impl Unsupported {
    #[inline(always)]
    pub fn convert<T: IntoToolOutput>(self, value: T) -> ToolResult<ToolOutput> {
        value.into_tool_output()
    }
}

/// Every dispatch trait, for one glob import in generated code.
pub mod prelude {
    pub use super::{
        CannotReadFields as _, DisplayErrorKind as _, IsPlain as _, JsonOutput as _,
        JsonOutputSchema as _, NativeOutput as _, NoOutputSchema as _, NotPlain as _,
        ReadFields as _, SplitResult as _, SplitValue as _, StdErrorKind as _, ToolErrorKind as _,
        UnsupportedOutput as _,
    };
}

/// Errors: a `ToolError` stays as it is, a `std::error::Error` keeps its
/// source, anything `Display` becomes its message.
pub struct KeepToolError;
pub struct FromStdError;
pub struct FromDisplay;

pub trait ToolErrorKind {
    #[inline(always)]
    fn __behest_error(&self) -> KeepToolError {
        KeepToolError
    }
}
impl ToolErrorKind for &&Probe<ToolError> {}

pub trait StdErrorKind {
    #[inline(always)]
    fn __behest_error(&self) -> FromStdError {
        FromStdError
    }
}
impl<E: std::error::Error + Send + Sync + 'static> StdErrorKind for &Probe<E> {}

pub trait DisplayErrorKind {
    #[inline(always)]
    fn __behest_error(&self) -> FromDisplay {
        FromDisplay
    }
}
impl<E> DisplayErrorKind for Probe<E> {}

impl KeepToolError {
    #[inline(always)]
    pub fn convert(self, error: ToolError) -> ToolError {
        error
    }
}

impl FromStdError {
    #[inline(always)]
    pub fn convert<E: std::error::Error + Send + Sync + 'static>(self, error: E) -> ToolError {
        ToolError::from_error(error)
    }
}

impl FromDisplay {
    #[inline(always)]
    pub fn convert<E: Display>(self, error: E) -> ToolError {
        ToolError::execution(error.to_string())
    }
}

/// An argument type is plain: it reads straight into its type on the
/// typed routes.
pub trait IsPlain {
    /// Its nesting, and whether it holds floats.
    fn __behest_plain(&self) -> Option<PlainField>;
}
impl<T: Plain> IsPlain for Probe<T> {
    #[inline(always)]
    fn __behest_plain(&self) -> Option<PlainField> {
        Some(PlainField {
            depth: T::DEPTH,
            floats: T::FLOATS,
        })
    }
}

/// An argument type is not plain: its value is checked against its
/// property's schema as it is read.
pub trait NotPlain {
    /// Not plain.
    #[inline(always)]
    fn __behest_plain(&self) -> Option<PlainField> {
        None
    }
}
impl<T> NotPlain for &Probe<T> {}

/// The argument types all read from JSON: [`fields`](super::de::fields).
pub trait ReadFields<F> {
    /// Reads the struct, as [`fields`](super::de::fields).
    fn __behest_fields<'de, D: Deserializer<'de>>(
        &self,
        deserializer: D,
        name: &'static str,
        names: &'static [&'static str],
        deny_unknown: bool,
    ) -> Result<F, D::Error>;
}

impl<F: for<'de> Fields<'de>> ReadFields<F> for Probe<F> {
    #[inline(always)]
    fn __behest_fields<'de, D: Deserializer<'de>>(
        &self,
        deserializer: D,
        name: &'static str,
        names: &'static [&'static str],
        deny_unknown: bool,
    ) -> Result<F, D::Error> {
        super::de::fields(deserializer, name, names, deny_unknown)
    }
}

/// Some argument type does not implement `Deserialize`: the compile error
/// on that type already says so, and this keeps it the only one (the
/// generated `Deserialize` still compiles, and never runs).
pub trait CannotReadFields<F> {
    /// Never runs in a crate that builds.
    fn __behest_fields<'de, D: Deserializer<'de>>(
        &self,
        deserializer: D,
        name: &'static str,
        names: &'static [&'static str],
        deny_unknown: bool,
    ) -> Result<F, D::Error>;
}

impl<F> CannotReadFields<F> for &Probe<F> {
    fn __behest_fields<'de, D: Deserializer<'de>>(
        &self,
        deserializer: D,
        name: &'static str,
        _names: &'static [&'static str],
        _deny_unknown: bool,
    ) -> Result<F, D::Error> {
        drop(deserializer);
        Err(D::Error::custom(format_args!(
            "an argument of {name} does not implement Deserialize"
        )))
    }
}

//! Which argument types the typed routes read straight into the type: those
//! whose `Deserialize` from JSON accepts exactly the values their schema
//! accepts, nothing constrained beyond the JSON type and the range of an
//! integer (which `bound_integers` writes into the schema).
//!
//! Generated code asks through `dispatch`, one argument type at a time:
//! `(&Probe::<A>::new()).__behest_plain()`. A tool whose argument types
//! are not all plain still takes the typed routes, each argument of
//! another type checked against its property's schema as it is read
//! ([`route`], `field_checks`).

use crate::arguments::FieldChecks;
use crate::tool::ArgumentChecks;

/// An argument type read straight into its type on the typed routes.
pub trait Plain {
    /// How many levels of arrays a value of the type nests.
    const DEPTH: usize;
    /// Whether a value of the type holds floating-point numbers, which
    /// read a negative zero differently on the two routes (no default: a
    /// new impl must say).
    const FLOATS: bool;
}

macro_rules! plain {
    ($($ty:ty),*) => {
        $(impl Plain for $ty {
            const DEPTH: usize = 0;
            const FLOATS: bool = false;
        })*
    };
}
plain!(bool, i8, i16, i32, i64, isize, u8, u16, u32, u64, usize, String);
impl Plain for f32 {
    const DEPTH: usize = 0;
    const FLOATS: bool = true;
}
impl Plain for f64 {
    const DEPTH: usize = 0;
    const FLOATS: bool = true;
}
impl<T: Plain> Plain for Option<T> {
    const DEPTH: usize = T::DEPTH;
    const FLOATS: bool = T::FLOATS;
}
impl<T: Plain> Plain for Vec<T> {
    const DEPTH: usize = 1 + T::DEPTH;
    const FLOATS: bool = T::FLOATS;
}

pub use crate::tool::PlainArguments;

/// What the typed routes know of one argument of a plain type.
#[derive(Debug, Clone, Copy)]
pub struct PlainField {
    /// [`Plain::DEPTH`].
    pub depth: usize,
    /// [`Plain::FLOATS`].
    pub floats: bool,
}

/// The typed routes of a tool whose arguments are `fields` (each one's
/// wire name, and `Some` for a plain type), in its arguments schema
/// `parameters`: how deep its plain arguments nest, whether they hold
/// floats, and the checks of the others against their properties' schemas
/// (`FieldChecks`). `None` when the schema says more than those checks
/// can hold.
pub fn route(
    parameters: &serde_json::Value,
    fields: &[(&'static str, Option<PlainField>)],
) -> Option<PlainArguments> {
    let plain = fields.iter().filter_map(|(_, plain)| *plain);
    // The arguments object itself is level 1.
    let depth = 1 + plain.clone().map(|field| field.depth).max().unwrap_or(0);
    let floats = plain.clone().any(|field| field.floats);
    let checked: Vec<&'static str> = fields
        .iter()
        .filter(|(_, plain)| plain.is_none())
        .map(|(name, _)| *name)
        .collect();
    let checks = if checked.is_empty() {
        None
    } else {
        Some(ArgumentChecks::new(FieldChecks::new(parameters, &checked)?))
    };
    Some(PlainArguments {
        depth,
        floats,
        checks,
    })
}

/// The names of the arguments `checks` holds to their schemas, in order
/// (for tests of the typed routes).
pub fn checked_names(checks: &ArgumentChecks) -> Vec<&'static str> {
    checks
        .get::<FieldChecks>()
        .map(|checks| checks.names().collect())
        .unwrap_or_default()
}

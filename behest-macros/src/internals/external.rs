//! The checked model of an `#[external_tool]` struct: a struct with named,
//! owned fields, its header, and its fields checked against its spec file.

use syn::{Fields, Item, ItemStruct};

use crate::internals::case::{to_snake, unraw};
use crate::internals::ctxt::Ctxt;
use crate::internals::header::{Header, Kind};
use crate::internals::options::Options;
use crate::internals::valid;

/// An `#[external_tool]` struct and its header.
pub struct ExternalStruct {
    /// The struct as written.
    pub item: ItemStruct,
    /// Its tool's name, description and spec file.
    pub header: Header,
}

/// Reads `item` as an `#[external_tool]` struct, every problem going to
/// `cx`; an item that is no struct comes back as it is, to be emitted
/// beside its error.
pub fn analyse(item: Item, options: &Options, cx: &mut Ctxt) -> Result<ExternalStruct, Box<Item>> {
    let item = match item {
        Item::Struct(item) => item,
        Item::Enum(item) => {
            refuse(cx, &item.enum_token, "an enum");
            return Err(Box::new(Item::Enum(item)));
        }
        Item::Union(item) => {
            refuse(cx, &item.union_token, "a union");
            return Err(Box::new(Item::Union(item)));
        }
        other => {
            refuse(cx, &valid::first_token(&other), "this item");
            return Err(Box::new(other));
        }
    };
    match &item.fields {
        Fields::Named(_) => {}
        Fields::Unnamed(fields) => {
            cx.error_spanned_by(fields, "`#[external_tool]` needs named fields: a tuple struct's fields have no names to become the arguments' names; write `struct S { name: Type }`");
        }
        Fields::Unit => {
            cx.error_spanned_by(&item.ident, "`#[external_tool]` needs named fields, the arguments of the tool: write `struct S { name: Type }` (`struct S {}` for a tool without arguments)");
        }
    }
    let generic = !item.generics.params.is_empty();
    if generic {
        let lifetimes = item.generics.lifetimes().next().is_some();
        let why = if lifetimes {
            "an `#[external_tool]` struct cannot borrow: its arguments are parsed from the model's JSON into owned values; drop the lifetime and use owned types (`String`, `Vec<T>`)"
        } else {
            "an `#[external_tool]` struct cannot be generic: the tool needs one concrete JSON Schema"
        };
        cx.error_spanned_by(&item.generics, why);
    }
    let mut header = Header::resolve(
        options,
        &item.attrs,
        &item.ident,
        to_snake(&unraw(&item.ident)),
        Kind::ExternalTool,
        cx,
    );
    if let Some(file) = &mut header.spec_file {
        file.check_fields(&item, cx);
    }
    // The fields of a generic struct borrow or use its parameters: the one
    // error above already says what to change.
    if let (Fields::Named(fields), false) = (&item.fields, generic) {
        for field in &fields.named {
            valid::check_argument_type(&field.ty, cx);
        }
    }
    Ok(ExternalStruct { item, header })
}

fn refuse(cx: &mut Ctxt, token: &dyn quote::ToTokens, what: &str) {
    cx.error_spanned_by(
        token,
        format!("`#[external_tool]` applies to a struct with named fields, not {what}: the fields are the tool's arguments"),
    );
}

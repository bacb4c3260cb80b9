//! `tool_spec!("file.json")` and `schema!({ .. })`: specs and schemas for
//! hand-written tools, read and checked in `internals::literal` when the
//! crate builds; this file only emits.

use proc_macro2::TokenStream;
use quote::quote;

use crate::internals::literal::{self, WholeSpec};

/// `tool_spec!("specs/x.json")`: a `ToolSpec` from a whole spec file.
pub fn tool_spec(input: TokenStream) -> TokenStream {
    let WholeSpec {
        name,
        description,
        path,
        pointer,
    } = match literal::tool_spec(input) {
        Ok(spec) => spec,
        Err(errors) => return errors,
    };
    quote! {
        ::behest::__private::SpecParts {
            name: #name,
            description: #description,
            ..::behest::__private::SpecParts::DEFAULT
        }
        .build_from_file(::core::include_str!(#path), #pointer, ::core::option::Option::None)
    }
}

/// `schema!({ .. })`: a JSON object schema written in place.
pub fn schema(input: TokenStream) -> TokenStream {
    match literal::schema(input) {
        Ok(text) => quote!(::behest::__private::json_literal(#text)),
        Err(errors) => errors,
    }
}

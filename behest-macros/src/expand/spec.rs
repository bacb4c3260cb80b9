//! The `SpecParts` literal shared by every generated spec.

use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::args::Options;
use crate::ctxt::Ctxt;
use crate::doc::Docs;

/// The tool's description as a `&'static str` expression: the
/// `description = ".."` option, else the doc comment; neither is an error
/// on `ident`, since the model reads the description to choose a tool.
/// `what` and `attribute` word the error ("tool", "#[tool]").
pub fn description(
    options: &Options,
    docs: &Docs,
    ident: &Ident,
    (what, attribute): (&str, &str),
    tool_name: &str,
    cx: &mut Ctxt,
) -> TokenStream {
    match &options.description {
        Some(description) => {
            let text = &description.value;
            quote!(#text)
        }
        None if docs.is_empty() => {
            cx.error_spanned_by(
                ident,
                format!("{what} `{tool_name}` has no description: the model reads it to decide when to call the tool; add a doc comment (`/// What the tool does.`) or `{attribute}(description = \"...\")]`"),
            );
            quote!("")
        }
        None => docs.description(),
    }
}

/// `SpecParts { name, description, title, hints.., allow_unknown_arguments }`.
pub fn parts(options: &Options, tool_name: &str, description: &TokenStream) -> TokenStream {
    let private = {
        let krate = options.krate();
        quote!(#krate::__private)
    };
    let title = option(options.title.as_ref().map(|title| quote!(#title)));
    let read_only = option(options.read_only.map(|b| quote!(#b)));
    let destructive = option(options.destructive.map(|b| quote!(#b)));
    let idempotent = option(options.idempotent.map(|b| quote!(#b)));
    let open_world = option(options.open_world.map(|b| quote!(#b)));
    let allow_unknown = options.allow_unknown_arguments;
    quote! {
        #private::SpecParts {
            name: #tool_name,
            description: #description,
            title: #title,
            read_only: #read_only,
            destructive: #destructive,
            idempotent: #idempotent,
            open_world: #open_world,
            allow_unknown_arguments: #allow_unknown,
        }
    }
}

fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(value) => quote!(::core::option::Option::Some(#value)),
        None => quote!(::core::option::Option::None),
    }
}

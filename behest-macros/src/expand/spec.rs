//! The `SpecParts` literal shared by every generated spec.

use proc_macro2::TokenStream;
use quote::quote;

use crate::args::Options;

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

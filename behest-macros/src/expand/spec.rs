//! The `SpecParts` literal shared by every generated spec.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::internals::options::Options;
use crate::tokens::Tokens;

/// `SpecParts { name, description, <the options set>, ..DEFAULT }`: only
/// what the tool sets is spelled out, which keeps every expansion short.
/// `private` is how the code around it names `__private`.
pub fn parts(
    options: &Options,
    private: &Tokens,
    tool_name: &str,
    description: &TokenStream,
) -> TokenStream {
    let mut set = Vec::new();
    if let Some(title) = &options.title {
        set.push(quote!(title: ::core::option::Option::Some(#title)));
    }
    let hints = [
        ("read_only", options.read_only),
        ("destructive", options.destructive),
        ("idempotent", options.idempotent),
        ("open_world", options.open_world),
    ];
    for (field, value) in hints {
        if let Some(value) = value {
            let field = Ident::new(field, Span::call_site());
            set.push(quote!(#field: ::core::option::Option::Some(#value)));
        }
    }
    if options.allow_unknown_arguments {
        set.push(quote!(allow_unknown_arguments: true));
    }
    if options.strict {
        set.push(quote!(strict: true));
    }
    if options.needs_approval {
        set.push(quote!(needs_approval: true));
    }
    if let Some(ms) = options.timeout_ms {
        set.push(
            quote!(timeout: ::core::option::Option::Some(#private::Duration::from_millis(#ms))),
        );
    }
    quote! {
        #private::SpecParts {
            name: #tool_name,
            description: #description,
            #(#set,)*
            ..#private::SpecParts::DEFAULT
        }
    }
}

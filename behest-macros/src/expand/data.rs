//! `#[data]` on a struct or enum: the serde and schemars derives a tool's
//! argument and output types need, through behest alone.

use proc_macro2::TokenStream;
use quote::quote;
use syn::DeriveInput;

use super::derives::{add_missing, Derive};
use crate::tokens::Tokens;

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut wanted = Vec::new();
    let mut krate: Tokens = quote!(::behest).into();
    let parser = syn::meta::parser(|meta| {
        if meta.path.is_ident("input") {
            wanted.extend([Derive::Deserialize, Derive::JsonSchema]);
            Ok(())
        } else if meta.path.is_ident("output") {
            wanted.extend([Derive::Serialize, Derive::JsonSchema]);
            Ok(())
        } else if meta.path.is_ident("crate") {
            let path: syn::Path = meta.value()?.parse().map_err(|_| {
                meta.error("`crate` takes a path, like `crate = ::behest` (not a string)")
            })?;
            krate = quote!(#path).into();
            Ok(())
        } else {
            Err(meta.error(
                "unknown option: `#[data]` takes `input` (Deserialize + JsonSchema), `output` (Serialize + JsonSchema) and `crate = path`; with neither `input` nor `output` it derives all three",
            ))
        }
    });
    if let Err(error) = syn::parse::Parser::parse2(parser, args) {
        let error = error.to_compile_error();
        return quote!(#error #input);
    }
    let mut item: DeriveInput = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new(
                proc_macro2::Span::call_site(),
                "`#[data]` applies to a struct or an enum",
            )
            .to_compile_error();
            return quote!(#error #input);
        }
    };
    if wanted.is_empty() {
        wanted = vec![Derive::Deserialize, Derive::Serialize, Derive::JsonSchema];
    }
    wanted.dedup();
    let mut unique = Vec::new();
    for derive in wanted {
        if !unique.contains(&derive) {
            unique.push(derive);
        }
    }
    add_missing(&mut item.attrs, &krate, &unique);
    let variants = wire_variants(&item);
    quote!(#item #variants)
}

/// For a unit-only enum, its variants' wire names in a hidden constant, so
/// that a spec file's `enum` can be compared with them when the crate
/// builds (`#[external_tool(schema = ..)]`).
fn wire_variants(item: &DeriveInput) -> Option<TokenStream> {
    // Only serde's derive reads the names its attributes say.
    let derives_deserialize = item.attrs.iter().any(|attr| {
        attr.path().is_ident("derive") && quote!(#attr).to_string().contains("Deserialize")
    });
    if !derives_deserialize {
        return None;
    }
    let names = crate::internals::spec_file::wire_variants(item)?;
    let ident = &item.ident;
    Some(quote! {
        #[automatically_derived]
        impl #ident {
            /// The wire names of the variants, for spec-file checks.
            #[doc(hidden)]
            #[allow(dead_code, unreachable_pub)]
            pub const __BEHEST_WIRE_VARIANTS: ::core::option::Option<&'static [&'static str]> =
                ::core::option::Option::Some(&[#(#names),*]);
        }
    })
}

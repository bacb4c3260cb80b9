//! `#[external_tool]` on a struct: the typed arguments of a tool that runs
//! elsewhere. The struct is read and checked in `internals::external`;
//! this file only emits.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Fields, Item, ItemStruct};

use crate::internals::case::unraw;
use crate::internals::ctxt::Ctxt;
use crate::internals::external::{self, ExternalStruct};
use crate::internals::header::Header;
use crate::internals::options::{self, Target};
use crate::internals::spec_file;

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = options::parse(args, Target::ExternalTool, &mut cx);
    let item: Item = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => {
            let error = error.to_compile_error();
            return quote!(#error #input);
        }
    };
    let ExternalStruct {
        mut item,
        header:
            Header {
                tool_name,
                description,
                spec_file: file,
                ..
            },
    } = match external::analyse(item, &options, &mut cx) {
        Ok(model) => model,
        Err(item) => {
            let errors = cx.into_compile_errors();
            return quote!(#errors #item);
        }
    };
    if cx.has_errors() {
        let errors = cx.into_compile_errors();
        let stub = stub_impls(&item, &options.krate());
        // Without the derives, their helper attributes would be errors of
        // their own.
        strip_derive_helpers(&mut item);
        return quote!(#errors #item #stub);
    }
    let lean = lean_deserialize(&item, &options);
    let wanted: &[super::derives::Derive] = if lean.is_some() {
        &[super::derives::Derive::JsonSchema]
    } else {
        &[
            super::derives::Derive::Deserialize,
            super::derives::Derive::JsonSchema,
        ]
    };
    super::derives::add_missing(&mut item.attrs, &options.krate(), wanted);
    let generated = expand_impls(&item, &options, &tool_name, &description, file.as_ref());
    quote! {
        #item
        #lean
        #generated
    }
}

/// `Deserialize` through behest's generic visitor, as for `#[tool]`'s
/// arguments, when the struct leaves serde nothing to configure: no derive
/// of its own, no `#[serde]` attribute, at most twelve fields. A field type
/// without `Deserialize` is then one error, on that type, naming the fix,
/// where serde's derive gives several.
fn lean_deserialize(item: &ItemStruct, options: &options::Options) -> Option<TokenStream> {
    let Fields::Named(fields) = &item.fields else {
        return None;
    };
    let serde_attr = |attrs: &[syn::Attribute]| attrs.iter().any(|a| a.path().is_ident("serde"));
    let derives_serde = item
        .attrs
        .iter()
        .filter(|attr| attr.path().is_ident("derive"))
        .any(|attr| quote!(#attr).to_string().contains("Deserialize"));
    if derives_serde
        || serde_attr(&item.attrs)
        || fields.named.len() > 12
        || fields.named.iter().any(|field| serde_attr(&field.attrs))
    {
        return None;
    }
    let krate = options.krate();
    let private = krate.private();
    let ident = &item.ident;
    let name = ident.to_string();
    let idents: Vec<&syn::Ident> = fields
        .named
        .iter()
        .filter_map(|f| f.ident.as_ref())
        .collect();
    let wire_names: Vec<String> = idents.iter().map(|ident| unraw(ident)).collect();
    let types: Vec<&syn::Type> = fields.named.iter().map(|f| &f.ty).collect();
    // With a spec file, the file says whether unknown arguments are
    // refused, and validation refuses them before the struct reads.
    let deny = !options.allow_unknown_arguments && options.schema.is_none();
    let deserializer = syn::Ident::new("deserializer", proc_macro2::Span::mixed_site());
    let assertions = types.iter().map(|ty| {
        quote::quote_spanned! {super::at(syn::spanned::Spanned::span(ty))=>
            #private::assert_argument_deserialize::<#ty>();
        }
    });
    Some(quote! {
        const _: () = {
            #(#assertions)*
        };

        #[automatically_derived]
        impl<'de> #private::serde::Deserialize<'de> for #ident {
            fn deserialize<__BehestDeserializer: #private::serde::Deserializer<'de>>(
                #deserializer: __BehestDeserializer,
            ) -> ::core::result::Result<Self, __BehestDeserializer::Error> {
                use #private::dispatch::prelude::*;
                let (#(#idents,)*) = (&#private::dispatch::Probe::<(#(#types,)*)>::new())
                    .__behest_fields(#deserializer, #name, &[#(#wire_names),*], #deny)?;
                ::core::result::Result::Ok(Self { #(#idents),* })
            }
        }
    })
}

/// `item` without `#[serde]` and `#[schemars]` attributes.
fn strip_derive_helpers(item: &mut ItemStruct) {
    let helper =
        |attr: &syn::Attribute| attr.path().is_ident("serde") || attr.path().is_ident("schemars");
    item.attrs.retain(|attr| !helper(attr));
    for field in &mut item.fields {
        field.attrs.retain(|attr| !helper(attr));
    }
}

/// Derives `Deserialize` and `JsonSchema` unless the user already does,
/// through behest's re-exports.
fn expand_impls(
    item: &ItemStruct,
    options: &options::Options,
    tool_name: &str,
    description: &TokenStream,
    file: Option<&spec_file::SpecFile>,
) -> TokenStream {
    let krate = options.krate();
    let private = krate.private();
    let ident = &item.ident;
    let parts = super::spec::parts(options, &private, tool_name, description);
    // The file's schema, exactly; `include_str!` makes the crate rebuild
    // (and the checks run again) when the file changes.
    let (build, conflict, enum_checks) = match file {
        Some(file) => {
            let path = file.path.to_string_lossy().into_owned();
            let pointer = &file.schema_pointer;
            let shown = &file.shown;
            let fields = file.compared_fields();
            let enum_checks = file.enum_check_items(&private);
            (
                quote!(parts.build_from_file(::core::include_str!(#path), #pointer, ::core::option::Option::None)),
                quote! {
                    fn __spec_conflict() -> ::core::option::Option<#private::String> {
                        let spec = <Self as #krate::ExternalToolArgs>::spec();
                        #private::spec_conflict::<Self>(&spec.parameters, #pointer, #shown, #fields)
                    }
                },
                enum_checks,
            )
        }
        None => (
            quote!(parts.build::<Self>(::core::option::Option::None, &[])),
            quote!(),
            quote!(),
        ),
    };
    let approval = options.needs_approval.then(|| {
        quote! {
            fn needs_approval() -> bool {
                true
            }
        }
    });
    let strict = options.strict.then(|| {
        quote! {
            fn strict() -> bool {
                true
            }
        }
    });
    // The handler reads the fields, but the compiler cannot see it through
    // `Deserialize`: reading them here keeps `dead_code` quiet.
    let field_names: Vec<&syn::Ident> = match &item.fields {
        syn::Fields::Named(fields) => fields
            .named
            .iter()
            .filter_map(|f| f.ident.as_ref())
            .collect(),
        _ => Vec::new(),
    };
    let name_doc = format!("The name the model calls this tool by: `{tool_name}`.");
    quote! {
        #enum_checks

        const _: () = {
            #[automatically_derived]
            impl #krate::ExternalToolArgs for #ident {
                fn spec() -> &'static #krate::ToolSpec {
                    static SPEC: #private::OnceLock<#krate::ToolSpec> = #private::OnceLock::new();
                    SPEC.get_or_init(|| {
                        let parts = #parts;
                        #build
                    })
                }

                #approval
                #strict
                #conflict

                fn __read_fields(&self) {
                    let _ = (#(&self.#field_names,)*);
                }

                fn __parse(
                    arguments: #krate::Value,
                    limits: &#krate::Limits,
                ) -> #krate::ToolResult<Self> {
                    static VALIDATOR: #private::OnceLock<#krate::validation::ArgumentValidator> = #private::OnceLock::new();
                    let validator = VALIDATOR.get_or_init(|| #private::compile_validator(<Self as #krate::ExternalToolArgs>::spec()));
                    #krate::arguments::parse_validated_with(arguments, validator, limits)
                }
            }
        };

        #[automatically_derived]
        impl #ident {
            #[doc = #name_doc]
            pub const TOOL_NAME: &'static str = #tool_name;

            /// The tool, to register so that the model can call it.
            pub fn external_tool() -> #krate::ExternalTool {
                <Self as #krate::ExternalToolArgs>::external_tool()
            }

            /// Parses a call of this tool into its typed arguments, with the
            /// argument errors the runtime gives: under the run's runtime's
            /// limits inside a run's handler, the defaults elsewhere.
            pub fn from_call(call: &#krate::ToolCall) -> #krate::ToolResult<Self> {
                <Self as #krate::ExternalToolArgs>::from_call(call)
            }

            /// Parses a call of this tool into its typed arguments under the
            /// limits of a runtime (`runtime.limits()`).
            pub fn from_call_with(
                call: &#krate::ToolCall,
                limits: &#krate::Limits,
            ) -> #krate::ToolResult<Self> {
                <Self as #krate::ExternalToolArgs>::from_call_with(call, limits)
            }
        }
    }
}

/// What later code uses of an `#[external_tool]` struct, for a struct the
/// macro refused: its one error stays the only one.
fn stub_impls(item: &ItemStruct, krate: &crate::tokens::Tokens) -> TokenStream {
    let ident = &item.ident;
    let (impl_generics, type_generics, where_clause) = item.generics.split_for_impl();
    quote! {
        #[allow(dead_code)]
        impl #impl_generics #ident #type_generics #where_clause {
            pub const TOOL_NAME: &'static str = "";

            pub fn external_tool() -> #krate::ExternalTool {
                ::core::unreachable!()
            }

            pub fn from_call(_call: &#krate::ToolCall) -> #krate::ToolResult<Self> {
                ::core::unreachable!()
            }

            pub fn from_call_with(
                _call: &#krate::ToolCall,
                _limits: &#krate::Limits,
            ) -> #krate::ToolResult<Self> {
                ::core::unreachable!()
            }
        }
    }
}

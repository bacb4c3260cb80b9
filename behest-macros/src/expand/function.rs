//! Code generation for a tool function or method, from its checked model
//! ([`ToolFn`]): the arguments struct, the tool type and its `TypedTool`
//! impl, shared by `#[tool]` and `#[tools]`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Ident, Type};

use super::at;
use crate::internals::ast::{Param, Receiver, ToolFn};
use crate::internals::attr::ParamDefault;
use crate::tokens::Tokens;

/// The hidden names the generated code binds, made once per tool.
struct Hidden {
    args: Ident,
    context: Ident,
    defaults: Ident,
}

impl Hidden {
    fn new() -> Self {
        Self {
            args: Ident::new("__behest_args", Span::mixed_site()),
            context: Ident::new("__behest_context", Span::mixed_site()),
            defaults: Ident::new("__behest_defaults", Span::mixed_site()),
        }
    }
}

/// What the parameters give the generated code: the arguments struct's
/// fields (plain, or for the derives), the schema's properties, the
/// defaults, the bound assertions and the function call's arguments.
#[derive(Default)]
struct Arguments<'t> {
    /// The struct takes serde's and schemars' derives ([`derives_args`]):
    /// `derived_fields` and `assertions` are made, else `fields` and
    /// `properties`.
    derives: bool,
    fields: Vec<TokenStream>,
    derived_fields: Vec<TokenStream>,
    field_idents: Vec<&'t Ident>,
    field_types: Vec<TokenStream>,
    argument_types: Vec<&'t Type>,
    wire_names: Vec<&'t String>,
    properties: Vec<TokenStream>,
    defaults: Vec<TokenStream>,
    assertions: Vec<TokenStream>,
    call_args: Vec<TokenStream>,
}

/// The tool's arguments struct, its tool type and the `Tool` impl.
/// `owner` is the impl's self type for method tools.
pub fn expand(tool: &ToolFn, owner: Option<&Type>) -> TokenStream {
    let krate = tool.options.krate();
    let (private, import_private) = krate.private_in_block();
    let fn_ident = &tool.fn_ident;
    let tool_ident = tool.tool_ident();
    let args_ident = tool.args_ident();
    let args_name_text = args_ident.to_string();
    let tool_name = &tool.tool_name;
    let hidden = Hidden::new();
    let Hidden {
        args: args_var,
        context: context_var,
        defaults: defaults_var,
    } = &hidden;
    let has_cfgs = tool.cfgs.iter().any(|predicates| !predicates.is_empty());
    let arguments = arguments(tool, &hidden, &private);
    let Arguments {
        argument_types,
        wire_names,
        defaults,
        call_args,
        ..
    } = &arguments;
    let (tool_struct, function, self_arg) = tool_type(tool, owner);
    let is_async = tool.is_async;
    let make_call = |args: &[&TokenStream]| {
        if is_async {
            quote!(#function(#self_arg #(#args),*).await)
        } else {
            quote!(#function(#self_arg #(#args),*))
        }
    };

    let output = &tool.output;
    let output_span = at(output.span());
    let value = Ident::new("__behest_value", Span::mixed_site());
    let split = Ident::new("__behest_split", Span::mixed_site());
    let ok = Ident::new("__behest_ok", Span::mixed_site());
    let err = Ident::new("__behest_err", Span::mixed_site());
    // The converted values carry the return type's location: an
    // unsatisfied bound is reported on the argument of `convert`.
    let ok_value = Ident::new("__behest_v", output_span);
    let err_value = Ident::new("__behest_e", output_span);
    let convert_ok = quote_spanned! {output_span=>
        (&&&#ok).__behest_output().convert(#ok_value)
    };
    let convert_err = quote_spanned! {output_span=>
        (&&&#err).__behest_error().convert(#err_value)
    };

    let parts = super::spec::parts(&tool.options, &private, tool_name, &tool.description);
    // The function's value turned into the tool's output.
    let finish = quote! {
        let #split = (&&#private::dispatch::Probe::of(&#value)).__behest_split();
        let #ok = #split.ok();
        let #err = #split.err();
        match #split.split(#value) {
            ::core::result::Result::Ok(#ok_value) => #convert_ok,
            ::core::result::Result::Err(#err_value) => ::core::result::Result::Err(#convert_err),
        }
    };
    let injects = tool
        .params
        .iter()
        .any(|param| matches!(param, Param::Injected(_)));
    // `_` where nothing is injected: the context goes unused.
    let context_pat = if injects {
        quote!(#context_var)
    } else {
        quote!(_)
    };
    // The typed routes (`__private::typed::invoke_text`, and the runtime's
    // `start_text`) hold unless the options change what the typed parse
    // accepts: unknown arguments would be skipped without the depth limit,
    // and a spec file may say more than the types do (`minLength`, a
    // `pattern`). Each argument is plain or checked as it is read. The
    // derived arguments struct (past twelve arguments) reads an array too,
    // and counts a field required by its own rules: it is left to the
    // checked route.
    let deny = !tool.options.allow_unknown_arguments;
    let from_file = tool.spec_file.is_some();
    let text_route = if deny && !has_cfgs && !from_file && !arguments.derives {
        quote!(::core::option::Option::Some(&[#((
            #wire_names,
            (&#private::dispatch::Probe::<#argument_types>::new()).__behest_plain(),
        )),*]))
    } else {
        quote!(::core::option::Option::None)
    };
    // The schema refuses unknown arguments; so does the text route's parse.
    // A spec file says itself whether it refuses them, and validation
    // refuses them before the struct reads.
    let deny_fields = deny && !from_file;
    let result = quote!(#krate::ToolResult<#krate::ToolOutput>);
    let reads_context = injects.then(|| {
        quote!(
            const READS_CONTEXT: bool = true;
        )
    });
    // The defaults' values, for the schema; none is an empty slice.
    let defaults_list = (!defaults.is_empty()).then(|| {
        quote! {
            // Every default may be configured out.
            #[allow(unused_mut)]
            let mut #defaults_var: #private::Vec<(&str, #private::serde_json::Value)> = #private::Vec::new();
            #(#defaults)*
        }
    });
    let defaults_arg = if defaults.is_empty() {
        quote!(&[])
    } else {
        quote!(&#defaults_var)
    };
    let (build, conflict, enum_checks) = match &tool.spec_file {
        // The file's schema, exactly; `include_str!` rebuilds the crate
        // when the file changes.
        Some(file) => {
            let path = file.path.to_string_lossy().into_owned();
            let pointer = &file.schema_pointer;
            let shown = &file.shown;
            let fields = file.compared_fields();
            (
                quote! {
                    <Self as #private::TypedTool>::PARTS.build_from_file(
                        ::core::include_str!(#path),
                        #pointer,
                        (&&&#ok).__behest_output_schema(),
                    )
                },
                quote! {
                    fn spec_conflict(&self) -> ::core::option::Option<#private::String> {
                        let spec = &<Self as #private::TypedTool>::described(self).spec;
                        #private::spec_conflict::<#args_ident>(&spec.parameters, #pointer, #shown, #fields)
                    }
                },
                // Outside the block: the full path.
                file.enum_check_items(&krate.private()),
            )
        }
        None => (
            quote! {
                <Self as #private::TypedTool>::PARTS.build_with(
                    #args_name_text,
                    <#args_ident as #private::schemars::JsonSchema>::json_schema,
                    (&&&#ok).__behest_output_schema(),
                    #defaults_arg,
                )
            },
            quote!(),
            quote!(),
        ),
    };
    let build_body = quote! {
        let #split = (&&#private::dispatch::Probe::<#output>::new()).__behest_split();
        let #ok = #split.ok();
        #defaults_list
        #private::Described::new(#build, #text_route)
    };
    // Kept in one map in `behest`, by the tool's type: a `static` per tool
    // would cost every rebuild of the crate an item per tool.
    let described = quote! {
        #private::described(::core::any::TypeId::of::<Self>(), &|| { #build_body })
    };
    // Most tools' bodies are a combinator over the function's call, which
    // costs each tool far less to compile than an `async` body. An `async
    // fn`'s call is made when `run` is called, so one whose arguments run
    // code as they are made (a default) has its call made on the first
    // poll (`finish_deferred`), as an `async` body would; one that reads
    // the context (an injected value, which may fail) or has configured
    // parameters keeps an `async` body. A plain `fn`'s whole call is made
    // on the first poll either way.
    let combinator = !injects && !has_cfgs;
    let run = if combinator {
        let all: Vec<&TokenStream> = call_args.iter().collect();
        let call = quote!(#function(#self_arg #(#all),*));
        let body = if !is_async {
            quote!(#private::finish_sync(move || { let #value = #call; #finish }))
        } else if defaults.is_empty() {
            quote!(#private::finish_async(#call, |#value| { #finish }))
        } else {
            quote!(#private::finish_deferred(move || #call, |#value| { #finish }))
        };
        quote! {
            fn run(
                &self,
                #args_var: #args_ident,
                _: #krate::ToolContext,
            ) -> impl ::core::future::Future<Output = #result> + ::core::marker::Send {
                #body
            }
        }
    } else {
        let calls = configured_calls(&tool.cfgs, call_args, make_call, &value);
        quote! {
            async fn run(
                &self,
                #args_var: #args_ident,
                #context_pat: #krate::ToolContext,
            ) -> #result {
                #calls
                #finish
            }
        }
    };
    let tool_doc = format!("The `{tool_name}` tool, made by `#[tool]` from `{fn_ident}`.");

    let (args_struct, args_impls, assertions) =
        args_items(tool, &arguments, &private, deny, deny_fields);
    quote! {
        #args_struct

        #[doc = #tool_doc]
        #tool_struct

        #enum_checks

        const _: () = {
            #import_private
            // The probes' traits, for every function of the block.
            use #private::dispatch::prelude::*;

            #assertions

            #args_impls

            // `Tool` comes from the blanket impl over `TypedTool`: the
            // shared methods are compiled once, in `behest`.
            #[automatically_derived]
            impl #private::TypedTool for #tool_ident {
                type Arguments = #args_ident;

                const PARTS: #private::SpecParts = #parts;

                fn described(&self) -> &'static #private::Described {
                    #described
                }

                #reads_context
                #conflict

                #run
            }
        };
    }
}

/// The parameters, read into what the generated code needs of them.
/// `private` is how the tool's block names `__private`.
fn arguments<'t>(tool: &'t ToolFn, hidden: &Hidden, private: &Tokens) -> Arguments<'t> {
    let krate = tool.options.krate();
    let Hidden {
        args: args_var,
        context: context_var,
        defaults: defaults_var,
    } = hidden;
    let mut out = Arguments {
        derives: derives_args(tool),
        ..Arguments::default()
    };
    let Arguments {
        derives,
        fields,
        derived_fields,
        field_idents,
        field_types,
        argument_types,
        wire_names,
        properties,
        defaults,
        assertions,
        call_args,
    } = &mut out;
    // What only one of the two forms of the arguments struct needs is made
    // for that form alone (see `args_items`).
    let derives = *derives;
    for (param, predicates) in tool.params.iter().zip(&tool.cfgs) {
        let cfg = (!predicates.is_empty()).then(|| quote!(#[cfg(all(#(#predicates),*))]));
        match param {
            Param::Sent(argument) => {
                let ident = &argument.ident;
                let ty = &argument.ty;
                let doc = argument.description.as_ref().map(|d| quote!(#[doc = #d]));
                let rename = (derives && argument.renamed).then(|| {
                    let wire = &argument.wire_name;
                    quote!(#[serde(rename = #wire)])
                });
                // A default is applied here, not by `#[serde(default)]`:
                // the field is an `Option` shown to schemars as the plain
                // type, and the default goes into the schema at build time.
                let (field_ty, schema_with, value) = match &argument.default {
                    None => (quote!(#ty), None, quote!(#args_var.#ident)),
                    Some(default) => {
                        let (value, shown) = match default {
                            ParamDefault::Trait => (
                                quote!(#args_var.#ident.unwrap_or_default()),
                                quote!(<#ty as ::core::default::Default>::default()),
                            ),
                            ParamDefault::Expr(expr) => (
                                quote!(#args_var.#ident.unwrap_or_else(|| #expr)),
                                quote!({ let value: #ty = #expr; value }),
                            ),
                        };
                        let wire = &argument.wire_name;
                        defaults.push(quote! {
                            #cfg #defaults_var.push((#wire, #private::default_value(&#shown)));
                        });
                        let schema_with = derives.then(|| {
                            let with = quote!(#ty).to_string();
                            quote!(#[schemars(with = #with)])
                        });
                        (quote!(::core::option::Option<#ty>), schema_with, value)
                    }
                };
                let wire = &argument.wire_name;
                if derives {
                    derived_fields
                        .push(quote! { #cfg #doc #rename #schema_with pub #ident: #field_ty });
                    // Both bounds are checked here, on the parameter's type,
                    // with a message that names the fix.
                    let assertion = quote_spanned! {at(ty.span())=>
                        #private::assert_argument_schema::<#ty>();
                    };
                    assertions.push(quote!(#cfg #assertion));
                } else {
                    fields.push(quote! { #doc pub #ident: #field_ty });
                    let described = argument.description.as_deref().unwrap_or_default();
                    properties.push(quote_spanned! {at(ty.span())=>
                        #private::schema::property::<#ty>(#wire, #described)
                    });
                }
                field_idents.push(ident);
                field_types.push(field_ty);
                argument_types.push(ty);
                wire_names.push(wire);
                call_args.push(value);
            }
            Param::Injected(ty) => {
                // An unsatisfied `FromToolContext` is reported on `#ty`.
                call_args.push(quote! {
                    <#ty as #krate::FromToolContext>::from_tool_context(&#context_var)?
                });
            }
        }
    }
    out
}

/// The tool type (a unit struct, or a struct over the owner's `Arc` for a
/// method), the path of the function it calls, and the receiver argument.
fn tool_type(tool: &ToolFn, owner: Option<&Type>) -> (TokenStream, TokenStream, TokenStream) {
    let private = tool.options.krate().private();
    let vis = &tool.vis;
    let fn_ident = &tool.fn_ident;
    let tool_ident = tool.tool_ident();
    match (owner, &tool.receiver) {
        (Some(owner), Receiver::Ref) => (
            quote!(#vis struct #tool_ident(pub #private::Arc<#owner>);),
            quote!(<#owner>::#fn_ident),
            quote!(&*self.0,),
        ),
        (Some(owner), _) => (
            quote!(#vis struct #tool_ident(pub #private::Arc<#owner>);),
            quote!(<#owner>::#fn_ident),
            quote!(),
        ),
        (None, _) => {
            // The common traits by hand: a derive is an expansion of its
            // own, and with a hundred tools that shows in every rebuild.
            let debug_name = tool_ident.to_string();
            (
                quote! {
                    #vis struct #tool_ident;

                    #[automatically_derived]
                    impl ::core::clone::Clone for #tool_ident {
                        #[inline]
                        fn clone(&self) -> Self {
                            *self
                        }
                    }

                    #[automatically_derived]
                    impl ::core::marker::Copy for #tool_ident {}

                    #[automatically_derived]
                    impl ::core::fmt::Debug for #tool_ident {
                        fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                            f.write_str(#debug_name)
                        }
                    }
                },
                quote!(#fn_ident),
                quote!(),
            )
        }
    }
}

/// The arguments struct and its `Deserialize` and `JsonSchema` impls: short
/// impls over generic code in `behest` up to twelve arguments, the derives
/// past that; the bound assertions the derives need.
fn args_items(
    tool: &ToolFn,
    arguments: &Arguments<'_>,
    private: &Tokens,
    deny: bool,
    deny_fields: bool,
) -> (TokenStream, TokenStream, TokenStream) {
    let vis = &tool.vis;
    let args_ident = tool.args_ident();
    let tool_name = &tool.tool_name;
    let Arguments {
        derives,
        fields,
        derived_fields,
        field_idents,
        field_types,
        wire_names,
        properties,
        assertions,
        ..
    } = arguments;
    let args_doc = format!("The arguments of the `{tool_name}` tool, as the model sends them.");
    let deny_unknown = deny_fields.then(|| quote!(#[serde(deny_unknown_fields)]));
    // Up to twelve arguments, the struct's `Deserialize` and `JsonSchema`
    // are short impls over generic code in `behest` (the same schema and
    // messages as the derives, for much less to compile per tool); past
    // that, the derives.
    // Configured parameters take the derives too, which honour `#[cfg]` on
    // fields.
    if !derives {
        let args_name = args_ident.to_string();
        let deserializer = Ident::new("deserializer", Span::mixed_site());
        let generator = Ident::new("generator", Span::mixed_site());
        let struct_item = quote! {
            #[doc = #args_doc]
            #vis struct #args_ident {
                #(#fields,)*
            }
        };
        let impls = quote! {
            #[automatically_derived]
            impl<'de> #private::serde::Deserialize<'de> for #args_ident {
                fn deserialize<__BehestDeserializer: #private::serde::Deserializer<'de>>(
                    #deserializer: __BehestDeserializer,
                ) -> ::core::result::Result<Self, __BehestDeserializer::Error> {
                    let (#(#field_idents,)*) = (&#private::dispatch::Probe::<(#(#field_types,)*)>::new())
                        .__behest_fields(#deserializer, #args_name, &[#(#wire_names),*], #deny_fields)?;
                    ::core::result::Result::Ok(Self { #(#field_idents),* })
                }
            }

            #[automatically_derived]
            impl #private::schemars::JsonSchema for #args_ident {
                fn schema_name() -> #private::Cow<'static, str> {
                    #private::Cow::Borrowed(#args_name)
                }

                fn schema_id() -> #private::Cow<'static, str> {
                    #private::Cow::Borrowed(::core::concat!(::core::module_path!(), "::", #args_name))
                }

                fn json_schema(#generator: &mut #private::schemars::SchemaGenerator) -> #private::schemars::Schema {
                    #private::schema::object(#generator, &[#(#properties),*], #deny)
                }
            }
        };
        (struct_item, impls, quote!())
    } else {
        let private_path = tool.options.krate().private();
        let serde_crate = format!("{}::serde", private_path.path_string());
        let schemars_crate = format!("{}::schemars", private_path.path_string());
        let struct_item = quote! {
            #[doc = #args_doc]
            #[derive(#private_path::serde::Deserialize, #private_path::schemars::JsonSchema)]
            #[serde(crate = #serde_crate)]
            #deny_unknown
            #[schemars(crate = #schemars_crate)]
            #vis struct #args_ident {
                #(#derived_fields,)*
            }
        };
        // serde's own diagnostics explain a missing `Deserialize`;
        // schemars has none, so this check names the fix.
        (
            struct_item,
            quote!(),
            quote!(const _: () = { #(#assertions)* };),
        )
    }
}

/// Whether the arguments struct takes serde's and schemars' derives: past
/// twelve arguments, or with configured (`#[cfg]`) ones, which the derives
/// honour on fields.
fn derives_args(tool: &ToolFn) -> bool {
    let sent = tool
        .params
        .iter()
        .filter(|param| matches!(param, Param::Sent(_)))
        .count();
    sent > 12 || tool.cfgs.iter().any(|predicates| !predicates.is_empty())
}

/// The call of the function once per combination of its configured
/// parameters, each under the `#[cfg]` where exactly those are present.
fn configured_calls(
    cfgs: &[Vec<TokenStream>],
    call_args: &[TokenStream],
    call: impl Fn(&[&TokenStream]) -> TokenStream,
    value: &Ident,
) -> TokenStream {
    let configured: Vec<usize> = (0..cfgs.len()).filter(|&i| !cfgs[i].is_empty()).collect();
    if configured.is_empty() {
        let all: Vec<&TokenStream> = call_args.iter().collect();
        let call = call(&all);
        return quote!(let #value = #call;);
    }
    let mut variants = Vec::new();
    for mask in 0..1usize << configured.len() {
        let present = |index: usize| {
            configured
                .iter()
                .position(|&i| i == index)
                .is_none_or(|bit| mask & (1 << bit) != 0)
        };
        let conditions = configured.iter().enumerate().map(|(bit, &index)| {
            let predicates = &cfgs[index];
            if mask & (1 << bit) != 0 {
                quote!(all(#(#predicates),*))
            } else {
                quote!(not(all(#(#predicates),*)))
            }
        });
        let args: Vec<&TokenStream> = call_args
            .iter()
            .enumerate()
            .filter(|(index, _)| present(*index))
            .map(|(_, arg)| arg)
            .collect();
        let call = call(&args);
        variants.push(quote! {
            #[cfg(all(#(#conditions),*))]
            let #value = #call;
        });
    }
    quote!(#(#variants)*)
}

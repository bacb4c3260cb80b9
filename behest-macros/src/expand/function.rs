//! A function or method turned into a tool: analysis, checks and the
//! generated `Tool` impl shared by `#[tool]` and `#[tools]`.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{FnArg, Ident, Pat, ReturnType, Signature, Type, Visibility};

use super::at;
use crate::args::Options;
use crate::attr::{self, ParamDefault};
use crate::case::to_upper_camel;
use crate::ctxt::Ctxt;
use crate::doc::Docs;
use crate::valid;

/// A parameter the model sends.
pub struct Argument {
    pub ident: Ident,
    pub ty: Type,
    pub wire_name: String,
    pub renamed: bool,
    pub description: Option<String>,
    pub default: Option<ParamDefault>,
}

/// A parameter of the function, in order.
pub enum Param {
    Argument(Argument),
    /// `#[ctx]`: injected from the call context.
    Injected(Type),
}

/// How the generated tool calls the function.
pub enum Receiver {
    /// A free function.
    None,
    /// A method on `&self`, reached through the tool's `Arc<Self>`.
    Ref,
    /// An associated function without `self`.
    Associated,
}

pub struct ToolFn {
    pub options: Options,
    pub fn_ident: Ident,
    pub vis: Visibility,
    pub tool_name: String,
    pub description: TokenStream,
    pub is_async: bool,
    pub params: Vec<Param>,
    /// The `#[cfg(..)]` predicates of each parameter, in order: a parameter
    /// configured out is left out of the arguments and of the call.
    pub cfgs: Vec<Vec<TokenStream>>,
    pub output: Type,
    pub receiver: Receiver,
    /// A type in the signature has the tool type's name: no stub of that
    /// name may be emitted either.
    pub name_clash: bool,
}

impl ToolFn {
    /// The generated tool type: `get_weather` -> `GetWeather`.
    pub fn tool_ident(&self) -> Ident {
        tool_ident(&self.fn_ident)
    }

    fn args_ident(&self) -> Ident {
        format_ident!("{}Args", self.tool_ident())
    }
}

pub fn tool_ident(fn_ident: &Ident) -> Ident {
    let name = fn_ident.to_string();
    let name = name.strip_prefix("r#").unwrap_or(&name);
    format_ident!("{}", to_upper_camel(name), span = fn_ident.span())
}

/// Analyses a signature, stripping parameter helper attributes from it.
/// `in_impl` says whether a receiver is allowed (inside `#[tools]`).
pub fn analyse(
    sig: &mut Signature,
    attrs: &[syn::Attribute],
    vis: &Visibility,
    options: Options,
    in_impl: bool,
    cx: &mut Ctxt,
) -> ToolFn {
    let fn_ident = sig.ident.clone();
    let ident_text = fn_ident.to_string();
    let unraw = ident_text
        .strip_prefix("r#")
        .unwrap_or(&ident_text)
        .to_owned();

    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool cannot be generic: its arguments need one concrete JSON Schema; use concrete types",
        );
    }
    if let syn::Safety::Unsafe(token) = &sig.safety {
        cx.error_spanned_by(
            token,
            "a tool cannot be an `unsafe fn`: the model's calls cannot uphold its safety contract",
        );
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool cannot be variadic");
    }

    let (tool_name, name_span) = match &options.name {
        Some(name) => (name.value.clone(), name.span),
        None => (unraw.clone(), fn_ident.span()),
    };
    valid::check_name(&tool_name, name_span, cx);

    let docs = Docs::collect(attrs);
    let description = super::spec::description(
        &options,
        &docs,
        &fn_ident,
        ("tool", "#[tool"),
        &tool_name,
        cx,
    );

    let mut receiver = if in_impl {
        Receiver::Associated
    } else {
        Receiver::None
    };
    let mut params = Vec::new();
    let mut cfgs = Vec::new();
    for input in &mut sig.inputs {
        match input {
            FnArg::Receiver(recv) => {
                if !in_impl {
                    cx.error_spanned_by(
                        recv.self_token,
                        "a `#[tool]` function cannot take `self`; for methods, put `#[behest::tools]` on the impl block",
                    );
                } else if !matches!(recv.kind, syn::ReceiverKind::Reference(_, _, None)) {
                    cx.error_spanned_by(
                        &*recv,
                        "a method tool takes `&self`: its tools share one `Arc<Self>`, so `self` by value or `&mut self` cannot work",
                    );
                }
                receiver = Receiver::Ref;
            }
            FnArg::Typed(pat_type) => {
                let helpers = attr::take(&mut pat_type.attrs, cx);
                let predicates = cfg_predicates(&pat_type.attrs, cx);
                let configured = cfgs
                    .iter()
                    .filter(|p: &&Vec<TokenStream>| !p.is_empty())
                    .count();
                if !predicates.is_empty() && configured == MAX_CFG_PARAMS {
                    cx.error_spanned_by(
                        &*pat_type,
                        format!("a tool takes at most {MAX_CFG_PARAMS} parameters with `#[cfg]`: group the configured ones in a struct argument"),
                    );
                }
                let ident = match &*pat_type.pat {
                    Pat::Ident(pat) if pat.by_ref.is_none() && pat.subpat.is_none() => {
                        pat.ident.clone()
                    }
                    other => {
                        cx.error_spanned_by(
                            other,
                            "a tool parameter must be a plain name, like `city: String`: its name becomes the argument's name in the schema",
                        );
                        continue;
                    }
                };
                let ty = (*pat_type.ty).clone();
                cfgs.push(predicates);
                if helpers.ctx.is_some() {
                    if let Type::Reference(reference) = &ty {
                        let inner = &reference.elem;
                        cx.error_spanned_by(
                            &ty,
                            format!(
                                "a `#[ctx]` parameter is taken by value, not borrowed: write `{}` (the context and `State<T>` are cheap to clone)",
                                quote!(#inner).to_string().replace(' ', "")
                            ),
                        );
                    }
                    valid::check_no_impl_trait(&ty, "a `#[ctx]` parameter", cx);
                    params.push(Param::Injected(ty));
                    continue;
                }
                valid::check_argument_type(&ty, cx);
                let text = ident.to_string();
                let (wire_name, renamed) = match &helpers.rename {
                    Some(rename) => (rename.value.clone(), true),
                    None => (text.strip_prefix("r#").unwrap_or(&text).to_owned(), false),
                };
                params.push(Param::Argument(Argument {
                    ident,
                    ty,
                    wire_name,
                    renamed,
                    description: helpers.description.or(helpers.doc),
                    default: helpers.default,
                }));
            }
        }
    }

    check_wire_names(&params, cx);
    apply_arguments_section(&docs, &mut params, cx);

    let output = match &sig.output {
        ReturnType::Default => syn::parse_quote!(()),
        ReturnType::Type(_, ty) => {
            valid::check_no_impl_trait(ty, "a tool's return type", cx);
            (**ty).clone()
        }
    };

    let tool_type = tool_ident(&fn_ident);
    let clash = params
        .iter()
        .map(|param| match param {
            Param::Argument(argument) => &argument.ty,
            Param::Injected(ty) => ty,
        })
        .chain(std::iter::once(&output))
        .find_map(|ty| ident_in(&quote!(#ty), &tool_type));
    if let Some(clashing) = &clash {
        cx.error_spanned_by(
            clashing,
            format!(
                "`#[tool]` names this tool's type `{tool_type}` after the function `{fn_ident}`, which clashes with the type `{tool_type}` used here; rename the function (e.g. `{unraw}_tool`, with `#[tool(name = \"{unraw}\")]` to keep the tool's name) or the type"
            ),
        );
    }

    ToolFn {
        name_clash: clash.is_some(),
        options,
        fn_ident,
        vis: vis.clone(),
        tool_name,
        description,
        is_async: sig.asyncness.is_some(),
        params,
        cfgs,
        output,
        receiver,
    }
}

/// How many parameters may carry `#[cfg]`: the call is written once per
/// combination of them.
const MAX_CFG_PARAMS: usize = 4;

/// The predicates of a parameter's `#[cfg(..)]` attributes, which stay on
/// the function (the compiler applies them there).
fn cfg_predicates(attrs: &[syn::Attribute], cx: &mut Ctxt) -> Vec<TokenStream> {
    let mut predicates = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("cfg")) {
        match &attr.meta {
            syn::Meta::List(list) => predicates.push(list.tokens.clone()),
            other => cx.error_spanned_by(other, "write `#[cfg(predicate)]`"),
        }
    }
    predicates
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

/// The first `ident` among `tokens`, at any depth.
fn ident_in(tokens: &TokenStream, ident: &Ident) -> Option<Ident> {
    tokens.clone().into_iter().find_map(|tree| match tree {
        proc_macro2::TokenTree::Ident(found) if found == *ident => Some(found),
        proc_macro2::TokenTree::Group(group) => ident_in(&group.stream(), ident),
        _ => None,
    })
}

/// Two parameters may not share a wire name.
fn check_wire_names(params: &[Param], cx: &mut Ctxt) {
    let arguments: Vec<&Argument> = params
        .iter()
        .filter_map(|param| match param {
            Param::Argument(argument) => Some(argument),
            Param::Injected(_) => None,
        })
        .collect();
    for (index, argument) in arguments.iter().enumerate() {
        if let Some(first) = arguments[..index]
            .iter()
            .find(|a| a.wire_name == argument.wire_name)
        {
            cx.error_spanned_by(
                &argument.ident,
                format!(
                    "parameters `{}` and `{}` both have the argument name `{}`; rename one with `#[arg(rename = \"...\")]`",
                    first.ident, argument.ident, argument.wire_name
                ),
            );
        }
    }
}

/// Fills parameter descriptions from a `# Arguments` section; an entry
/// that names no parameter is an error.
fn apply_arguments_section(docs: &Docs, params: &mut [Param], cx: &mut Ctxt) {
    let mut described: Vec<String> = Vec::new();
    for entry in docs.arguments() {
        if described.contains(&entry.name) {
            cx.error_at(
                entry.span,
                format!(
                    "the `# Arguments` section describes `{}` twice: keep one entry",
                    entry.name
                ),
            );
            continue;
        }
        described.push(entry.name.clone());
        let found = params.iter_mut().find_map(|param| match param {
            Param::Argument(argument)
                if argument.wire_name == entry.name || argument.ident == entry.name.as_str() =>
            {
                Some(Some(argument))
            }
            Param::Injected(_) => None,
            Param::Argument(_) => None,
        });
        match found {
            Some(Some(argument)) => {
                if argument.description.is_none() {
                    argument.description = Some(entry.description);
                }
            }
            _ => {
                let names: Vec<String> = params
                    .iter()
                    .filter_map(|param| match param {
                        Param::Argument(argument) => Some(format!("`{}`", argument.wire_name)),
                        Param::Injected(_) => None,
                    })
                    .collect();
                let known = if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                };
                cx.error_at(
                    entry.span,
                    format!("the `# Arguments` section describes `{}`, but the tool has no such parameter (parameters: {known})", entry.name),
                );
            }
        }
    }
}

/// The tool's arguments struct, its tool type and the `Tool` impl.
/// `owner` is the impl's self type for method tools.
pub fn expand(tool: &ToolFn, owner: Option<&Type>) -> TokenStream {
    let krate = tool.options.krate();
    let private = krate.private();
    let vis = &tool.vis;
    let fn_ident = &tool.fn_ident;
    let tool_ident = tool.tool_ident();
    let args_ident = tool.args_ident();
    let tool_name = &tool.tool_name;
    let serde_crate = format!("{}::serde", private.path_string());
    let schemars_crate = format!("{}::schemars", private.path_string());

    let mut fields = Vec::new();
    let mut derived_fields = Vec::new();
    let mut field_idents = Vec::new();
    let mut field_types = Vec::new();
    let mut argument_types = Vec::new();
    let mut wire_names = Vec::new();
    let mut properties = Vec::new();
    let mut defaults = Vec::new();
    let mut assertions = Vec::new();
    let mut call_args = Vec::new();
    let args_var = Ident::new("__behest_args", Span::mixed_site());
    let context_var = Ident::new("__behest_context", Span::mixed_site());
    let defaults_var = Ident::new("__behest_defaults", Span::mixed_site());
    let has_cfgs = tool.cfgs.iter().any(|predicates| !predicates.is_empty());
    for (param, predicates) in tool.params.iter().zip(&tool.cfgs) {
        let cfg = (!predicates.is_empty()).then(|| quote!(#[cfg(all(#(#predicates),*))]));
        match param {
            Param::Argument(argument) => {
                let ident = &argument.ident;
                let ty = &argument.ty;
                let doc = argument.description.as_ref().map(|d| quote!(#[doc = #d]));
                let rename = argument.renamed.then(|| {
                    let wire = &argument.wire_name;
                    quote!(#[serde(rename = #wire)])
                });
                // A default is applied here, not by `#[serde(default)]`:
                // the field is an `Option` shown to schemars as the plain
                // type, and the default goes into the schema at build time.
                let (field_ty, schema_with, value) = match &argument.default {
                    None => (quote!(#ty), None, quote!(#args_var.#ident)),
                    Some(default) => {
                        let with = quote!(#ty).to_string();
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
                        (
                            quote!(::core::option::Option<#ty>),
                            Some(quote!(#[schemars(with = #with)])),
                            value,
                        )
                    }
                };
                derived_fields
                    .push(quote! { #cfg #doc #rename #schema_with pub #ident: #field_ty });
                fields.push(quote! { #doc pub #ident: #field_ty });
                // Both bounds are checked here, on the parameter's type, with
                // a message that names the fix.
                let wire = &argument.wire_name;
                let described = argument.description.as_deref().unwrap_or_default();
                properties.push(quote_spanned! {at(ty.span())=>
                    #private::schema::property::<#ty>(#wire, #described)
                });
                let assertion = quote_spanned! {at(ty.span())=>
                    #private::assert_argument_schema::<#ty>();
                };
                assertions.push(quote!(#cfg #assertion));
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

    let (tool_struct, function, self_arg) = match (owner, &tool.receiver) {
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
    };
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

    let parts = super::spec::parts(&tool.options, tool_name, &tool.description);
    let calls = configured_calls(&tool.cfgs, &call_args, make_call, &value);
    let body = quote! {
        use #private::dispatch::prelude::*;
        #calls
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
    // The text route (see `__private::invoke_text`) holds when every
    // argument type is plain and nothing changes what the typed parse
    // accepts: a default reads `null` where the schema refuses it, and
    // unknown arguments would be skipped without the depth limit.
    let deny = !tool.options.allow_unknown_arguments;
    let text_route = (deny && defaults.is_empty() && !has_cfgs).then(|| {
        quote! {
            fn plain_arguments(&self) -> ::core::option::Option<usize> {
                use #private::dispatch::prelude::*;
                (&#private::dispatch::Probe::<(#(#argument_types,)*)>::new()).__behest_plain()
            }
        }
    });
    // The schema refuses unknown arguments; so does the text route's parse.
    let deny_unknown = deny.then(|| quote!(#[serde(deny_unknown_fields)]));
    let result = quote!(#krate::ToolResult<#krate::ToolOutput>);
    let reads_context = (!injects).then(|| {
        quote!(
            const READS_CONTEXT: bool = false;
        )
    });
    let args_doc = format!("The arguments of the `{tool_name}` tool, as the model sends them.");
    let tool_doc = format!("The `{tool_name}` tool, made by `#[tool]` from `{fn_ident}`.");

    // Up to twelve arguments, the struct's `Deserialize` and `JsonSchema`
    // are short impls over generic code in `behest` (the same schema and
    // messages as the derives, for much less to compile per tool); past
    // that, the derives.
    // Configured parameters take the derives too, which honour `#[cfg]` on
    // fields.
    let (args_struct, args_impls, assertions) = if fields.len() <= 12 && !has_cfgs {
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
                    use #private::dispatch::prelude::*;
                    let (#(#field_idents,)*) = (&#private::dispatch::Probe::<(#(#field_types,)*)>::new())
                        .__behest_fields(#deserializer, #args_name, &[#(#wire_names),*], #deny)?;
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
        let struct_item = quote! {
            #[doc = #args_doc]
            #[derive(#private::serde::Deserialize, #private::schemars::JsonSchema)]
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
    };

    quote! {
        #args_struct

        #[doc = #tool_doc]
        #tool_struct

        const _: () = {
            #assertions

            #args_impls

            // `Tool` comes from the blanket impl over `TypedTool`: the
            // shared methods are compiled once, in `behest`.
            #[automatically_derived]
            impl #private::TypedTool for #tool_ident {
                type Arguments = #args_ident;

                const PARTS: #private::SpecParts = #parts;

                fn build_spec(&self) -> #krate::ToolSpec {
                    use #private::dispatch::prelude::*;
                    static SPEC: #private::OnceLock<#krate::ToolSpec> = #private::OnceLock::new();
                    SPEC.get_or_init(|| {
                        let #split = (&&#private::dispatch::Probe::<#output>::new()).__behest_split();
                        let #ok = #split.ok();
                        #[allow(unused_mut)]
                        let mut #defaults_var: #private::Vec<(&str, #private::serde_json::Value)> = #private::Vec::new();
                        #(#defaults)*
                        <Self as #private::TypedTool>::PARTS
                            .build::<#args_ident>((&&&#ok).__behest_output_schema(), &#defaults_var)
                    })
                    .clone()
                }

                #text_route
                #reads_context

                async fn run(
                    &self,
                    #args_var: #args_ident,
                    #context_pat: #krate::ToolContext,
                ) -> #result {
                    #body
                }
            }
        };
    }
}

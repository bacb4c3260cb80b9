//! The model of a tool function: its signature parsed and checked into a
//! [`ToolFn`], from which `expand::function` generates code. Every check
//! that the tokens allow happens here, so generation never fails.

use proc_macro2::TokenStream;
use quote::{format_ident, quote};
use syn::{FnArg, Ident, Pat, ReturnType, Signature, Type, Visibility};

use crate::internals::attr::{self, ParamDefault};
use crate::internals::case::{to_upper_camel, unraw};
use crate::internals::ctxt::Ctxt;
use crate::internals::doc::Docs;
use crate::internals::header::{Header, Kind};
use crate::internals::options::Options;
use crate::internals::valid;

/// A parameter the model sends: a property of the tool's input schema.
/// (Not to be confused with the attribute's options, `options.rs`, a
/// parameter's `#[arg(..)]` attributes, `attr.rs`, or the doc
/// comment's `# Arguments` section, `doc.rs`.)
pub struct SentParam {
    pub ident: Ident,
    pub ty: Type,
    pub wire_name: String,
    pub renamed: bool,
    pub description: Option<String>,
    pub default: Option<ParamDefault>,
}

/// A parameter of the function, in order.
pub enum Param {
    /// Sent by the model: a field of the arguments struct.
    Sent(SentParam),
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
    /// `schema = ".."`: the spec file whose schema the tool registers.
    pub spec_file: Option<crate::internals::spec_file::SpecFile>,
}

impl ToolFn {
    /// The generated tool type: `get_weather` -> `GetWeather`.
    pub fn tool_ident(&self) -> Ident {
        tool_ident(&self.fn_ident)
    }

    /// The generated arguments struct: `GetWeatherArgs`.
    pub fn args_ident(&self) -> Ident {
        format_ident!("{}Args", self.tool_ident())
    }
}

pub fn tool_ident(fn_ident: &Ident) -> Ident {
    format_ident!(
        "{}",
        to_upper_camel(&unraw(fn_ident)),
        span = fn_ident.span()
    )
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
    let plain_name = unraw(&fn_ident);

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

    let Header {
        tool_name,
        description,
        mut spec_file,
        docs,
    } = Header::resolve(
        &options,
        attrs,
        &fn_ident,
        plain_name.clone(),
        Kind::Tool,
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
                let (wire_name, renamed) = match &helpers.rename {
                    Some(rename) => (rename.value.clone(), true),
                    None => (unraw(&ident), false),
                };
                params.push(Param::Sent(SentParam {
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
            Param::Sent(argument) => &argument.ty,
            Param::Injected(ty) => ty,
        })
        .chain(std::iter::once(&output))
        .find_map(|ty| ident_in(&quote!(#ty), &tool_type));
    if let Some(clashing) = &clash {
        cx.error_spanned_by(
            clashing,
            format!(
                "`#[tool]` names this tool's type `{tool_type}` after the function `{fn_ident}`, which clashes with the type `{tool_type}` used here; rename the function (e.g. `{plain_name}_tool`, with `#[tool(name = \"{plain_name}\")]` to keep the tool's name) or the type"
            ),
        );
    }

    if let Some(file) = &mut spec_file {
        let arguments: Vec<crate::internals::spec_file::Argument<'_>> = params
            .iter()
            .zip(&cfgs)
            .filter_map(|(param, predicates)| match param {
                Param::Sent(sent) => Some(crate::internals::spec_file::Argument {
                    ident: &sent.ident,
                    rust_name: unraw(&sent.ident),
                    wire: sent.wire_name.clone(),
                    ty: &sent.ty,
                    defaulted: sent.default.is_some(),
                    configured: !predicates.is_empty(),
                    read_by_function: false,
                }),
                Param::Injected(_) => None,
            })
            .collect();
        file.check_arguments(
            &arguments,
            "parameter",
            "`#[arg(rename = \"...\")]`",
            &fn_ident,
            cx,
        );
    }

    ToolFn {
        spec_file,
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
    let arguments: Vec<&SentParam> = params
        .iter()
        .filter_map(|param| match param {
            Param::Sent(argument) => Some(argument),
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
    for entry in docs.arguments_section() {
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
            Param::Sent(argument)
                if argument.wire_name == entry.name || argument.ident == entry.name.as_str() =>
            {
                Some(Some(argument))
            }
            Param::Injected(_) => None,
            Param::Sent(_) => None,
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
                        Param::Sent(argument) => Some(format!("`{}`", argument.wire_name)),
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

//! The checked model of a `#[tools]` impl block: an inherent, non-generic
//! impl whose `#[tool]` methods are read as tools, `Self` in their
//! signatures replaced by the impl's type.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ImplItem, ItemImpl, Type};

use crate::internals::ast::{self, Param, ToolFn};
use crate::internals::ctxt::Ctxt;
use crate::internals::options::{self, Options, Target};

/// A `#[tools]` impl block, its `#[tool]` attributes taken off its methods.
pub struct ToolsImpl {
    /// The impl block, to emit as it is.
    pub item: ItemImpl,
    /// The type the tools share.
    pub self_ty: Type,
    /// Its tool methods, in order.
    pub tools: Vec<ToolFn>,
}

/// Reads `item`'s tool methods with the block's `options`, every problem
/// going to `cx`.
pub fn analyse(item: ItemImpl, options: &Options, cx: &mut Ctxt) -> ToolsImpl {
    if let Some((path, _)) = &item.trait_ {
        cx.error_spanned_by(
            path,
            "`#[tools]` applies to an inherent impl block, not a trait impl",
        );
    }
    if !item.generics.params.is_empty() {
        cx.error_spanned_by(
            &item.generics,
            "`#[tools]` cannot be generic: each tool needs one concrete schema",
        );
    }
    let self_ty = (*item.self_ty).clone();
    let mut tools = Vec::new();
    let mut item = item;
    for impl_item in &mut item.items {
        let ImplItem::Fn(method) = impl_item else {
            continue;
        };
        let Some(position) = method.attrs.iter().position(is_tool_attribute) else {
            continue;
        };
        let attr = method.attrs.remove(position);
        let tokens = match &attr.meta {
            syn::Meta::Path(_) => TokenStream::new(),
            syn::Meta::List(list) => list.tokens.clone(),
            syn::Meta::NameValue(nv) => {
                cx.error_spanned_by(nv, "write `#[tool]` or `#[tool(...)]`");
                continue;
            }
        };
        let mut method_options = options::parse(tokens, Target::Function, cx);
        if method_options.krate.is_none() {
            method_options.krate.clone_from(&options.krate);
        }
        let tool = ast::analyse(
            &mut method.sig,
            &method.attrs,
            &method.vis,
            method_options,
            true,
            cx,
        );
        tools.push(replace_self(tool, &self_ty));
    }
    if tools.is_empty() && !cx.has_errors() {
        cx.error_spanned_by(
            &item.self_ty,
            "this `#[tools]` impl block has no tools: mark methods with `#[tool]`, or remove `#[tools]`",
        );
    }
    ToolsImpl {
        item,
        self_ty,
        tools,
    }
}

/// `#[tools]` on an item that is not an impl block: one error on its
/// first token.
pub fn not_an_impl_block(item: &syn::Item, cx: &mut Ctxt) {
    cx.error_spanned_by(
        crate::internals::valid::first_token(item),
        "`#[tools]` applies to an inherent impl block, like `#[tools] impl MyTools { ... }`",
    );
}

/// `#[tool]`, `#[behest::tool]`, `#[::behest::tool]` or the tool attribute
/// through a renamed crate: a path whose last segment is `tool`.
fn is_tool_attribute(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .last()
        .is_some_and(|segment| segment.ident == "tool")
}

/// The generated items live outside the impl block, where `Self` means
/// nothing (or the tool type): `Self` in argument and return types becomes
/// the impl's type, as serde_derive does for its generated code.
fn replace_self(mut tool: ToolFn, self_ty: &syn::Type) -> ToolFn {
    for param in &mut tool.params {
        match param {
            Param::Sent(argument) => {
                argument.ty = with_self_as(&argument.ty, self_ty);
            }
            Param::Injected(ty) => *ty = with_self_as(ty, self_ty),
        }
    }
    tool.output = with_self_as(&tool.output, self_ty);
    tool
}

fn with_self_as(ty: &syn::Type, self_ty: &syn::Type) -> syn::Type {
    let replaced = replace_self_tokens(quote!(#ty), self_ty);
    syn::parse2(replaced).unwrap_or_else(|_| ty.clone())
}

fn replace_self_tokens(tokens: TokenStream, self_ty: &syn::Type) -> TokenStream {
    use proc_macro2::TokenTree;
    tokens
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Ident(ident) if ident == "Self" => {
                let mut ty = quote!(#self_ty);
                // Keep the span of the written `Self`, for errors.
                ty = ty
                    .into_iter()
                    .map(|mut tree| {
                        tree.set_span(ident.span());
                        tree
                    })
                    .collect();
                quote!(#ty)
            }
            TokenTree::Group(group) => {
                let mut replaced = proc_macro2::Group::new(
                    group.delimiter(),
                    replace_self_tokens(group.stream(), self_ty),
                );
                replaced.set_span(group.span());
                TokenTree::Group(replaced).into()
            }
            other => other.into(),
        })
        .collect()
}

//! `#[tools]` on an impl block: its `#[tool]` methods become tools sharing
//! one `Arc<Self>`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{ImplItem, ItemImpl};

use super::function;
use crate::fallback;
use crate::internals::ctxt::Ctxt;
use crate::internals::options::{self, Target};

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = options::parse(args, Target::ImplBlock, &mut cx);
    let mut item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let error = syn::Error::new_spanned(
                crate::internals::valid::first_token(&match syn::parse2::<syn::Item>(input.clone()) {
                    Ok(item) => item,
                    Err(error) => return error.to_compile_error(),
                }),
                "`#[tools]` applies to an inherent impl block, like `#[tools] impl MyTools { ... }`",
            )
            .to_compile_error();
            return quote!(#error #input);
        }
    };
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
        let mut method_options = options::parse(tokens, Target::Function, &mut cx);
        if method_options.krate.is_none() {
            method_options.krate.clone_from(&options.krate);
        }
        let tool = crate::internals::ast::analyse(
            &mut method.sig,
            &method.attrs,
            &method.vis,
            method_options,
            true,
            &mut cx,
        );
        tools.push(replace_self(tool, &self_ty));
    }
    if tools.is_empty() && !cx.has_errors() {
        cx.error_spanned_by(
            &item.self_ty,
            "this `#[tools]` impl block has no tools: mark methods with `#[tool]`, or remove `#[tools]`",
        );
    }
    let krate = options.krate();
    if cx.has_errors() {
        let errors = cx.into_compile_errors();
        let stubs = tools
            .iter()
            .filter(|tool| !tool.name_clash)
            .map(|tool| fallback::stub_tool(&krate, &tool.vis, &tool.tool_ident(), Some(&self_ty)));
        return quote!(#errors #item #(#stubs)*);
    }
    let generated = tools
        .iter()
        .map(|tool| function::expand(tool, Some(&self_ty)));
    let tool_idents = tools.iter().map(|tool| tool.tool_ident());
    let list_doc = format!(
        "The tools of this type ({}), sharing `self`: register them with `ToolRegistry::register_all`.",
        tools.iter().map(|tool| format!("`{}`", tool.tool_name)).collect::<Vec<_>>().join(", ")
    );
    quote! {
        #item
        #(#generated)*

        impl #self_ty {
            #[doc = #list_doc]
            pub fn tools(
                self: #krate::__private::Arc<Self>,
            ) -> ::std::vec::Vec<#krate::__private::Arc<dyn #krate::Tool>> {
                ::std::vec![
                    #(#krate::__private::Arc::new(#tool_idents(::core::clone::Clone::clone(&self))) as #krate::__private::Arc<dyn #krate::Tool>),*
                ]
            }
        }
    }
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
fn replace_self(
    mut tool: crate::internals::ast::ToolFn,
    self_ty: &syn::Type,
) -> crate::internals::ast::ToolFn {
    for param in &mut tool.params {
        match param {
            crate::internals::ast::Param::Sent(argument) => {
                argument.ty = with_self_as(&argument.ty, self_ty);
            }
            crate::internals::ast::Param::Injected(ty) => *ty = with_self_as(ty, self_ty),
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

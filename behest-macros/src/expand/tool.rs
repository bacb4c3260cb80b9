//! `#[tool]` on a function.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Item;

use super::function;
use crate::args::{self, Target};
use crate::ctxt::Ctxt;
use crate::fallback;

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = args::parse(args, Target::Function, &mut cx);
    let item: Item = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(error) => {
            // Not an item rustc accepts: let it say why, next to our error.
            let error = error.to_compile_error();
            return quote!(#error #input);
        }
    };
    let mut item_fn = match item {
        Item::Fn(item_fn) => item_fn,
        other => {
            cx.error_spanned_by(
                first_token(&other),
                "`#[tool]` applies to functions (`fn` or `async fn`); for a struct of arguments of a tool that runs elsewhere use `#[external_tool]`",
            );
            let errors = cx.into_compile_errors();
            return quote!(#errors #other);
        }
    };
    let tool = function::analyse(
        &mut item_fn.sig,
        &item_fn.attrs,
        &item_fn.vis,
        options,
        false,
        &mut cx,
    );
    if cx.has_errors() {
        let errors = cx.into_compile_errors();
        // A method (it has `self`) sits in an impl block, where a stub
        // struct cannot go.
        let stub = item_fn.sig.receiver().is_none().then(|| {
            fallback::stub_tool(&tool.options.krate(), &tool.vis, &tool.tool_ident(), None)
        });
        return quote!(#errors #item_fn #stub);
    }
    let generated = function::expand(&tool, None);
    quote!(#item_fn #generated)
}

/// The item's first token, where "this is the wrong kind of item" belongs.
pub fn first_token(item: &Item) -> TokenStream {
    item.to_token_stream().into_iter().find(|token| {
        // Skip attributes (`#` and their bracket group) and visibility.
        !matches!(token, proc_macro2::TokenTree::Punct(p) if p.as_char() == '#')
            && !matches!(token, proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Bracket)
            && !matches!(token, proc_macro2::TokenTree::Ident(i) if i == "pub")
            && !matches!(token, proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
    })
    .map(ToTokens::into_token_stream)
    .unwrap_or_default()
}

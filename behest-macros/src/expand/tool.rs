//! `#[tool]` on a function.

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::parse::{Parse, ParseStream};
use syn::{Attribute, Item, Signature, Visibility};

use super::function;
use crate::fallback;
use crate::internals::ctxt::Ctxt;
use crate::internals::options::{self, Target};

/// A function whose body is kept as tokens: the body is never needed, and
/// not parsing it keeps every build that re-runs the macro fast.
struct BodylessFn {
    attrs: Vec<Attribute>,
    vis: Visibility,
    sig: Signature,
    body: TokenStream,
}

impl Parse for BodylessFn {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig = input.parse()?;
        if !input.peek(syn::token::Brace) {
            return Err(input.error("expected a function body"));
        }
        let body = input.parse()?;
        Ok(Self {
            attrs,
            vis,
            sig,
            body,
        })
    }
}

impl ToTokens for BodylessFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        for attr in &self.attrs {
            attr.to_tokens(tokens);
        }
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        self.body.to_tokens(tokens);
    }
}

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = options::parse(args, Target::Function, &mut cx);
    let mut item_fn: BodylessFn = match syn::parse2(input.clone()) {
        Ok(item_fn) => item_fn,
        Err(_) => return not_a_function(cx, input),
    };
    let tool = crate::internals::ast::analyse(
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
        // Nor where the name is taken by the user's own type.
        let stub = (item_fn.sig.receiver().is_none() && !tool.name_clash).then(|| {
            fallback::stub_tool(&tool.options.krate(), &tool.vis, &tool.tool_ident(), None)
        });
        return quote!(#errors #item_fn #stub);
    }
    let generated = function::expand(&tool, None);
    quote!(#item_fn #generated)
}

/// The input is not a function: say so on its first token, and emit it.
fn not_a_function(mut cx: Ctxt, input: TokenStream) -> TokenStream {
    match syn::parse2::<Item>(input.clone()) {
        Ok(item) => {
            crate::internals::valid::not_a_function(&item, &mut cx);
            let errors = cx.into_compile_errors();
            quote!(#errors #item)
        }
        Err(error) => {
            // Not an item rustc accepts: let it say why, next to our error.
            let error = error.to_compile_error();
            quote!(#error #input)
        }
    }
}

//! `#[tools]` on an impl block: its `#[tool]` methods become tools sharing
//! one `Arc<Self>`. The block is read and checked in
//! `internals::impl_block`; this file only emits.

use proc_macro2::TokenStream;
use quote::quote;
use syn::ItemImpl;

use super::function;
use crate::fallback;
use crate::internals::ctxt::Ctxt;
use crate::internals::impl_block::{self, ToolsImpl};
use crate::internals::options::{self, Target};

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let options = options::parse(args, Target::ImplBlock, &mut cx);
    let item: ItemImpl = match syn::parse2(input.clone()) {
        Ok(item) => item,
        Err(_) => {
            let item = match syn::parse2::<syn::Item>(input.clone()) {
                Ok(item) => item,
                Err(error) => return error.to_compile_error(),
            };
            impl_block::not_an_impl_block(&item, &mut cx);
            let errors = cx.into_compile_errors();
            return quote!(#errors #input);
        }
    };
    let ToolsImpl {
        item,
        self_ty,
        tools,
    } = impl_block::analyse(item, &options, &mut cx);
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

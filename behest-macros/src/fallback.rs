//! What is emitted when the input has errors: the user's item as written
//! (minus consumed helper attributes), the errors, and a stub tool type, so
//! that one mistake shows as one error and not as a cascade of "not found".

use proc_macro2::{Ident, TokenStream};
use quote::quote;

/// A tool type that compiles whatever the errors were.
pub fn stub_tool(
    krate: &crate::tokens::Tokens,
    vis: &syn::Visibility,
    ident: &Ident,
    owner: Option<&syn::Type>,
) -> TokenStream {
    let body = match owner {
        Some(owner) => quote!(#vis struct #ident(pub #krate::__private::Arc<#owner>);),
        None => quote!(#vis struct #ident;),
    };
    quote! {
        #body
        impl #krate::Tool for #ident {
            fn name(&self) -> &str {
                ""
            }
            fn spec(&self) -> #krate::ToolSpec {
                #krate::ToolSpec::new("", "", #krate::__private::serde_json::Value::Null)
            }
            async fn execute(
                &self,
                _arguments: #krate::__private::serde_json::Value,
            ) -> #krate::ToolResult<#krate::ToolOutput> {
                ::core::result::Result::Err(#krate::ToolError::NotImplemented)
            }
        }
    }
}

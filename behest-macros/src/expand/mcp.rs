//! `#[resource]` and `#[prompt]` on a function: the function stays as
//! written, and a unit type named after it (`fn order` gives `Order`)
//! converts into a `behest::mcp::Resource` or `Prompt` that calls it.

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::ItemFn;

use crate::internals::ctxt::Ctxt;
use crate::internals::mcp_item::{self, Kind, McpItem};

pub fn expand(kind: Kind, args: TokenStream, input: TokenStream) -> TokenStream {
    let mut cx = Ctxt::default();
    let mut function: ItemFn = match syn::parse2(input.clone()) {
        Ok(function) => function,
        Err(_) => {
            let what = match kind {
                Kind::Resource => "`#[resource]` goes on a function that reads the resource",
                Kind::Prompt => "`#[prompt]` goes on a function that makes the prompt's messages",
            };
            let first = input.clone().into_iter().next();
            let error = syn::Error::new(
                first.map_or_else(proc_macro2::Span::call_site, |t| t.span()),
                what,
            );
            let error = error.to_compile_error();
            return quote!(#error #input);
        }
    };
    let item = mcp_item::analyse(
        kind,
        args,
        &mut function.sig,
        &function.attrs,
        &function.vis,
        &mut cx,
    );
    if cx.has_errors() {
        // The function as written, and the type, so that one mistake is
        // one error; a template's own check beside the others. A method
        // sits in an impl block, where no type can go.
        let errors = cx.into_compile_errors();
        if function.sig.receiver().is_some() {
            return quote!(#errors #function);
        }
        let stub = stub(&item);
        let check = template_check(&item);
        return quote!(#errors #function #stub const _: () = { #check };);
    }
    let generated = match kind {
        Kind::Resource => resource(&item),
        Kind::Prompt => prompt(&item),
    };
    quote!(#function #generated)
}

/// The type the function's resource or prompt is made from, and its doc.
fn type_of(item: &McpItem) -> TokenStream {
    let (vis, ident, function) = (&item.vis, &item.ident, &item.function);
    let (what, into) = match item.kind {
        Kind::Resource => ("resource", "Resource"),
        Kind::Prompt => ("prompt", "Prompt"),
    };
    let doc = format!(
        "The MCP {what} `{}` that `{function}` makes: `behest::mcp::{into}::from({ident})`, or give it to `McpCatalog::{what}`.",
        item.name
    );
    quote! {
        #[doc = #doc]
        #[derive(::core::clone::Clone, ::core::marker::Copy, ::core::fmt::Debug, ::core::default::Default)]
        #vis struct #ident;
    }
}

/// The type alone, converting into an empty resource or prompt: what is
/// emitted beside the errors.
fn stub(item: &McpItem) -> TokenStream {
    let krate = item.krate();
    let ident = &item.ident;
    let body = match item.kind {
        Kind::Resource => quote! {
            #krate::mcp::Resource::new("", "", |_| async {
                ::core::result::Result::Err(#krate::ToolError::NotImplemented)
            })
        },
        Kind::Prompt => quote! {
            #krate::mcp::Prompt::new("", "", |_| async {
                ::core::result::Result::Err(#krate::ToolError::NotImplemented)
            })
        },
    };
    let into = match item.kind {
        Kind::Resource => quote!(#krate::mcp::Resource),
        Kind::Prompt => quote!(#krate::mcp::Prompt),
    };
    let ty = type_of(item);
    quote! {
        #ty
        #[automatically_derived]
        impl ::core::convert::From<#ident> for #into {
            fn from(_: #ident) -> Self {
                #body
            }
        }
    }
}

/// The local that holds parameter `at`'s value: a name of the macro's
/// own, so that no parameter named like the function hides it.
fn local(at: usize) -> syn::Ident {
    syn::Ident::new(&format!("__behest_{at}"), proc_macro2::Span::mixed_site())
}

/// The call of the user's function, awaited when it is async.
fn call(item: &McpItem) -> TokenStream {
    let function = &item.function;
    let args = (0..item.params.len()).map(local);
    let call = quote!(#function(#(#args),*));
    if item.is_async {
        quote!(#call.await)
    } else {
        call
    }
}

fn resource(item: &McpItem) -> TokenStream {
    let krate = item.krate();
    let private = krate.private();
    let ident = &item.ident;
    let uri = item
        .uri
        .as_ref()
        .map(ToTokens::to_token_stream)
        .unwrap_or_default();
    let name = &item.name;
    let read = syn::Ident::new("__behest_read", proc_macro2::Span::mixed_site());
    let variables = item.params.iter().enumerate().map(|(at, param)| {
        let (local, ty, name) = (local(at), &param.ty, &param.name);
        // At the type: a type that does not parse from text is its error.
        quote_spanned! {ty.span()=>
            let #local: #ty = #private::mcp::variable(&#read, #name)?;
        }
    });
    let call = call(item);
    let check = template_check(item);
    let description = &item.description;
    let description = (!description.is_empty()).then(|| quote!(.description(#description)));
    let title = item.title.as_ref().map(|title| quote!(.title(#title)));
    let media_type = item
        .mime_type
        .as_ref()
        .map(|mime| quote!(.media_type(#mime)));
    let ty = type_of(item);
    quote! {
        #ty
        const _: () = {
            #check
            #[automatically_derived]
            impl ::core::convert::From<#ident> for #krate::mcp::Resource {
                fn from(_: #ident) -> Self {
                    #private::mcp::resource(#uri, #name, |#read: #krate::mcp::ResourceRead| async move {
                        #(#variables)*
                        #private::mcp::IntoResourceContent::into_resource_content(#call)
                    })
                    #description
                    #title
                    #media_type
                }
            }
        };
    }
}

/// For a template, a constant that fails the build at the URI's literal
/// when the template cannot be matched.
fn template_check(item: &McpItem) -> Option<TokenStream> {
    let uri = item.uri.as_ref().filter(|_| item.is_template())?;
    let private = item.krate().private();
    Some(quote_spanned!(uri.span()=> const _: () = #private::mcp::check_uri_template(#uri);))
}

fn prompt(item: &McpItem) -> TokenStream {
    let krate = item.krate();
    let private = krate.private();
    let ident = &item.ident;
    let name = &item.name;
    let arguments = syn::Ident::new("__behest_arguments", proc_macro2::Span::mixed_site());
    let taken = item.params.iter().enumerate().map(|(at, param)| {
        let (local, ty, name) = (local(at), &param.ty, &param.name);
        quote_spanned! {ty.span()=>
            let #local: #ty = <#ty as #private::mcp::PromptArgument>::from_argument(#arguments.remove(#name));
        }
    });
    let declared = item.params.iter().map(|param| {
        let (ty, name) = (&param.ty, &param.name);
        let description = param.description.clone().unwrap_or_default();
        quote_spanned! {ty.span()=>
            .argument(#name, #description, <#ty as #private::mcp::PromptArgument>::REQUIRED)
        }
    });
    let call = call(item);
    let description = &item.description;
    let title = item.title.as_ref().map(|title| quote!(.title(#title)));
    let ty = type_of(item);
    // Taken from only when there is something to take.
    let binding = if item.params.is_empty() {
        quote!(_)
    } else {
        quote!(mut #arguments)
    };
    quote! {
        #ty
        const _: () = {
            #[automatically_derived]
            impl ::core::convert::From<#ident> for #krate::mcp::Prompt {
                fn from(_: #ident) -> Self {
                    #private::mcp::prompt(#name, #description, |#binding: #krate::mcp::PromptArguments| async move {
                        #(#taken)*
                        #private::mcp::IntoPromptMessages::into_prompt_messages(#call)
                    })
                    #(#declared)*
                    #title
                }
            }
        };
    }
}

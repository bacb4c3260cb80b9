//! Checks on what the tokens tell: names, parameter shapes and types.

use proc_macro2::Span;
use syn::visit::Visit;
use syn::{GenericArgument, Type};

use crate::internals::ctxt::Ctxt;

/// The longest tool name every provider accepts.
const MAX_NAME_LEN: usize = 64;

/// Checks a tool name against `^[a-zA-Z0-9_-]{1,64}$`.
pub fn check_name(name: &str, span: Span, cx: &mut Ctxt) {
    if name.is_empty() {
        cx.error_at(span, "a tool name cannot be empty");
    } else if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        cx.error_at(
            span,
            format!("invalid tool name `{name}`: {bad:?} is not allowed; use ASCII letters, digits, `_` and `-` (the characters every provider accepts)"),
        );
    } else if name.len() > MAX_NAME_LEN {
        cx.error_at(
            span,
            format!("tool name `{name}` is {} characters long; providers accept at most {MAX_NAME_LEN}: set a shorter `name = \"...\"`", name.len()),
        );
    }
}

/// Refuses types an argument cannot have: borrowed types (the arguments
/// are deserialized from the model's JSON into owned values) and
/// `impl Trait` (a schema needs one concrete type).
pub fn check_argument_type(ty: &Type, cx: &mut Ctxt) {
    let mut checker = TypeChecker { cx };
    checker.visit_type(ty);
}

/// Refuses `impl Trait` in a type.
pub fn check_no_impl_trait(ty: &Type, what: &str, cx: &mut Ctxt) {
    let mut finder = ImplTraitFinder { found: None };
    finder.visit_type(ty);
    if let Some(span_holder) = finder.found {
        cx.error_spanned_by(
            span_holder,
            format!("{what} cannot be `impl Trait`: a tool needs a concrete type; name the type"),
        );
    }
}

struct TypeChecker<'a> {
    cx: &'a mut Ctxt,
}

impl<'ast> Visit<'ast> for TypeChecker<'_> {
    fn visit_type_reference(&mut self, reference: &'ast syn::TypeReference) {
        let suggestion = match &*reference.elem {
            Type::Path(path) if path.path.is_ident("str") => "use `String`".to_owned(),
            Type::Slice(slice) => {
                let elem = &slice.elem;
                format!(
                    "use `Vec<{}>`",
                    quote::quote!(#elem).to_string().replace(' ', "")
                )
            }
            other => format!(
                "use the owned type `{}`",
                quote::quote!(#other).to_string().replace(' ', "")
            ),
        };
        self.cx.error_spanned_by(
            reference,
            format!("a tool argument cannot be borrowed: arguments are deserialized from the model's JSON into owned values; {suggestion}"),
        );
    }

    fn visit_type_impl_trait(&mut self, impl_trait: &'ast syn::TypeImplTrait) {
        self.cx.error_spanned_by(
            impl_trait,
            "a tool argument cannot be `impl Trait`: its JSON Schema needs one concrete type; name the type",
        );
    }

    fn visit_generic_argument(&mut self, argument: &'ast GenericArgument) {
        if let GenericArgument::Lifetime(lifetime) = argument {
            self.cx.error_spanned_by(
                lifetime,
                "a tool argument cannot borrow: arguments are deserialized from the model's JSON into owned values; use an owned type",
            );
            return;
        }
        syn::visit::visit_generic_argument(self, argument);
    }
}

struct ImplTraitFinder {
    found: Option<syn::TypeImplTrait>,
}

impl<'ast> Visit<'ast> for ImplTraitFinder {
    fn visit_type_impl_trait(&mut self, impl_trait: &'ast syn::TypeImplTrait) {
        if self.found.is_none() {
            self.found = Some(impl_trait.clone());
        }
    }
}

/// The item's first token, where "this is the wrong kind of item" belongs.
pub fn first_token(item: &syn::Item) -> proc_macro2::TokenStream {
    quote::ToTokens::to_token_stream(item).into_iter().find(|token| {
        // Skip attributes (`#` and their bracket group) and visibility.
        !matches!(token, proc_macro2::TokenTree::Punct(p) if p.as_char() == '#')
            && !matches!(token, proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Bracket)
            && !matches!(token, proc_macro2::TokenTree::Ident(i) if i == "pub")
            && !matches!(token, proc_macro2::TokenTree::Group(g) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
    })
    .map(quote::ToTokens::into_token_stream)
    .unwrap_or_default()
}

/// `#[tool]` on an item that is not a function: one error on its first
/// token.
pub fn not_a_function(item: &syn::Item, cx: &mut Ctxt) {
    cx.error_spanned_by(
        first_token(item),
        "`#[tool]` applies to functions (`fn` or `async fn`); for a struct of arguments of a tool that runs elsewhere use `#[external_tool]`",
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn errors(ty: Type) -> String {
        let mut cx = Ctxt::default();
        check_argument_type(&ty, &mut cx);
        cx.into_compile_errors().to_string()
    }

    #[test]
    fn borrowed_types_get_an_owned_suggestion() {
        assert!(errors(parse_quote!(&str)).contains("use `String`"));
        assert!(errors(parse_quote!(Option<&'static [u8]>)).contains("use `Vec<u8>`"));
        assert!(errors(parse_quote!(std::borrow::Cow<'a, str>)).contains("cannot borrow"));
        assert!(errors(parse_quote!(impl Into<String>)).contains("impl Trait"));
        assert_eq!(errors(parse_quote!(Vec<Option<String>>)), "");
    }

    #[test]
    fn names() {
        let mut cx = Ctxt::default();
        check_name("get_weather-2", Span::call_site(), &mut cx);
        assert!(!cx.has_errors());
        for bad in ["", "a.b", "météo", &"a".repeat(65)] {
            let mut cx = Ctxt::default();
            check_name(bad, Span::call_site(), &mut cx);
            assert!(cx.has_errors(), "{bad}");
        }
    }
}

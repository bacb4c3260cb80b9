//! The checked model of an MCP resource or prompt function
//! (`#[resource]`, `#[prompt]`): its attribute's arguments, its parameters
//! (a template's variables, a prompt's arguments) and its doc comments,
//! with every rule that ties them together checked in one pass.

use proc_macro2::{Span, TokenStream};
use syn::{FnArg, Ident, LitStr, Pat, Path, Signature, Type, Visibility};

use crate::internals::case;
use crate::internals::ctxt::Ctxt;
use crate::internals::doc::Docs;

/// Which macro.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Resource,
    Prompt,
}

impl Kind {
    fn attribute(self) -> &'static str {
        match self {
            Self::Resource => "#[resource]",
            Self::Prompt => "#[prompt]",
        }
    }

    fn keys(self) -> &'static [&'static str] {
        match self {
            Self::Resource => &["name", "title", "description", "mime_type", "crate"],
            Self::Prompt => &["name", "title", "description", "crate"],
        }
    }
}

/// A parameter: a template's variable, or a prompt's argument.
pub struct Param {
    pub ident: Ident,
    /// Its name on the wire (the identifier, raw prefix dropped).
    pub name: String,
    pub ty: Type,
    /// Its doc comment, for a prompt's argument.
    pub description: Option<String>,
}

/// A resource or prompt function, read and checked.
pub struct McpItem {
    pub kind: Kind,
    /// A resource's URI or URI template, as written.
    pub uri: Option<LitStr>,
    pub name: String,
    pub title: Option<String>,
    pub mime_type: Option<String>,
    /// The description: `description = ".."`, or the doc comments.
    pub description: TokenStream,
    pub krate: Option<Path>,
    pub vis: Visibility,
    pub function: Ident,
    /// The type the macro makes: the function's name in UpperCamelCase.
    pub ident: Ident,
    pub is_async: bool,
    pub params: Vec<Param>,
}

impl McpItem {
    /// The path to the `behest` crate in generated code.
    pub fn krate(&self) -> crate::tokens::Tokens {
        match &self.krate {
            Some(path) => quote::quote!(#path),
            None => quote::quote!(::behest),
        }
        .into()
    }

    /// Whether the resource is at the URIs of a template: its URI has an
    /// expression, or a brace of one. Such a URI is checked when the crate
    /// builds, by the rules `UriTemplate::parse` follows.
    pub fn is_template(&self) -> bool {
        self.uri
            .as_ref()
            .is_some_and(|uri| uri.value().contains(['{', '}']))
    }
}

/// The variables named in `template`'s expressions (`{id}`, `{+path}`), in
/// order; `None` when an expression is not one that names a variable (an
/// unclosed brace, an operator, a bad name): the check when the crate
/// builds says what is wrong with it.
pub fn template_variables(template: &str) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find(['{', '}']) {
        if rest[open..].starts_with('}') {
            return None;
        }
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let expression = &after[..close];
        let name = expression.strip_prefix('+').unwrap_or(expression);
        let is_name = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        if !is_name {
            return None;
        }
        names.push(name.to_owned());
        rest = &after[close + 1..];
    }
    Some(names)
}

/// Reads the attribute's arguments (`args`) and the function (`sig`,
/// whose parameters' doc comments it takes away), recording every problem
/// in `cx`.
pub fn analyse(
    kind: Kind,
    args: TokenStream,
    sig: &mut Signature,
    attrs: &[syn::Attribute],
    vis: &Visibility,
    cx: &mut Ctxt,
) -> McpItem {
    let function = sig.ident.clone();
    let mut item = McpItem {
        kind,
        uri: None,
        name: case::unraw(&function),
        title: None,
        mime_type: None,
        description: TokenStream::new(),
        krate: None,
        vis: vis.clone(),
        ident: Ident::new(
            &case::to_upper_camel(&case::unraw(&function)),
            function.span(),
        ),
        function,
        is_async: sig.asyncness.is_some(),
        params: Vec::new(),
    };
    let mut description = None;
    parse_args(kind, args, &mut item, &mut description, cx);
    if kind == Kind::Resource && item.uri.is_none() {
        cx.error_at(
            Span::call_site(),
            "`#[resource]` needs its URI first: `#[resource(\"docs://readme\")]`, or a template `#[resource(\"orders://{id}\")]`",
        );
    }
    item.params = params(sig, cx);
    let docs = Docs::collect(attrs);
    item.description = match description {
        Some(description) => quote::quote!(#description),
        None if docs.is_empty() => {
            if kind == Kind::Prompt {
                cx.error_spanned_by(
                    &sig.ident,
                    "a prompt needs a description: write a doc comment (`/// ...`) or `#[prompt(description = \"...\")]`",
                );
            }
            TokenStream::new()
        }
        None => docs.description(),
    };
    if let Some(generics) = sig.generics.params.first() {
        cx.error_spanned_by(
            generics,
            format!("{} functions cannot be generic", kind.attribute()),
        );
    }
    if kind == Kind::Resource {
        check_variables(&item, cx);
    }
    item
}

/// The attribute's arguments: a resource's URI first, then `key = value`.
fn parse_args(
    kind: Kind,
    args: TokenStream,
    item: &mut McpItem,
    description: &mut Option<String>,
    cx: &mut Ctxt,
) {
    let mut seen: Vec<String> = Vec::new();
    let parser = |input: syn::parse::ParseStream<'_>| -> syn::Result<()> {
        if kind == Kind::Resource && input.peek(LitStr) {
            item.uri = Some(input.parse()?);
            if input.is_empty() {
                return Ok(());
            }
            input.parse::<syn::Token![,]>()?;
        }
        while !input.is_empty() {
            let key: Path = input.call(Path::parse_mod_style)?;
            input.parse::<syn::Token![=]>()?;
            let shown = quote::ToTokens::to_token_stream(&key)
                .to_string()
                .replace(' ', "");
            if !kind.keys().contains(&shown.as_str()) {
                let _: syn::Expr = input.parse()?;
                cx.error_spanned_by(
                    &key,
                    format!(
                        "unknown {} argument `{shown}`; {}valid arguments are: {}",
                        kind.attribute(),
                        crate::internals::suggest::hint(&shown, kind.keys()),
                        kind.keys()
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            } else if seen.contains(&shown) {
                let _: syn::Expr = input.parse()?;
                cx.error_spanned_by(&key, format!("duplicate argument `{shown}`: give it once"));
            } else if shown == "crate" {
                item.krate = Some(input.parse()?);
            } else {
                let value: LitStr = input.parse()?;
                match shown.as_str() {
                    "name" => item.name = value.value(),
                    "title" => item.title = Some(value.value()),
                    "mime_type" => item.mime_type = Some(value.value()),
                    _ => *description = Some(value.value()),
                }
            }
            seen.push(shown);
            if !input.is_empty() {
                input.parse::<syn::Token![,]>()?;
            }
        }
        Ok(())
    };
    if let Err(error) = syn::parse::Parser::parse2(parser, args) {
        cx.push(error);
    }
}

/// The function's parameters, each a plain name with a type; their doc
/// comments taken away (rustc refuses them on parameters) and kept.
fn params(sig: &mut Signature, cx: &mut Ctxt) -> Vec<Param> {
    let mut params = Vec::new();
    for input in &mut sig.inputs {
        let FnArg::Typed(typed) = input else {
            cx.error_spanned_by(
                &*input,
                "a resource or prompt is a free function: it takes no `self`",
            );
            continue;
        };
        let docs = Docs::collect(&typed.attrs);
        typed.attrs.retain(|attr| !attr.path().is_ident("doc"));
        let Pat::Ident(pat) = &*typed.pat else {
            cx.error_spanned_by(
                &typed.pat,
                "name this parameter (`id: String`): its name is what the client gives",
            );
            continue;
        };
        params.push(Param {
            ident: pat.ident.clone(),
            name: case::unraw(&pat.ident),
            ty: (*typed.ty).clone(),
            description: docs.text(),
        });
    }
    params
}

/// A resource's parameters are its template's variables, one for one.
fn check_variables(item: &McpItem, cx: &mut Ctxt) {
    let Some(uri) = &item.uri else { return };
    // A template that does not name its variables rightly is said so by
    // the check the expansion emits.
    let Some(variables) = template_variables(&uri.value()) else {
        return;
    };
    for variable in &variables {
        if variable.contains('.') {
            cx.error_spanned_by(
                uri,
                format!(
                    "the variable `{variable}` cannot be a parameter's name: name a `#[resource]`'s variables with letters, digits and `_`"
                ),
            );
            continue;
        }
        if !item.params.iter().any(|param| &param.name == variable) {
            cx.error_spanned_by(
                uri,
                format!(
                    "the URI template's variable `{variable}` has no parameter: add `{variable}: String` to `fn {}`",
                    item.function
                ),
            );
        }
    }
    for param in &item.params {
        if !variables.contains(&param.name) {
            let why = if variables.is_empty() {
                format!(
                    "the resource `{}` is at a fixed URI: its function takes no parameters (a template names them: `{{{}}}`)",
                    uri.value(),
                    param.name
                )
            } else {
                format!(
                    "`{}` is not a variable of the URI template `{}` (its variables: {})",
                    param.name,
                    uri.value(),
                    variables
                        .iter()
                        .map(|name| format!("`{name}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            };
            cx.error_spanned_by(&param.ident, why);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_names_its_variables_in_order() {
        assert_eq!(
            template_variables("files://{+path}/v/{version}").unwrap(),
            ["path", "version"]
        );
        assert!(template_variables("docs://readme").unwrap().is_empty());
        // Not expressions that name a variable: the build's check says why.
        for bad in ["a://{x}/{y", "a://x}", "a://{}", "a://{?q}", "a://{a b}"] {
            assert_eq!(template_variables(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_variable_and_parameter_must_pair() {
        let mut sig: Signature = syn::parse_quote!(fn order(id: String, extra: u32));
        let mut cx = Ctxt::default();
        let item = analyse(
            Kind::Resource,
            quote::quote!("orders://{id}/{part}"),
            &mut sig,
            &[],
            &Visibility::Inherited,
            &mut cx,
        );
        assert!(item.is_template());
        let errors = cx.into_compile_errors().to_string();
        assert!(
            errors.contains("variable `part` has no parameter"),
            "{errors}"
        );
        assert!(errors.contains("`extra` is not a variable"), "{errors}");
    }
}

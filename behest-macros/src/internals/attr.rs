//! Helper attributes on tool parameters: `#[ctx]` and `#[arg(...)]`, plus
//! parameter doc comments. All are removed from the emitted function.

use proc_macro2::Span;
use syn::{Attribute, Expr, ExprLit, Lit, LitStr, Token};

use crate::internals::ctxt::Ctxt;
use crate::internals::doc::Docs;
use crate::internals::options::Spanned;

const ARG_KEYS: &[&str] = &["rename", "default", "description"];

/// A parameter's default when the model leaves it out.
pub enum ParamDefault {
    /// `#[arg(default)]`: `Default::default()`.
    Trait,
    /// `#[arg(default = expr)]`.
    Expr(Box<Expr>),
}

#[derive(Default)]
pub struct ParamAttrs {
    /// `#[ctx]`, with its span.
    pub ctx: Option<Span>,
    pub rename: Option<Spanned<String>>,
    pub default: Option<ParamDefault>,
    pub description: Option<String>,
    pub doc: Option<String>,
}

/// Takes the helper attributes out of `attrs`, leaving the others.
pub fn take(attrs: &mut Vec<Attribute>, cx: &mut Ctxt) -> ParamAttrs {
    let mut parsed = ParamAttrs {
        doc: Docs::collect(attrs).text(),
        ..ParamAttrs::default()
    };
    let mut kept = Vec::new();
    for attr in attrs.drain(..) {
        if attr.path().is_ident("doc") {
            continue;
        }
        if attr.path().is_ident("ctx") {
            if let Err(error) = attr.meta.require_path_only() {
                cx.push(syn::Error::new(error.span(), "`#[ctx]` takes no arguments"));
            }
            parsed.ctx = Some(
                attr.path()
                    .get_ident()
                    .map_or_else(Span::call_site, |i| i.span()),
            );
            continue;
        }
        if attr.path().is_ident("arg") {
            parse_arg(&attr, &mut parsed, cx);
            continue;
        }
        kept.push(attr);
    }
    *attrs = kept;
    if let (Some(span), true) = (
        parsed.ctx,
        parsed.rename.is_some() || parsed.default.is_some() || parsed.description.is_some(),
    ) {
        cx.error_at(
            span,
            "a `#[ctx]` parameter is injected, not sent by the model: it takes no `#[arg(...)]`",
        );
    }
    parsed
}

fn parse_arg(attr: &Attribute, parsed: &mut ParamAttrs, cx: &mut Ctxt) {
    let mut seen: Vec<String> = Vec::new();
    let result = attr.parse_nested_meta(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if !ARG_KEYS.contains(&key.as_str()) {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "unknown `#[arg]` argument `{key}`; {}valid arguments are: {}",
                    crate::internals::suggest::hint(&key, ARG_KEYS),
                    ARG_KEYS
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            if meta.input.peek(Token![=]) {
                meta.input.parse::<Token![=]>()?;
                meta.input.parse::<Expr>()?;
            }
            return Ok(());
        }
        if seen.contains(&key) {
            cx.error_spanned_by(
                &meta.path,
                format!("duplicate argument `{key}`: give it once"),
            );
        }
        seen.push(key.clone());
        match key.as_str() {
            "default" => {
                parsed.default = Some(if meta.input.peek(Token![=]) {
                    meta.input.parse::<Token![=]>()?;
                    let expr = meta.input.parse().map_err(|error| {
                        syn::Error::new(
                            error.span(),
                            "`default = ` takes the default value as an expression, like `default = 10` or `default = String::from(\"en\")`; `#[arg(default)]` alone uses `Default::default()`",
                        )
                    })?;
                    ParamDefault::Expr(Box::new(expr))
                } else {
                    ParamDefault::Trait
                });
            }
            "rename" | "description" => {
                meta.input
                    .parse::<Token![=]>()
                    .map_err(|_| meta.error(format!("`{key}` needs a value: `{key} = \"...\"`")))?;
                let lit = match meta.input.parse::<Expr>()? {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(lit), ..
                    }) => lit,
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            format!("`{key}` takes a string literal"),
                        ));
                    }
                };
                store(&key, lit, parsed);
            }
            _ => unreachable!("keys are checked before"),
        }
        Ok(())
    });
    if let Err(error) = result {
        cx.push(error);
    }
}

fn store(key: &str, lit: LitStr, parsed: &mut ParamAttrs) {
    if key == "rename" {
        parsed.rename = Some(Spanned {
            value: lit.value(),
            span: lit.span(),
        });
    } else {
        parsed.description = Some(lit.value());
    }
}

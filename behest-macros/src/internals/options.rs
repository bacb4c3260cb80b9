//! The arguments of `#[tool(...)]`, `#[tools(...)]` and `#[external_tool(...)]`.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::Parser;
use syn::{Expr, ExprLit, Lit, LitBool, LitStr, Path, Token};

use crate::internals::ctxt::Ctxt;

/// Which macro the arguments belong to; each accepts its own keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Function,
    ExternalTool,
    ImplBlock,
}

/// The arguments of `#[tool]`; `#[external_tool]` takes them all but
/// `timeout` (its calls run elsewhere).
const TOOL_KEYS: &[&str] = &[
    "name",
    "description",
    "title",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "timeout",
    "strict",
    "needs_approval",
    "allow_unknown_arguments",
    "crate",
    "schema",
];

impl Target {
    fn keys(self) -> Vec<&'static str> {
        match self {
            Target::Function => TOOL_KEYS.to_vec(),
            Target::ExternalTool => TOOL_KEYS
                .iter()
                .copied()
                .filter(|key| *key != "timeout")
                .collect(),
            Target::ImplBlock => vec!["crate"],
        }
    }

    fn attribute(self) -> &'static str {
        match self {
            Target::Function => "#[tool]",
            Target::ExternalTool => "#[external_tool]",
            Target::ImplBlock => "#[tools]",
        }
    }
}

/// A string option and where it was written.
#[derive(Clone)]
pub struct Spanned<T> {
    pub value: T,
    pub span: Span,
}

#[derive(Default, Clone)]
pub struct Options {
    pub name: Option<Spanned<String>>,
    pub description: Option<Spanned<String>>,
    pub title: Option<String>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    /// Milliseconds.
    pub timeout_ms: Option<u64>,
    pub strict: bool,
    pub needs_approval: bool,
    pub allow_unknown_arguments: bool,
    pub krate: Option<Path>,
    /// `schema = "schemas/x.json"`: the spec file, relative to the crate.
    pub schema: Option<LitStr>,
}

impl Options {
    /// The path to the `behest` crate in generated code.
    pub fn krate(&self) -> crate::tokens::Tokens {
        match &self.krate {
            Some(path) => quote::quote!(#path),
            None => quote::quote!(::behest),
        }
        .into()
    }
}

/// Parses attribute arguments, recording every problem in `cx`.
pub fn parse(tokens: TokenStream, target: Target, cx: &mut Ctxt) -> Options {
    let mut options = Options::default();
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = meta
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        if key == "timeout" && matches!(target, Target::ExternalTool) {
            cx.error_spanned_by(
                &meta.path,
                "`timeout` does not apply to `#[external_tool]`: its handler answers within the run's deadline, `Agent::external_deadline`",
            );
            return skip_value(&meta);
        }
        if !target.keys().contains(&key.as_str()) {
            let shown = quote::ToTokens::to_token_stream(&meta.path)
                .to_string()
                .replace(' ', "");
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "unknown {} argument `{shown}`; {}valid arguments are: {}",
                    target.attribute(),
                    crate::internals::suggest::hint(&shown, &target.keys()),
                    target
                        .keys()
                        .iter()
                        .map(|k| format!("`{k}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            return skip_value(&meta);
        }
        if seen.contains(&key) {
            cx.error_spanned_by(
                &meta.path,
                format!("duplicate argument `{key}`: give it once"),
            );
            return skip_value(&meta);
        }
        seen.push(key.clone());
        if let Err(error) = parse_key(&key, &meta, &mut options) {
            cx.push(error);
            return skip_value(&meta);
        }
        Ok(())
    });
    if let Err(error) = parser.parse2(tokens) {
        cx.push(error);
    }
    options
}

fn parse_key(key: &str, meta: &ParseNestedMeta<'_>, options: &mut Options) -> syn::Result<()> {
    match key {
        "name" => {
            let lit = string_value(meta, key)?;
            options.name = Some(Spanned {
                value: lit.value(),
                span: lit.span(),
            });
        }
        "description" => {
            let lit = string_value(meta, key)?;
            let value = lit.value();
            let blank = value.trim().is_empty();
            // Kept even when blank: the one mistake is said once, here, and
            // not again as a tool without a description.
            options.description = Some(Spanned {
                value,
                span: lit.span(),
            });
            if blank {
                return Err(syn::Error::new(
                    lit.span(),
                    "the description cannot be empty",
                ));
            }
        }
        "title" => options.title = Some(string_value(meta, key)?.value()),
        "schema" => options.schema = Some(string_value(meta, key)?),
        "read_only" => options.read_only = Some(flag(meta)?),
        "destructive" => options.destructive = Some(flag(meta)?),
        "idempotent" => options.idempotent = Some(flag(meta)?),
        "open_world" => options.open_world = Some(flag(meta)?),
        "strict" => options.strict = flag(meta)?,
        "needs_approval" => options.needs_approval = flag(meta)?,
        "allow_unknown_arguments" => options.allow_unknown_arguments = flag(meta)?,
        "timeout" => {
            let lit = string_value(meta, key)?;
            options.timeout_ms = Some(parse_duration(&lit.value()).map_err(|why| {
                syn::Error::new(
                    lit.span(),
                    format!("invalid timeout {:?}: {why}; write a whole number with a unit, like `timeout = \"250ms\"`, `\"10s\"` or `\"2m\"`", lit.value()),
                )
            })?);
        }
        "crate" => {
            let takes = "`crate` takes the path behest is reached by, like `crate = ::behest` or `crate = my_reexport::behest`";
            meta.input
                .parse::<Token![=]>()
                .map_err(|_| meta.error(takes))?;
            options.krate = Some(if meta.input.peek(LitStr) {
                let lit = meta.input.parse::<LitStr>()?;
                lit.parse().map_err(|_| {
                    syn::Error::new(
                        lit.span(),
                        format!("{takes}; {:?} is not a path", lit.value()),
                    )
                })?
            } else {
                meta.input
                    .parse::<Path>()
                    .map_err(|error| syn::Error::new(error.span(), takes))?
            });
        }
        _ => unreachable!("keys are checked before"),
    }
    Ok(())
}

/// `key = "text"`.
fn string_value(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<LitStr> {
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!("`{key}` needs a value: `{key} = \"...\"`")));
    }
    meta.input.parse::<Token![=]>()?;
    let expr: Expr = meta.input.parse()?;
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Str(lit), ..
        }) => Ok(lit),
        other => Err(syn::Error::new_spanned(
            other,
            format!("`{key}` takes a string literal: `{key} = \"...\"`"),
        )),
    }
}

/// `key` alone (true) or `key = true|false`.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if !meta.input.peek(Token![=]) {
        return Ok(true);
    }
    meta.input.parse::<Token![=]>()?;
    let expr: Expr = meta.input.parse()?;
    match expr {
        Expr::Lit(ExprLit {
            lit: Lit::Bool(LitBool { value, .. }),
            ..
        }) => Ok(value),
        other => Err(syn::Error::new_spanned(other, "expected `true` or `false`")),
    }
}

/// Consumes `= value` or `(...)` after an argument already reported.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.input.parse::<Token![=]>()?;
        meta.input.parse::<Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        let _content;
        syn::parenthesized!(_content in meta.input);
    }
    Ok(())
}

/// `"250ms"`, `"10s"`, `"2m"` to milliseconds.
pub fn parse_duration(text: &str) -> Result<u64, &'static str> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or("the unit is missing")?;
    let (digits, unit) = text.split_at(split);
    if digits.is_empty() {
        return Err("it does not start with a number");
    }
    let amount: u64 = digits.parse().map_err(|_| "the number is too large")?;
    let factor = match unit.trim() {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        _ => return Err("the unit must be `ms`, `s` or `m`"),
    };
    match amount.checked_mul(factor) {
        Some(0) => Err("it must be more than zero"),
        Some(ms) => Ok(ms),
        None => Err("the number is too large"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(250));
        assert_eq!(parse_duration("10s"), Ok(10_000));
        assert_eq!(parse_duration("2m"), Ok(120_000));
        assert_eq!(parse_duration("10 s"), Ok(10_000));
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("1.5s").is_err());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("10h").is_err());
        assert!(parse_duration("s").is_err());
    }

    #[test]
    fn options_are_parsed_and_errors_collected() {
        let mut cx = Ctxt::default();
        let options = parse(
            quote::quote!(
                name = "x",
                read_only,
                destructive = false,
                timeout = "5s",
                strict
            ),
            Target::Function,
            &mut cx,
        );
        assert!(!cx.has_errors());
        assert_eq!(options.name.unwrap().value, "x");
        assert_eq!(options.read_only, Some(true));
        assert_eq!(options.destructive, Some(false));
        assert_eq!(options.timeout_ms, Some(5000));
        assert!(options.strict);

        let mut cx = Ctxt::default();
        parse(
            quote::quote!(nmae = "x", name = "a", name = "b"),
            Target::Function,
            &mut cx,
        );
        let errors = cx.into_compile_errors().to_string();
        assert!(
            errors.contains("unknown #[tool] argument `nmae`"),
            "{errors}"
        );
        assert!(errors.contains("duplicate argument `name`"), "{errors}");
    }
}

//! `tool_spec!("file.json")` and `schema!({ .. })` read and checked: the
//! spec file's name, description and schema, and the JSON written in place.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};
use syn::LitStr;

use crate::internals::ctxt::Ctxt;
use crate::internals::spec_file;

/// A whole spec file, as `tool_spec!` reads it.
pub struct WholeSpec {
    /// The tool's name.
    pub name: String,
    /// The tool's description.
    pub description: String,
    /// The file's path, for `include_str!`.
    pub path: String,
    /// Where the parameters' schema is in the file.
    pub pointer: String,
}

/// Reads `tool_spec!("specs/x.json")`: a spec file with a name, a
/// description and parameters; the errors, when it is not one.
pub fn tool_spec(input: TokenStream) -> Result<WholeSpec, TokenStream> {
    let lit: LitStr = match syn::parse2(input) {
        Ok(lit) => lit,
        Err(error) => {
            let message = format!("`tool_spec!` takes the path of a spec file, like `tool_spec!(\"specs/web_search.json\")`: {error}");
            return Err(syn::Error::new(error.span(), message).to_compile_error());
        }
    };
    let mut cx = Ctxt::default();
    let Some(file) = spec_file::load(&lit, &mut cx) else {
        return Err(cx.into_compile_errors());
    };
    let missing: Vec<&str> = [
        ("name", file.name.is_none()),
        ("description", file.description.is_none()),
        ("parameters", file.schema_pointer.is_empty()),
    ]
    .iter()
    .filter(|(_, absent)| *absent)
    .map(|(key, _)| *key)
    .collect();
    if !missing.is_empty() {
        cx.error_at(
            file.span,
            format!(
                "`{}` is not a whole tool spec: it lacks {}; a spec file for `tool_spec!` gives the tool's `name`, `description` and `parameters` (its arguments' schema)",
                file.shown,
                missing.iter().map(|key| format!("`{key}`")).collect::<Vec<_>>().join(", ")
            ),
        );
    }
    let name = file.name.clone().unwrap_or_default();
    let description = file.description.clone().unwrap_or_default();
    if file.name.is_some() {
        crate::internals::valid::check_name(&name, file.span, &mut cx);
    }
    if file.description.is_some() && description.trim().is_empty() {
        cx.error_at(
            file.span,
            format!("`{}`: the description is empty; the model reads it to decide when to call the tool", file.shown),
        );
    }
    if cx.has_errors() {
        return Err(cx.into_compile_errors());
    }
    Ok(WholeSpec {
        name,
        description,
        path: file.path.to_string_lossy().into_owned(),
        pointer: file.schema_pointer.clone(),
    })
}

/// Reads `schema!({ .. })`: the JSON text of the object schema written in
/// place; the errors, when it is not one.
pub fn schema(input: TokenStream) -> Result<String, TokenStream> {
    let mut text = String::new();
    if let Err(error) = to_json(input.clone(), &mut text) {
        return Err(error.to_compile_error());
    }
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(value) => value,
        Err(error) => {
            return Err(syn::Error::new(
                Span::call_site(),
                format!("`schema!` takes one JSON object: {error}"),
            )
            .to_compile_error());
        }
    };
    // Each error on the value it is about.
    let mut spans = std::collections::HashMap::new();
    spans_of(input, "", &mut spans);
    let span_of = |pointer: &str| {
        let mut pointer = pointer;
        loop {
            if let Some(span) = spans.get(pointer) {
                return *span;
            }
            match pointer.rfind('/') {
                Some(at) => pointer = &pointer[..at],
                None => return Span::call_site(),
            }
        }
    };
    let mut cx = Ctxt::default();
    spec_file::check_object_schema(&value, "`schema!`", &span_of, &mut cx);
    if cx.has_errors() {
        return Err(cx.into_compile_errors());
    }
    Ok(text)
}

/// Where each value of the JSON in `tokens` was written, by JSON pointer
/// (`at` is the pointer of `tokens`' own value).
fn spans_of(tokens: TokenStream, at: &str, spans: &mut std::collections::HashMap<String, Span>) {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    // The value itself: a group (recursed into), or the first token of a
    // scalar (`-` of a negative number included).
    let Some(first) = tokens.first() else { return };
    spans.insert(at.to_owned(), first.span());
    let TokenTree::Group(group) = first else {
        return;
    };
    let inner: Vec<TokenTree> = group.stream().into_iter().collect();
    // Entries split at top-level commas.
    let entries = inner.split(|token| matches!(token, TokenTree::Punct(p) if p.as_char() == ','));
    match group.delimiter() {
        Delimiter::Brace => {
            for entry in entries {
                let (Some(TokenTree::Literal(key)), Some(TokenTree::Punct(colon))) =
                    (entry.first(), entry.get(1))
                else {
                    continue;
                };
                if colon.as_char() != ':' {
                    continue;
                }
                let syn::Lit::Str(key) = syn::Lit::new(key.clone()) else {
                    continue;
                };
                let pointer = format!(
                    "{at}/{}",
                    crate::internals::schema_keywords::escape(&key.value())
                );
                spans_of(entry[2..].iter().cloned().collect(), &pointer, spans);
            }
        }
        Delimiter::Bracket => {
            for (index, entry) in entries.enumerate() {
                spans_of(
                    entry.iter().cloned().collect(),
                    &format!("{at}/{index}"),
                    spans,
                );
            }
        }
        _ => {}
    }
}

/// The JSON text of `tokens`, written as JSON (strings, numbers, `true`,
/// `false`, `null`, `{}`, `[]`, `:`, `,`, a leading `-`).
fn to_json(tokens: TokenStream, out: &mut String) -> syn::Result<()> {
    for token in tokens {
        match token {
            TokenTree::Group(group) => {
                let (open, close) = match group.delimiter() {
                    Delimiter::Brace => ('{', '}'),
                    Delimiter::Bracket => ('[', ']'),
                    Delimiter::None => {
                        to_json(group.stream(), out)?;
                        continue;
                    }
                    Delimiter::Parenthesis => {
                        return Err(syn::Error::new(
                            group.span(),
                            "JSON has no parentheses: write objects `{..}` and arrays `[..]`",
                        ))
                    }
                };
                out.push(open);
                to_json(group.stream(), out)?;
                out.push(close);
            }
            TokenTree::Literal(literal) => {
                let lit = syn::Lit::new(literal.clone());
                match lit {
                    syn::Lit::Str(text) => {
                        out.push_str(&serde_json::Value::String(text.value()).to_string());
                    }
                    syn::Lit::Int(number) if number.suffix().is_empty() => {
                        out.push_str(number.base10_digits());
                    }
                    syn::Lit::Float(number) if number.suffix().is_empty() => {
                        out.push_str(number.base10_digits());
                    }
                    _ => {
                        return Err(syn::Error::new(
                            literal.span(),
                            "not a JSON value: write strings in double quotes and numbers without a suffix",
                        ))
                    }
                }
            }
            TokenTree::Punct(punct) if matches!(punct.as_char(), ':' | ',' | '-') => {
                out.push(punct.as_char());
            }
            TokenTree::Ident(ident)
                if matches!(ident.to_string().as_str(), "true" | "false" | "null") =>
            {
                out.push_str(&ident.to_string());
            }
            other => {
                return Err(syn::Error::new(
                    other.span(),
                    format!("`{other}` is not JSON: `schema!` takes a JSON object literally"),
                ))
            }
        }
    }
    Ok(())
}

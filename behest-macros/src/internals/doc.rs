//! Doc comments to descriptions: the tool's description, and parameter
//! descriptions from a rustdoc `# Arguments` section.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::{Attribute, Expr, ExprLit, Lit, Meta};

/// One `#[doc = ..]` attribute.
pub enum DocPart {
    /// A literal line, with one leading space stripped.
    Line { text: String, span: Span },
    /// A line computed at compile time, e.g. `include_str!(..)`.
    Expr(Expr),
}

/// The doc attributes of an item, in order.
pub struct Docs {
    pub parts: Vec<DocPart>,
}

/// One entry of a `# Arguments` section: `` * `city` - City name ``.
#[derive(Debug)]
pub struct ArgumentDoc {
    pub name: String,
    pub description: String,
    pub span: Span,
}

impl Docs {
    pub fn collect(attrs: &[Attribute]) -> Self {
        let parts = attrs
            .iter()
            .filter(|attr| attr.path().is_ident("doc"))
            .filter_map(|attr| match &attr.meta {
                Meta::NameValue(nv) => Some(match &nv.value {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(lit), ..
                    }) => {
                        let text = lit.value();
                        DocPart::Line {
                            text: text.strip_prefix(' ').unwrap_or(&text).to_owned(),
                            span: attr.pound_token.span,
                        }
                    }
                    other => DocPart::Expr(other.clone()),
                }),
                _ => None,
            })
            .collect();
        Self { parts }
    }

    pub fn is_empty(&self) -> bool {
        self.parts.iter().all(|part| match part {
            DocPart::Line { text, .. } => text.trim().is_empty(),
            DocPart::Expr(_) => false,
        })
    }

    /// The literal text, lines joined (for parameter docs).
    pub fn text(&self) -> Option<String> {
        let lines: Vec<&str> = self
            .parts
            .iter()
            .filter_map(|part| match part {
                DocPart::Line { text, .. } => Some(text.as_str()),
                DocPart::Expr(_) => None,
            })
            .collect();
        let text = lines.join("\n").trim().to_owned();
        (!text.is_empty()).then_some(text)
    }

    /// The description as a `&'static str` expression, without the
    /// `# Arguments` section (its entries become parameter descriptions).
    pub fn description(&self) -> TokenStream {
        let mut segments: Vec<TokenStream> = Vec::new();
        let mut text = String::new();
        let mut in_arguments = false;
        for part in &self.parts {
            match part {
                DocPart::Line { text: line, .. } => {
                    if let Some(heading) = heading(line) {
                        in_arguments = is_arguments_heading(heading);
                        if in_arguments {
                            continue;
                        }
                    }
                    if !in_arguments {
                        text.push_str(line);
                        text.push('\n');
                    }
                }
                DocPart::Expr(expr) => {
                    if !text.is_empty() {
                        segments.push(quote!(#text));
                        text = String::new();
                    }
                    segments.push(quote!(#expr));
                    text.push('\n');
                }
            }
        }
        if segments.is_empty() {
            let text = text.trim();
            return quote!(#text);
        }
        if !text.is_empty() {
            segments.push(quote!(#text));
        }
        quote!(::core::concat!(#(#segments),*))
    }

    /// The entries of the `# Arguments` section.
    pub fn arguments_section(&self) -> Vec<ArgumentDoc> {
        let mut entries: Vec<ArgumentDoc> = Vec::new();
        let mut in_arguments = false;
        for part in &self.parts {
            let DocPart::Line { text: line, span } = part else {
                continue;
            };
            if let Some(heading) = heading(line) {
                in_arguments = is_arguments_heading(heading);
                continue;
            }
            if !in_arguments {
                continue;
            }
            let trimmed = line.trim_start();
            if let Some(item) = trimmed
                .strip_prefix("* ")
                .or_else(|| trimmed.strip_prefix("- "))
            {
                if let Some((name, description)) = split_entry(item) {
                    entries.push(ArgumentDoc {
                        name,
                        description,
                        span: *span,
                    });
                }
            } else if let (Some(last), false) = (entries.last_mut(), trimmed.is_empty()) {
                last.description.push(' ');
                last.description.push_str(trimmed);
            }
        }
        entries
    }
}

/// The text of a Markdown heading line.
fn heading(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let rest = trimmed.trim_start_matches('#');
    (rest.len() < trimmed.len() && rest.starts_with(' ')).then(|| rest.trim())
}

fn is_arguments_heading(heading: &str) -> bool {
    heading.eq_ignore_ascii_case("arguments") || heading.eq_ignore_ascii_case("parameters")
}

/// `` `city` - City name `` or `city: City name`.
fn split_entry(item: &str) -> Option<(String, String)> {
    let item = item.trim();
    let (name, rest) = if let Some(stripped) = item.strip_prefix('`') {
        let end = stripped.find('`')?;
        (&stripped[..end], &stripped[end + 1..])
    } else {
        let end = item.find(|c: char| !(c.is_alphanumeric() || c == '_'))?;
        (&item[..end], &item[end..])
    };
    let rest = rest.trim_start();
    let description = rest
        .strip_prefix('-')
        .or_else(|| rest.strip_prefix(':'))
        .or_else(|| rest.strip_prefix('—'))
        .or_else(|| rest.strip_prefix('–'))?
        .trim();
    let name = crate::internals::case::unraw_str(name);
    (!name.is_empty()).then(|| (name.to_owned(), description.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::parse_quote;

    fn docs(item: syn::ItemFn) -> Docs {
        Docs::collect(&item.attrs)
    }

    #[test]
    fn description_keeps_paragraphs_and_drops_the_arguments_section() {
        let docs = docs(parse_quote! {
            /// Get the weather.
            ///
            /// Uses live data.
            ///
            /// # Arguments
            ///
            /// * `city` - City name,
            ///   with the country.
            /// * `units`: Units.
            ///
            /// # Errors
            /// When offline.
            fn f() {}
        });
        let description: syn::LitStr = syn::parse2(docs.description()).unwrap();
        assert_eq!(
            description.value(),
            "Get the weather.\n\nUses live data.\n\n# Errors\nWhen offline."
        );
        let entries: Vec<(String, String)> = docs
            .arguments_section()
            .into_iter()
            .map(|entry| (entry.name, entry.description))
            .collect();
        assert_eq!(
            entries,
            vec![
                ("city".to_owned(), "City name, with the country.".to_owned()),
                ("units".to_owned(), "Units.".to_owned()),
            ]
        );
    }

    #[test]
    fn computed_docs_are_concatenated() {
        let docs = docs(parse_quote! {
            /// Summary.
            #[doc = include_str!("x.md")]
            fn f() {}
        });
        assert_eq!(
            docs.description().to_string(),
            quote!(::core::concat!("Summary.\n", include_str!("x.md"), "\n")).to_string()
        );
        assert!(!docs.is_empty());
    }

    #[test]
    fn entries_without_backticks_and_with_dashes() {
        assert_eq!(
            split_entry("city - Name"),
            Some(("city".into(), "Name".into()))
        );
        assert_eq!(
            split_entry("`r#type` — Kind"),
            Some(("type".into(), "Kind".into()))
        );
        assert_eq!(split_entry("just text"), None);
    }
}

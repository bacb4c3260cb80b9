//! The serde and schemars derives, added through behest's re-exports so that
//! a user's crate needs neither in its manifest.

use syn::Attribute;

use crate::tokens::Tokens;

/// A derive behest can add.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Derive {
    Deserialize,
    Serialize,
    JsonSchema,
}

impl Derive {
    fn name(self) -> &'static str {
        match self {
            Derive::Deserialize => "Deserialize",
            Derive::Serialize => "Serialize",
            Derive::JsonSchema => "JsonSchema",
        }
    }
}

/// Puts the `wanted` derives the item does not have yet in front of its
/// attributes, with the `crate = ".."` attributes that point serde and
/// schemars at behest's re-exports.
pub fn add_missing(attrs: &mut Vec<Attribute>, krate: &Tokens, wanted: &[Derive]) {
    let derived = derived_names(attrs);
    let private = krate.private();
    let crate_path = krate.path_string();
    let serde_crate = format!("{crate_path}::__private::serde");
    let schemars_crate = format!("{crate_path}::__private::schemars");
    let mut added: Vec<Attribute> = Vec::new();
    let mut serde_added = false;
    // A derive the user already has is not derived twice: that would be a
    // conflicting impl. Derive macros are named, not typed, so their names
    // are what can be checked.
    for derive in wanted {
        if derived.iter().any(|name| name == derive.name()) {
            continue;
        }
        match derive {
            Derive::Deserialize => {
                added.push(syn::parse_quote!(#[derive(#private::serde::Deserialize)]));
                serde_added = true;
            }
            Derive::Serialize => {
                added.push(syn::parse_quote!(#[derive(#private::serde::Serialize)]));
                serde_added = true;
            }
            Derive::JsonSchema => {
                added.push(syn::parse_quote!(#[derive(#private::schemars::JsonSchema)]));
                added.push(syn::parse_quote!(#[schemars(crate = #schemars_crate)]));
            }
        }
    }
    // One `crate` attribute for both serde derives; none when the user
    // derives serde themselves (theirs may name its own crate path).
    let user_serde = derived
        .iter()
        .any(|name| name == "Deserialize" || name == "Serialize");
    if serde_added && !user_serde {
        added.push(syn::parse_quote!(#[serde(crate = #serde_crate)]));
    }
    // Derives must come before the helper attributes they declare.
    added.append(attrs);
    *attrs = added;
}

fn derived_names(attrs: &[Attribute]) -> Vec<String> {
    let mut names = Vec::new();
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("derive")) {
        let _ = attr.parse_nested_meta(|meta| {
            if let Some(last) = meta.path.segments.last() {
                names.push(last.ident.to_string());
            }
            Ok(())
        });
    }
    names
}

//! Paths quoted many times in one expansion, held as single token trees.
//!
//! Quoting a `TokenStream` into another makes the compiler bridge flush and
//! concatenate streams; quoting single trees only appends them. With paths
//! such as `::behest::__private` quoted dozens of times per tool, that
//! difference was a large part of the macro's own run time.

use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{quote, ToTokens, TokenStreamExt};

/// A short token sequence, quoted tree by tree.
#[derive(Clone)]
pub struct Tokens(Vec<TokenTree>);

impl Tokens {
    /// `self::__private`: the support module behind the generated code.
    pub fn private(&self) -> Self {
        Self::from(quote!(#self::__private))
    }

    /// How code inside a tool's `const _` block names
    /// [`private`](Self::private), and the `use` line that makes that name,
    /// if any: `__behest_private`, one token where the path is six and is
    /// quoted dozens of times per tool. Only an absolute crate path
    /// (`::behest`, `crate::..`) is imported so; a relative one is written
    /// out in full, as given, so that it resolves as it does in any
    /// expression (a `use` resolves a first name that is both a crate and
    /// an item by stricter rules, E0659).
    pub fn private_in_block(&self) -> (Self, Option<TokenStream>) {
        let absolute = match self.0.first() {
            Some(TokenTree::Punct(punct)) => punct.as_char() == ':',
            Some(TokenTree::Ident(ident)) => {
                ["crate", "self", "super", "$crate"].contains(&ident.to_string().as_str())
            }
            _ => false,
        };
        if !absolute {
            return (self.private(), None);
        }
        let alias = Ident::new("__behest_private", Span::call_site());
        let private = self.private();
        let import = quote!(use #private as #alias;);
        (Self(vec![TokenTree::Ident(alias)]), Some(import))
    }

    /// The tokens as a path string without spaces, as serde's and
    /// schemars' `crate = ".."` attributes take it.
    pub fn path_string(&self) -> String {
        self.to_token_stream().to_string().replace(' ', "")
    }
}

impl From<TokenStream> for Tokens {
    fn from(stream: TokenStream) -> Self {
        Self(stream.into_iter().collect())
    }
}

impl ToTokens for Tokens {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        tokens.append_all(self.0.iter().cloned());
    }
}

/// Whether `tokens` hold the identifier `name` anywhere, inside groups
/// too (`(Self, u8)`, `{ self.limit }`).
pub fn mentions(tokens: TokenStream, name: &str) -> bool {
    tokens.into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => ident == name,
        TokenTree::Group(group) => mentions(group.stream(), name),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::mentions;

    #[test]
    fn a_name_is_found_inside_groups_and_nowhere_else() {
        assert!(mentions(quote!(Option<Self>), "Self"));
        assert!(mentions(quote!((u8, [Self; 2])), "Self"));
        assert!(mentions(quote!({ self.limit * 2 }), "self"));
        assert!(!mentions(quote!((SelfTest, "Self", u8)), "Self"));
        assert!(!mentions(quote!(Self), "self"));
    }
}

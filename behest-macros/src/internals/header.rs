//! What every tool kind's header says, resolved once: its name, its
//! description and the spec file it follows. `#[tool]` functions,
//! `#[tools]` methods and `#[external_tool]` structs all read it here.

use proc_macro2::TokenStream;
use quote::quote;
use syn::Ident;

use crate::internals::ctxt::Ctxt;
use crate::internals::doc::Docs;
use crate::internals::options::Options;
use crate::internals::spec_file::{self, SpecFile};
use crate::internals::valid;

/// The kind of tool a header belongs to, for the words of its errors.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `#[tool]` on a function or a `#[tools]` method.
    Tool,
    /// `#[external_tool]` on a struct.
    ExternalTool,
}

impl Kind {
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Kind::Tool => ("tool", "#[tool"),
            Kind::ExternalTool => ("external tool", "#[external_tool"),
        }
    }
}

/// A tool's name, description and spec file.
pub struct Header {
    /// The name the model calls the tool by.
    pub tool_name: String,
    /// The description, as a `&'static str` expression.
    pub description: TokenStream,
    /// `schema = ".."`: the spec file the tool follows.
    pub spec_file: Option<SpecFile>,
    /// The item's doc comments.
    pub docs: Docs,
}

impl Header {
    /// Resolves the header of `ident`'s tool: the name from `name = ".."`,
    /// else the spec file's, else `default_name`; the description from
    /// `description = ".."`, else the spec file's, else the doc comments.
    /// A bad name or a missing description is one error each.
    pub fn resolve(
        options: &Options,
        attrs: &[syn::Attribute],
        ident: &Ident,
        default_name: String,
        kind: Kind,
        cx: &mut Ctxt,
    ) -> Self {
        let spec_file = options
            .schema
            .as_ref()
            .and_then(|lit| spec_file::load(lit, cx));
        let file_name = spec_file
            .as_ref()
            .and_then(|file| Some((file.name.clone()?, file.span)));
        let (tool_name, name_span) = match (&options.name, file_name) {
            (Some(name), _) => (name.value.clone(), name.span),
            (None, Some(from_file)) => from_file,
            (None, None) => (default_name, ident.span()),
        };
        valid::check_name(&tool_name, name_span, cx);
        let docs = Docs::collect(attrs);
        let file_description = spec_file.as_ref().and_then(|file| file.description.clone());
        let description = match (&options.description, file_description) {
            (Some(description), _) => {
                let text = &description.value;
                quote!(#text)
            }
            (None, Some(text)) => quote!(#text),
            (None, None) if docs.is_empty() => {
                let (what, attribute) = kind.words();
                cx.error_spanned_by(
                    ident,
                    format!("{what} `{tool_name}` has no description: the model reads it to decide when to call the tool; add a doc comment (`/// What the tool does.`) or `{attribute}(description = \"...\")]`"),
                );
                quote!("")
            }
            (None, None) => docs.description(),
        };
        Self {
            tool_name,
            description,
            spec_file,
            docs,
        }
    }
}

//! The checked model of a tool, read from the tokens once and shared by
//! every macro: the tool attribute's options, a parameter's helper
//! attributes, the serde attributes behest follows, doc comments, the
//! header every tool kind shares (name, description, spec file), and the
//! rules checked on all of it. `expand/` emits from this model and never
//! validates.

pub mod ast;
pub mod attr;
pub mod case;
pub mod ctxt;
pub mod doc;
pub mod external;
pub mod header;
pub mod impl_block;
pub mod literal;
pub mod mcp_item;
pub mod options;
pub mod schema_keywords;
pub mod spec_file;
pub mod suggest;
pub mod valid;

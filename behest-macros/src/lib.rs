//! Procedural macros of [behest](https://docs.rs/behest): `#[tool]`,
//! `#[tools]`, `#[external_tool]`, `#[data]`, and MCP's `#[resource]` and
//! `#[prompt]`. Use them through `behest`, which
//! re-exports them and documents them.

mod expand;
mod fallback;
mod internals;
mod tokens;

use proc_macro::TokenStream;

/// Turns a function into a tool. See the `behest` crate documentation.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tool::expand(args.into(), input.into()).into()
}

/// Turns the `#[tool]` methods of an impl block into tools sharing one
/// `Arc<Self>`. See the `behest` crate documentation.
#[proc_macro_attribute]
pub fn tools(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::tools::expand(args.into(), input.into()).into()
}

/// Turns a struct into the typed arguments of a tool that runs elsewhere.
/// See the `behest` crate documentation.
#[proc_macro_attribute]
pub fn external_tool(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::external_tool::expand(args.into(), input.into()).into()
}

/// Derives what a tool's argument and output types need (`Deserialize`,
/// `Serialize`, `JsonSchema`) through behest's re-exports, so a crate needs
/// no `serde` or `schemars` of its own. `#[data(input)]` derives only
/// `Deserialize` and `JsonSchema`, `#[data(output)]` only `Serialize` and
/// `JsonSchema`. See the `behest` crate documentation.
#[proc_macro_attribute]
pub fn data(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::data::expand(args.into(), input.into()).into()
}

/// Turns a function into an MCP resource: its URI, or a URI template whose
/// variables are its parameters. See `behest::mcp::resource`.
#[proc_macro_attribute]
pub fn resource(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::mcp::expand(
        internals::mcp_item::Kind::Resource,
        args.into(),
        input.into(),
    )
    .into()
}

/// Turns a function into an MCP prompt whose parameters are its
/// arguments. See `behest::mcp::prompt`.
#[proc_macro_attribute]
pub fn prompt(args: TokenStream, input: TokenStream) -> TokenStream {
    expand::mcp::expand(internals::mcp_item::Kind::Prompt, args.into(), input.into()).into()
}

/// A `ToolSpec` read from a JSON spec file (`name`, `description`,
/// `parameters`) when the crate builds. See the `behest` crate
/// documentation.
#[proc_macro]
pub fn tool_spec(input: TokenStream) -> TokenStream {
    expand::literal::tool_spec(input.into()).into()
}

/// A JSON object schema written in place, checked when the crate builds.
/// See the `behest` crate documentation.
#[proc_macro]
pub fn schema(input: TokenStream) -> TokenStream {
    expand::literal::schema(input.into()).into()
}

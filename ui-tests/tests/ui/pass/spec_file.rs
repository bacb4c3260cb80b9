//! A struct and its spec file that agree, renames and defaults included.
#![deny(missing_docs, unreachable_pub)]

/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/search.json")]
#[serde(rename_all = "snake_case")]
struct Search {
    query: String,
    #[serde(default)]
    limit: u32,
}

/// Search, with the name and description of the file.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/bad_name.json", name = "web_search")]
struct WebSearch {
    #[serde(rename = "query")]
    text: String,
}

/// The order of results; serde's renames are what the file lists.
#[behest::data(input)]
#[serde(rename_all = "lowercase")]
enum Order {
    Relevance,
    Newest,
    #[serde(rename = "oldest")]
    OldestFirst,
    #[serde(skip)]
    #[allow(dead_code)]
    Unlisted,
}

/// Search in an order.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/ordering.json")]
struct OrderedSearch {
    query: String,
    order: Order,
}

/// Values with braces, which the generated checks must not read as
/// format strings.
#[behest::data(input)]
enum Template {
    #[serde(rename = "{name}")]
    Name,
    #[serde(rename = "}{")]
    Inverted,
}

/// An optional enum argument.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/braces.json")]
struct Render {
    template: Option<Template>,
}

/// Only serialized: its names are not checked against files.
#[behest::data(output)]
enum Verdict {
    /// Yes.
    Yes,
}

fn main() {
    let _ = Verdict::Yes;
    assert_eq!(Render::TOOL_NAME, "render");
    assert_eq!(OrderedSearch::TOOL_NAME, "ordered_search");
    assert_eq!(Search::TOOL_NAME, "search");
    assert_eq!(WebSearch::TOOL_NAME, "web_search");
}

//! A struct and its spec file that agree, renames and defaults included.

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

fn main() {
    assert_eq!(OrderedSearch::TOOL_NAME, "ordered_search");
    assert_eq!(Search::TOOL_NAME, "search");
    assert_eq!(WebSearch::TOOL_NAME, "web_search");
}

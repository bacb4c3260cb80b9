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

fn main() {
    assert_eq!(Search::TOOL_NAME, "search");
    assert_eq!(WebSearch::TOOL_NAME, "web_search");
}

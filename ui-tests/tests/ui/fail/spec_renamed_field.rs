/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/search.json")]
struct Search {
    #[serde(rename = "q")]
    query: String,
    limit: Option<u32>,
}

fn main() {}

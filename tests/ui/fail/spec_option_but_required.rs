/// Search.
#[behest::external_tool(schema = "../../../../tests/ui/specs/search.json")]
struct Search {
    query: Option<String>,
    limit: Option<u32>,
}

fn main() {}

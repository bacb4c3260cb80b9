/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/search.json")]
struct Search {
    query: Option<String>,
    limit: Option<u32>,
}

fn main() {}

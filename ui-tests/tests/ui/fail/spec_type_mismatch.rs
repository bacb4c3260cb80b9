/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/search.json")]
struct Search {
    query: String,
    limit: Option<String>,
}

fn main() {}

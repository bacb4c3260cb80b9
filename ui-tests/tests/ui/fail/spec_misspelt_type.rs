/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/misspelt_type.json")]
struct Search {
    query: Option<String>,
}

fn main() {}

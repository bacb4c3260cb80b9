/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/invalid.json")]
struct Search {
    query: String,
}

fn main() {}

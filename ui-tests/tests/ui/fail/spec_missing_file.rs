/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/nope.json")]
struct Search {
    query: String,
}

fn main() {}

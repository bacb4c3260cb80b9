/// Search.
#[behest::external_tool(schema = "../../../../tests/ui/specs/nope.json")]
struct Search {
    query: String,
}

fn main() {}

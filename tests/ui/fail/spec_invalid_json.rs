/// Search.
#[behest::external_tool(schema = "../../../../tests/ui/specs/invalid.json")]
struct Search {
    query: String,
}

fn main() {}

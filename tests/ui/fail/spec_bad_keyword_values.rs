/// Search.
#[behest::external_tool(schema = "../../../../tests/ui/specs/bad_values.json")]
struct Search {
    query: String,
}

fn main() {}

/// Search.
#[behest::external_tool(schema = "../../../../tests/ui/specs/bad_name.json")]
struct Search {
    query: String,
}

fn main() {}

/// Search.
#[behest::external_tool(schema = "../../../../tests/ui/specs/array_root.json")]
struct Search {
    query: String,
}

fn main() {}

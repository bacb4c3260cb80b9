/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/array_root.json")]
struct Search {
    query: String,
}

fn main() {}

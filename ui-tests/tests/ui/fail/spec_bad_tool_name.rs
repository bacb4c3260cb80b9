/// Search.
#[behest::external_tool(schema = "../../../../ui-tests/tests/ui/specs/bad_name.json")]
struct Search {
    query: String,
}

fn main() {}

/// Search.
#[behest::tool(schema = "../../../../ui-tests/tests/ui/specs/search.json")]
fn search(query: String, limit: Option<String>) -> String {
    format!("{query} {limit:?}")
}

fn main() {}

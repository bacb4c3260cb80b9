/// Search.
#[behest::tool(schema = "../../../../tests/ui/specs/search.json")]
fn search(query: String, limit: Option<String>) -> String {
    format!("{query} {limit:?}")
}

fn main() {}

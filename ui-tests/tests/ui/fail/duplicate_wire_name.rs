use behest::tool;

/// Search.
#[tool]
fn search(query: String, #[arg(rename = "query")] text: String) -> String {
    query + &text
}

fn main() {}

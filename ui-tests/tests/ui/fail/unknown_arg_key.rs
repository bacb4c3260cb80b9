use behest::tool;

/// Search.
#[tool]
fn search(#[arg(renmae = "q")] query: String) -> String {
    query
}

fn main() {}

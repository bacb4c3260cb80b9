use behest::external_tool;

/// Search the web.
#[external_tool]
enum WebSearch {
    Query(String),
}

fn main() {}

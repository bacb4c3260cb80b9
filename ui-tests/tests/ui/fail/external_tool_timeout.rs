use behest::external_tool;

/// Search the web.
#[external_tool(timeout = "1s")]
struct WebSearch {
    query: String,
}

fn main() {}

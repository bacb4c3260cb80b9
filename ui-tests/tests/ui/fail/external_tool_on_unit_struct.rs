use behest::external_tool;

/// Search the web.
#[external_tool]
struct WebSearch;

fn main() {}

use behest::external_tool;

#[derive(serde::Deserialize)]
struct Region {
    code: String,
}

/// Search the web.
#[external_tool]
struct WebSearch {
    query: String,
    region: Region,
}

fn main() {}

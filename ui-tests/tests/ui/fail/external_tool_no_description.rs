use behest::external_tool;

#[external_tool]
struct WebSearch {
    query: String,
}

fn main() {}

use behest::external_tool;

/// Search the web.
#[external_tool]
struct WebSearch<'a> {
    query: &'a str,
}

fn main() {
    // Later uses of the struct do not add errors of their own.
    let _tool = WebSearch::external_tool();
    let _name = WebSearch::TOOL_NAME;
}

use behest::mcp::resource;

/// A file.
#[resource("files://{path")]
fn file(path: String) -> String {
    path
}

fn main() {}

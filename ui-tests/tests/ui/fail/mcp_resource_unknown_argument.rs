use behest::mcp::resource;

/// The readme.
#[resource("docs://readme", mime = "text/markdown")]
fn readme() -> String {
    String::new()
}

fn main() {}

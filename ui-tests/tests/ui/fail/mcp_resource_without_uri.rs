use behest::mcp::resource;

/// The readme.
#[resource(mime_type = "text/markdown")]
fn readme() -> String {
    String::new()
}

fn main() {}

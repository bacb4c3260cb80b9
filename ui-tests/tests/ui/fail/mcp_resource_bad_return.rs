use behest::mcp::resource;

/// A count.
#[resource("counts://{name}")]
fn count(name: String) -> usize {
    name.len()
}

fn main() {}

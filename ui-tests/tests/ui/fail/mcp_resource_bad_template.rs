use behest::mcp::resource;

/// An order's part.
#[resource("orders://{id}{part}")]
fn part(id: String, part: String) -> String {
    format!("{id} {part}")
}

fn main() {}

use behest::mcp::resource;

/// An order.
#[resource("orders://{id}")]
fn order(id: u32, verbose: bool) -> String {
    format!("order {id} {verbose}")
}

/// The readme.
#[resource("docs://readme")]
fn readme(section: String) -> String {
    section
}

fn main() {}

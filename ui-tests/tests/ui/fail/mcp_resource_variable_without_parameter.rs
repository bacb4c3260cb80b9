use behest::mcp::resource;

/// An order.
#[resource("orders://{id}/lines/{line}")]
fn order_line(id: u32) -> String {
    format!("order {id}")
}

fn main() {}

use behest::mcp::resource;

/// A user's field.
#[resource("users://{user.name}")]
fn user(name: String) -> String {
    name
}

fn main() {}

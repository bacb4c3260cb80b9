use behest::tool;

/// Greet someone.
///
/// # Arguments
///
/// * `name` - Who to greet.
/// * `name` - Their name, again.
#[tool]
fn greet(name: String) -> String {
    name
}

fn main() {}

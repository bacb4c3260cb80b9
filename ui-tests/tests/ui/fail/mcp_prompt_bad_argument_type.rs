use behest::mcp::prompt;

/// Greet someone, a number of times.
#[prompt]
fn greet(name: String, times: u32) -> String {
    format!("Greet {name} {times} times.")
}

fn main() {}

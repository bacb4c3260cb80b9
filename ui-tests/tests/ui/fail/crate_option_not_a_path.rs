use behest::tool;

/// Count words.
#[tool(crate = "my behest")]
fn count_words(text: String) -> usize {
    text.len()
}

fn main() {}

use behest::tool;

/// Count words.
#[tool(description = "   ")]
fn count_words(text: String) -> usize {
    text.len()
}

fn main() {}

use behest::tool;

// One mistake, one error: the empty description is said once, not again as
// a tool with no description.
#[tool(description = "")]
fn count_words(text: String) -> usize {
    text.len()
}

fn main() {}

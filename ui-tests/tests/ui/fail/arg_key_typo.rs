use behest::tool;

/// Count words.
#[tool]
fn count_words(text: String, #[arg(defualt)] limit: u32) -> String {
    format!("{text} {limit}")
}

fn main() {}

use behest::tool;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Summary {
    words: usize,
}

/// Summarize a text.
#[tool]
fn summary(text: String) -> Summary {
    Summary {
        words: text.split_whitespace().count(),
    }
}

fn main() {}

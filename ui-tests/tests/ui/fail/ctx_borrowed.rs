use behest::{tool, ToolContext};

/// Say which call this is.
#[tool]
fn which(#[ctx] cx: &ToolContext) -> String {
    cx.call_id().to_owned()
}

fn main() {}

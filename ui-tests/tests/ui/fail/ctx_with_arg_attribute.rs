use behest::{tool, ToolContext};

/// Count the rows.
#[tool]
fn count(table: String, #[ctx] #[arg(rename = "cx")] cx: ToolContext) -> String {
    let _ = cx;
    table
}

fn main() {}

use behest::tool;

#[tool(nmae = "x", timeout = "5 hours")]
fn search(query: &str, (a, b): (u8, u8)) -> String {
    format!("{query}{a}{b}")
}

fn main() {}

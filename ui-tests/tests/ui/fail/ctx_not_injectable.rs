use behest::tool;

struct Database;

/// Count the rows.
#[tool]
fn count(table: String, #[ctx] db: Database) -> String {
    let _ = db;
    table
}

fn main() {}

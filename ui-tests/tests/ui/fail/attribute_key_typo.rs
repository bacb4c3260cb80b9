use behest::tool;

/// Read a file.
#[tool(readonly)]
fn read_file(path: String) -> String {
    path
}

fn main() {}

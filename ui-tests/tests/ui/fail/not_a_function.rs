use behest::tool;

/// A struct is not a tool.
#[tool]
struct Weather {
    city: String,
}

fn main() {}

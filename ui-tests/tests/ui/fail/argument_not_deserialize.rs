use behest::tool;

#[derive(schemars::JsonSchema)]
struct Point {
    x: f64,
}

/// Plot a point.
#[tool]
fn plot(point: Point) -> String {
    point.x.to_string()
}

fn main() {}

use behest::tool;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
}

/// Plot a point.
#[tool]
fn plot(point: Point) -> String {
    point.x.to_string()
}

fn main() {}

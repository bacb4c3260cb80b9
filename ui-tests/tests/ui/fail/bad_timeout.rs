use behest::tool;

/// Get the weather.
#[tool(timeout = "ten seconds")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}

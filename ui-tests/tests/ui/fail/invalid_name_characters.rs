use behest::tool;

/// Get the weather.
#[tool(name = "weather.get")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}

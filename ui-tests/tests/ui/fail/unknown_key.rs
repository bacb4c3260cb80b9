use behest::tool;

/// Get the weather.
#[tool(timout = "10s")]
async fn get_weather(city: String) -> String {
    city
}

fn main() {}

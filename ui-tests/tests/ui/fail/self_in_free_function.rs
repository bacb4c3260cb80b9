use behest::tool;

struct Service;

impl Service {
    /// Get the weather.
    #[tool]
    async fn get_weather(&self, city: String) -> String {
        city
    }
}

fn main() {}

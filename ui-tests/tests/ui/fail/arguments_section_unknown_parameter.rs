use behest::tool;

/// Get the weather.
///
/// # Arguments
///
/// * `city` - City name.
/// * `country` - Country code.
#[tool]
fn get_weather(city: String) -> String {
    city
}

fn main() {}

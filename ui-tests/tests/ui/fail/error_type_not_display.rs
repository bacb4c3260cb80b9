use behest::tool;

struct Opaque;

/// Fail opaquely.
#[tool]
fn fail(x: u8) -> Result<String, Opaque> {
    if x > 1 { Ok(String::new()) } else { Err(Opaque) }
}

fn main() {}

use behest::tools;

struct Service;

#[tools]
impl Service {
    /// Not a tool: no `#[tool]`.
    pub fn helper(&self) -> u32 {
        1
    }
}

fn main() {}

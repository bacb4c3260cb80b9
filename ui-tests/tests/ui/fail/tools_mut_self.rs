use behest::tools;

struct Counter {
    n: u64,
}

#[tools]
impl Counter {
    /// Add one.
    #[tool]
    fn increment(&mut self) -> u64 {
        self.n += 1;
        self.n
    }
}

fn main() {}

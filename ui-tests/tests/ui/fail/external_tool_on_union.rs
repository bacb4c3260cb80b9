use behest::external_tool;

/// Search the web.
#[external_tool]
union WebSearch {
    id: u32,
    score: f32,
}

fn main() {}

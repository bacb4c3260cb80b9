struct Notes;

#[behest::tools]
impl Notes {
    /// Add a note.
    #[behest::tool(readonly)]
    fn add(&self, text: String) -> String {
        text
    }
}

fn main() {}

use behest::mcp::resource;

struct Files;

impl Files {
    /// A file.
    #[resource("files://{path}")]
    fn file(&self, path: String) -> String {
        path
    }
}

fn main() {}

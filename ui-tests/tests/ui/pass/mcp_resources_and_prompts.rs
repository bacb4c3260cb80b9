//! `#[resource]` and `#[prompt]` expand where the prelude's names are
//! taken, with every warning denied.
#![deny(warnings)]

#[allow(dead_code)]
type Result<T> = core::result::Result<T, ()>;
#[allow(dead_code)]
struct Option;
#[allow(dead_code)]
struct Some;
#[allow(dead_code)]
struct None;
#[allow(dead_code)]
struct Box;
#[allow(dead_code)]
struct String;
#[allow(dead_code)]
struct Vec;

/// An order, as JSON.
#[behest::mcp::resource("orders://{id}/data", mime_type = "application/json", title = "Order")]
async fn order(id: u32) -> core::result::Result<std::string::String, behest::ToolError> {
    Ok(format!("{{\"id\": {id}}}"))
}

/// The readme.
#[behest::mcp::resource("docs://readme")]
fn readme() -> &'static str {
    "# Hello"
}

/// Greet someone.
#[behest::mcp::prompt(name = "greet", title = "Greeting")]
async fn greeting(
    /// Who to greet.
    name: std::string::String,
    /// How.
    tone: core::option::Option<std::string::String>,
) -> std::vec::Vec<behest::mcp::PromptMessage> {
    let tone = tone.unwrap_or_default();
    vec![behest::mcp::PromptMessage::user(format!("Greet {name} {tone}"))]
}

/// Say hello.
#[behest::mcp::prompt]
fn hello() -> behest::mcp::PromptMessage {
    behest::mcp::PromptMessage::user("Hello!")
}

fn main() {
    let catalog = behest::mcp::McpCatalog::new()
        .resource(Order)
        .and_then(|catalog| catalog.resource(Readme))
        .and_then(|catalog| catalog.prompt(Greeting))
        .and_then(|catalog| catalog.prompt(Hello));
    assert!(catalog.is_ok());
    let _: behest::mcp::Prompt = Greeting.into();
}

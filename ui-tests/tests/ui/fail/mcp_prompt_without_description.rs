use behest::mcp::{prompt, PromptMessage};

#[prompt]
fn greet(name: String) -> PromptMessage {
    PromptMessage::user(format!("Greet {name}."))
}

fn main() {}

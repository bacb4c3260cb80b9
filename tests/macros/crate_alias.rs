//! `crate = ..` points the generated code at behest under another name, as
//! when a facade crate re-exports it.

extern crate behest as agent_tools;

use agent_tools::{ExternalToolArgs, Tool};

/// Shout the text.
#[agent_tools::tool(crate = agent_tools)]
fn shout(text: String) -> String {
    text.to_uppercase()
}

/// A facade module with the name of the crate it re-exports: a relative
/// `crate = behest` reaches behest through it.
mod behest {
    pub use ::behest::*;
}

/// Whisper the text.
#[agent_tools::tool(crate = behest)]
fn whisper(text: String) -> String {
    text.to_lowercase()
}

/// Look a word up.
#[agent_tools::external_tool(crate = agent_tools)]
struct Lookup {
    word: String,
}

#[tokio::test]
async fn generated_code_goes_through_the_alias() {
    let output = Shout
        .execute(serde_json::json!({"text": "hi"}))
        .await
        .unwrap();
    assert_eq!(output, agent_tools::ToolOutput::text("HI"));
    let output = Whisper
        .execute(serde_json::json!({"text": "HI"}))
        .await
        .unwrap();
    assert_eq!(output, agent_tools::ToolOutput::text("hi"));
    assert_eq!(Lookup::spec().name, "lookup");
    let call = agent_tools::ToolCall::new("c", "lookup", r#"{"word": "tool"}"#);
    assert_eq!(Lookup::from_call(&call).unwrap().word, "tool");
}

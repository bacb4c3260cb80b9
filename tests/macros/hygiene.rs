//! The generated code uses absolute paths only: shadowing the prelude's
//! names breaks nothing, and it compiles without a warning.
#![deny(warnings)]
#![allow(dead_code, non_camel_case_types)]

// Shadow every prelude name the expansion could be tempted to use.
type Result<T> = std::result::Result<T, ()>;
type Option = ();
struct Some;
struct None;
struct Ok;
struct Err;
struct Box;
struct Vec;
struct String;
struct Default;
struct Clone;
struct Copy;
struct Debug;
mod core {}
mod serde {}
mod schemars {}
mod serde_json {}
// The expansion names its support module inside its own `const _` block:
// an item of the same name out here clashes with nothing.
mod __behest_private {}

type Text = std::string::String;

/// Echo the text.
#[behest::tool(timeout = "1s", read_only)]
async fn echo(
    /// The text.
    text: Text,
    /// How often.
    #[arg(default = 2)]
    times: u8,
    maybe: std::option::Option<Text>,
) -> std::result::Result<Text, behest::ToolError> {
    let _ = maybe;
    std::result::Result::Ok(text.repeat(usize::from(times)))
}

/// Sum the numbers.
#[behest::external_tool]
struct Sum {
    numbers: std::vec::Vec<i64>,
}

struct Service;

#[behest::tools]
impl Service {
    /// Ping.
    #[tool]
    fn ping(&self) -> &'static str {
        "pong"
    }
}

#[test]
fn tools_expand_hygienically() {
    use behest::{ExternalToolArgs, Tool};
    assert_eq!(Echo.name(), "echo");
    assert_eq!(Sum::spec().name, "sum");
    let tools = std::sync::Arc::new(Service).tools();
    assert_eq!(tools[0].name(), "ping");
    let spec = Echo.spec();
    assert_eq!(spec.parameters["properties"]["times"]["default"], 2);
}

#[tokio::test]
async fn defaults_apply_when_the_argument_is_left_out() {
    use behest::Tool;
    let output = Echo.execute(::serde_json::json!({"text": "ab"})).await;
    assert_eq!(output.unwrap(), behest::ToolOutput::text("abab"));
}

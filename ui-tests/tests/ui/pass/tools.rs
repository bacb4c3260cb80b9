//! Every supported shape compiles: async and plain functions, every return
//! type, injected context and state, method tools and external tools.

use std::sync::Arc;

use behest::{external_tool, tool, tools, CancellationToken, State, ToolContext, ToolError, ToolOutput};

#[derive(serde::Serialize, schemars::JsonSchema)]
struct ReportData {
    lines: Vec<String>,
}

#[derive(serde::Serialize)]
struct UntypedData {
    n: u8,
}

struct Config;

/// Returns text.
#[tool]
fn text(name: String) -> String {
    name
}

/// Returns a static string.
#[tool]
fn static_text() -> &'static str {
    "ok"
}

/// Returns nothing.
#[tool]
async fn nothing(#[ctx] cancel: CancellationToken) {
    let _ = cancel;
}

/// Returns output as it is.
#[tool]
async fn output() -> ToolOutput {
    ToolOutput::text("ok")
}

/// Returns structured output with a schema.
#[tool]
async fn report(title: String) -> ReportData {
    ReportData { lines: vec![title] }
}

/// Returns structured output without a schema.
#[tool]
fn untyped() -> UntypedData {
    UntypedData { n: 1 }
}

/// Returns JSON.
#[tool]
fn json() -> serde_json::Value {
    serde_json::json!({})
}

/// Fails with a tool error.
#[tool]
fn fails(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    Err(ToolError::execution(cx.call_id().to_owned()))
}

/// Fails with a std error.
#[tool]
fn io(path: String) -> Result<ReportData, std::io::Error> {
    Err(std::io::Error::other(path))
}

/// Fails with a message.
#[tool]
fn message(n: u8, #[ctx] config: State<Config>, #[ctx] maybe: Option<State<Config>>) -> Result<u8, String> {
    let _ = (config, maybe);
    Err(format!("{n}"))
}

/// Runs elsewhere.
#[external_tool]
#[derive(Debug)]
struct Lookup {
    word: String,
}

struct Service;

#[tools]
impl Service {
    /// Ping.
    #[tool(read_only)]
    async fn ping(&self) -> &'static str {
        "pong"
    }

    /// Version.
    #[tool]
    fn version() -> String {
        "1".to_owned()
    }

    fn helper(&self) {}
}

fn main() {
    let _ = (Text, StaticText, Nothing, Output, Report, Untyped, Json, Fails, Io, Message);
    let _ = Lookup::external_tool();
    let _ = Arc::new(Service).tools();
    Service.helper();
}

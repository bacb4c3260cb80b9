//! Tool specs kept in JSON files (`examples/schemas/`), shared with other
//! languages and reviewed on their own, checked against the Rust code when
//! the crate builds: edit a file so that it no longer matches the struct
//! and `cargo build` fails, naming the field, the file and the fix.
//!
//! Run: `cargo run --example spec_files` (offline: a scripted model).

use behest::prelude::*;
use behest::ToolOutput;

/// Arguments of `web_search`, as the file says them: name, description and
/// schema come from the file, and the struct must agree with it.
#[external_tool(schema = "examples/schemas/web_search.json")]
struct WebSearch {
    query: String,
    max_results: Option<u32>,
    freshness: Option<Freshness>,
}

/// How recent the results must be. `#[behest::data]` lets the build compare
/// the variants (after the rename) with the file's `enum`.
#[behest::data(input)]
#[serde(rename_all = "lowercase")]
#[derive(Debug)]
enum Freshness {
    Day,
    Week,
    Any,
}

/// A hand-written tool whose spec is a file.
struct SendEmail;

impl Tool for SendEmail {
    fn name(&self) -> &str {
        "send_email"
    }

    fn spec(&self) -> ToolSpec {
        behest::tool_spec!("examples/schemas/send_email.json")
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(format!("sent to {}", arguments["to"])))
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let registry = ToolRegistry::new()
        .with(WebSearch::external_tool())?
        .with(SendEmail)?;
    // The model breaks the file's rules once (an empty query, an address
    // without `@`), reads why, and corrects itself.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("c1", "web_search", json!({"query": ""})),
            ToolCall::new(
                "c2",
                "send_email",
                json!({"to": "ann", "subject": "Hi", "body": "!"}),
            ),
        ]),
        ScriptedTurn::tool_calls([
            ToolCall::new(
                "c3",
                "web_search",
                json!({"query": "rust", "max_results": 3, "freshness": "week"}),
            ),
            ToolCall::new(
                "c4",
                "send_email",
                json!({"to": "ann@example.com", "subject": "Hi", "body": "!"}),
            ),
        ])
        .expect_error("c1", "/query")
        .expect_error("c2", "/to"),
        ScriptedTurn::text("Searched and sent.").expect_ok("c4", "sent to"),
    ]);
    let invocation = Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("go")]);
    invocation.on(|envelope, control| {
        if let EventKind::Tool(ToolStreamEvent::Call {
            call,
            external: true,
        }) = envelope.kind
        {
            let search = WebSearch::from_call(&call).expect("validated against the file");
            let titles = format!(
                "{} results for {} ({:?})",
                search.max_results.unwrap_or(5),
                search.query,
                search.freshness.unwrap_or(Freshness::Any)
            );
            control
                .resolve(&call.call_id, Ok(ToolOutput::text(titles)))
                .ok();
        }
    });
    for message in invocation.await.transcript() {
        println!("{message:?}");
    }
    Ok(())
}

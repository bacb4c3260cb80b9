//! A remote MCP server's tools used in a run beside a local one.
//!
//! The server is a child process spoken to over stdio: by default this
//! example itself, started again with `--serve` (so it runs offline, with
//! nothing to install); or any stdio server given after `--`, for instance
//! `cargo run --example mcp_import --features mcp -- npx -y
//! @modelcontextprotocol/server-everything`.
//!
//! The imported tools are prefixed `remote_`, validated here against the
//! server's own schemas before each call, and called over the connection.
//! A scripted model calls them, so the run needs no API key.
//!
//! Run: `cargo run --example mcp_import --features mcp`

use behest::mcp::{ImportOptions, McpClient, McpServer};
use behest::prelude::*;
use behest::run::ScriptedTurn;
use behest::ScriptedModel;

/// Add two numbers (served by the child process).
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// Say how loud a text is (local to the run).
#[tool(read_only)]
fn shout(text: String) -> String {
    text.to_uppercase()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--serve") {
        let runtime = ToolRuntime::new(ToolRegistry::new().with(Add)?);
        McpServer::new(runtime)?.serve_stdio().await?;
        return Ok(());
    }

    let mut command = match args.split_first() {
        Some((program, rest)) => {
            let mut command = tokio::process::Command::new(program);
            command.args(rest);
            command
        }
        None => {
            let mut command = tokio::process::Command::new(std::env::current_exe()?);
            command.arg("--serve");
            command
        }
    };
    command.kill_on_drop(true);
    let client = McpClient::child_process(command).await?;

    let mut registry = ToolRegistry::new().with(Shout)?;
    let imported = client
        .import_into(&mut registry, &ImportOptions::prefixed("remote_"))
        .await?;
    println!("imported: {}", imported.join(", "));
    if !args.is_empty() {
        // Another server's tools: listed, not called by the script below.
        return Ok(());
    }

    // A first call the remote schema refuses (`b` is missing): behest
    // answers it locally, and the model corrects it.
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([
            ToolCall::new("c1", "remote_add", r#"{"a": 40}"#),
            ToolCall::new("c2", "shout", r#"{"text": "done"}"#),
        ]),
        ScriptedTurn::tool_calls([ToolCall::new("c3", "remote_add", r#"{"a": 40, "b": 2}"#)])
            .expect_error("c1", "`/b`"),
        ScriptedTurn::text("40 + 2 = 42, DONE").expect_ok("c3", "42"),
    ]);
    let invocation =
        Agent::new(model, ToolRuntime::new(registry)).invoke([Message::user("Add 40 and 2.")]);
    invocation.on(|envelope, _control| {
        if let EventKind::Tool(ToolStreamEvent::Result { result }) = envelope.kind {
            println!("{} -> {}", result.tool_name, result.to_model_text());
        }
    });
    match invocation.await {
        RunOutcome::Completed { text, .. } => {
            println!("answer: {text}");
            Ok(())
        }
        other => Err(format!("the run did not complete: {other:?}").into()),
    }
}

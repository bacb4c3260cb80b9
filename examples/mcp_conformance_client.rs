//! behest's MCP client as the conformance kit drives it: the kit starts a
//! server of its own for a scenario, runs this with the server's URL as
//! the last argument (the scenario in `MCP_CONFORMANCE_SCENARIO`, the
//! protocol version to speak in `MCP_CONFORMANCE_PROTOCOL_VERSION`), and
//! checks what the client did.
//!
//! ```text
//! cargo build --example mcp_conformance_client --features mcp
//! npx @modelcontextprotocol/conformance@0.1.16 client \
//!     --command target/debug/examples/mcp_conformance_client --scenario tools_call
//! ```
//!
//! The client connects, lists the server's tools and calls each, its
//! required arguments made from the tool's schema (a number where it asks
//! for one, text otherwise); the kit's `json_schema_echo` gets the input
//! schema the client read for the server's other tool, as the kit asks, so
//! that it sees what the client kept. It accepts every form the server puts to its user,
//! leaving each field to the form's default, and answers sampling with a
//! scripted model. In the authorization scenarios (`auth/*`) it connects
//! with OAuth: the user's part of each authorization is done headless (the
//! kit's authorization server redirects at once, and the client reads the
//! redirect), with the pre-registered client the kit names in
//! `MCP_CONFORMANCE_CONTEXT` where it names one. `tests/mcp_conformance.rs`
//! runs the kit's scenarios against it.

use behest::mcp::{ConnectOptions, FormAnswer, FormRequest, McpClient, McpOAuth};
use behest::{ScriptedModel, ScriptedTurn};
use serde_json::{json, Map, Value};

/// The kit's tool that echoes a schema back (`json-schema-2020-12-preservation`).
const ECHO: &str = "json_schema_echo";

/// Arguments for a tool whose input schema is `schema`: each required
/// property a value of its type (text is the property's description, or
/// `test`), and each optional text property its description too, so that
/// what the kit's tools ask a client to send as headers (plain text, or
/// Base64 for text that is not plain ASCII) is exercised. Other optional
/// properties are left out, as a client leaves out what it has no value
/// for.
fn arguments_for(schema: &Value) -> Map<String, Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(name, property)| {
            let text = || json!(property["description"].as_str().unwrap_or("test"));
            let value = match (property["type"].as_str(), required.contains(&name.as_str())) {
                (Some("string"), _) => text(),
                (_, false) => return None,
                (Some("number" | "integer"), true) => json!(1),
                (Some("boolean"), true) => json!(true),
                (Some("array"), true) => json!([]),
                (Some("object"), true) => json!({}),
                (_, true) => text(),
            };
            Some((name.clone(), value))
        })
        .collect()
}

/// The kit's client metadata document: its authorization server takes
/// this URL as a client id.
const CLIENT_METADATA: &str = "https://conformance-test.local/client-metadata.json";

/// Where the kit's authorization server sends the user back.
const REDIRECT: &str = "http://localhost:3000/callback";

/// The user's part of an authorization, headless: open the URL without
/// following its redirect, and take the redirect as the browser would.
async fn open_headless(url: String) -> Result<String, String> {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| error.to_string())?;
    let answer = browser
        .get(&url)
        .send()
        .await
        .map_err(|error| error.to_string())?;
    answer
        .headers()
        .get("location")
        .and_then(|location| location.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the authorization page answered {} without a redirect",
                answer.status()
            )
        })
}

/// OAuth as the kit's scenario wants it: its pre-registered client where
/// the context names one.
fn oauth() -> McpOAuth {
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|context| serde_json::from_str(&context).ok())
        .unwrap_or_default();
    let oauth = McpOAuth::new(REDIRECT, open_headless)
        .client_name("behest-conformance-client")
        .client_metadata_url(CLIENT_METADATA);
    match context["client_id"].as_str() {
        Some(id) => {
            oauth.registered_client(id, context["client_secret"].as_str().map(str::to_owned))
        }
        None => oauth,
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::args()
        .next_back()
        .filter(|arg| arg.starts_with("http"))
        .ok_or("usage: mcp_conformance_client URL (the kit gives it)")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} at {url}");
    let model = ScriptedModel::new((0..8).map(|_| ScriptedTurn::text("a sampled answer")));
    let mut options = ConnectOptions::default();
    // The protocol version the kit asks for (2025-11-25 unless it says).
    if std::env::var("MCP_CONFORMANCE_PROTOCOL_VERSION").as_deref() == Ok("2026-07-28") {
        options = options.newest_protocol();
    }
    if scenario.starts_with("auth/") {
        options = options.oauth(oauth());
    }
    let options = options
        .sampling(model)
        // Every field as the form's default gives it.
        .elicitation(|form: FormRequest| async move {
            eprintln!("the server asks: {}", form.message);
            FormAnswer::Accept(Map::new())
        });
    let client = McpClient::http_with(&url, &options).await?;
    let tools = client.peer().list_all_tools().await?;
    // The kit's echo tool gets, as it asks, the input schema the client
    // read for the server's other tool: it checks that nothing was lost.
    let other_schema = tools
        .iter()
        .find(|tool| tool.name != ECHO)
        .map(|tool| serde_json::to_value(&*tool.input_schema))
        .transpose()?;
    for tool in &tools {
        let schema = serde_json::to_value(&*tool.input_schema)?;
        let arguments = match (&*tool.name, &other_schema) {
            (ECHO, Some(other)) => json!({ "schema": other })
                .as_object()
                .cloned()
                .unwrap_or_default(),
            _ => arguments_for(&schema),
        };
        // A server may refuse a call (a scenario that only lists tools):
        // its answer, not the client's failure.
        match client.call(&tool.name, arguments).await {
            Ok(result) => eprintln!("{}: {}", tool.name, serde_json::to_string(&result)?),
            Err(error) => eprintln!("{}: refused: {error}", tool.name),
        }
    }
    Ok(())
}

//! The MCP conformance kit's fixture server, in behest: the tools,
//! resources, prompts and completions the kit's server scenarios call
//! (`@modelcontextprotocol/conformance`), served over streamable HTTP.
//!
//! ```text
//! cargo run --example mcp_conformance_server --features mcp -- 3001
//! npx @modelcontextprotocol/conformance@0.1.16 server --url http://127.0.0.1:3001/mcp
//! ```
//!
//! The kit needs Node 22 or newer. `tests/mcp_conformance.rs` runs it
//! against this server, stable and prerelease, at every protocol version
//! behest serves, with the kits `.ci/test-all` installs from the npm
//! registry.
//! Every fixture is an ordinary behest tool, resource or prompt: what the
//! kit checks is what any behest server does.

use std::time::Duration;

use behest::mcp::http::{serve, HttpOptions};
use behest::mcp::{
    prompt, resource, Elicitation, McpCaller, McpCatalog, McpLogLayer, McpServer, McpTasks, Prompt,
    PromptContent, PromptMessage, PromptRole, Resource, ResourceContent, TaskSupport,
};
use behest::prelude::*;
use behest::tool::{Attachment, MediaSource};
use serde_json::json;
use tracing_subscriber::layer::SubscriberExt;

/// A 1×1 red PNG.
const IMAGE: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

/// The shortest WAV file.
const AUDIO: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

/// Answers with a simple text.
#[tool(read_only)]
fn test_simple_text() -> String {
    "This is a simple text response for testing.".to_owned()
}

/// Answers with an image.
#[tool(read_only)]
fn test_image_content() -> ToolOutput {
    ToolOutput::empty().with_image(MediaSource::base64("image/png", IMAGE))
}

/// Answers with audio.
#[tool(read_only)]
fn test_audio_content() -> ToolOutput {
    ToolOutput::empty().with_attachment(Attachment::audio("audio/wav", AUDIO))
}

/// Answers with an embedded resource.
#[tool(read_only)]
fn test_embedded_resource() -> ToolOutput {
    ToolOutput::empty().with_attachment(Attachment::text_resource(
        "test://embedded-resource",
        "This is an embedded resource content.",
    ))
}

/// Answers with text, an image and an embedded resource.
#[tool(read_only)]
fn test_multiple_content_types() -> ToolOutput {
    ToolOutput::text("Multiple content types test:")
        .with_image(MediaSource::base64("image/png", IMAGE))
        .with_attachment(Attachment::Resource {
            uri: "test://mixed-content-resource".to_owned(),
            media_type: Some("application/json".to_owned()),
            text: Some(r#"{"test":"data","value":123}"#.to_owned()),
            blob: None,
        })
}

/// Logs three messages to the client as it works.
#[tool(read_only)]
async fn test_tool_with_logging() -> String {
    for step in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        tracing::info!("{step}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "Tool with logging executed successfully".to_owned()
}

/// Reports its progress three times.
#[tool(read_only)]
async fn test_tool_with_progress(#[ctx] cx: ToolContext) -> String {
    for done in [0.0, 50.0, 100.0] {
        cx.report_progress(
            Progress::new(done, Some(100.0)).with_message(format!("Completed step {done} of 100")),
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    "progress reported".to_owned()
}

/// Fails, on purpose.
#[tool(read_only)]
fn test_error_handling() -> Result<String, ToolError> {
    Err(ToolError::execution(
        "This tool intentionally returns an error for testing",
    ))
}

/// Asks the client's model (sampling).
#[tool(read_only)]
async fn test_sampling(
    /// What to ask.
    prompt: String,
    #[ctx] cx: ToolContext,
) -> Result<String, ToolError> {
    let caller = mcp_caller(&cx)?;
    let answer = caller.sample(prompt, 100).await?;
    Ok(format!("LLM response: {answer}"))
}

/// Asks the user (elicitation) for a name and an email address.
#[tool(read_only)]
async fn test_elicitation(
    /// What to ask.
    message: String,
    #[ctx] cx: ToolContext,
) -> Result<String, ToolError> {
    let form = json!({"type": "object", "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}
    }, "required": ["username", "email"]});
    answered(mcp_caller(&cx)?.elicit_form(message, form).await?)
}

/// Asks the user a form whose fields have defaults (SEP-1034).
#[tool(read_only)]
async fn test_elicitation_sep1034_defaults(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let form = json!({"type": "object", "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {"type": "string", "description": "User status",
            "enum": ["active", "inactive", "pending"], "default": "active"},
        "verified": {"type": "boolean", "description": "Verification status", "default": true}
    }, "required": []});
    let message = "Please review and update the form fields with defaults";
    answered(mcp_caller(&cx)?.elicit_form(message, form).await?)
}

/// Asks the user to pick from every kind of list (SEP-1330).
#[tool(read_only)]
async fn test_elicitation_sep1330_enums(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let titled = |titles: [&str; 3]| -> Vec<serde_json::Value> {
        titles
            .iter()
            .enumerate()
            .map(|(at, title)| json!({"const": format!("value{}", at + 1), "title": title}))
            .collect()
    };
    let form = json!({"type": "object", "properties": {
        "untitledSingle": {"type": "string", "description": "Select one option",
            "enum": ["option1", "option2", "option3"]},
        "titledSingle": {"type": "string", "description": "Select one option with titles",
            "oneOf": titled(["First Option", "Second Option", "Third Option"])},
        "legacyEnum": {"type": "string", "description": "Select one option (legacy)",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"]},
        "untitledMulti": {"type": "array", "description": "Select multiple options",
            "minItems": 1, "maxItems": 3,
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {"type": "array", "description": "Select multiple options with titles",
            "minItems": 1, "maxItems": 3,
            "items": {"anyOf": titled(["First Choice", "Second Choice", "Third Choice"])}}
    }, "required": []});
    let message = "Please select options from the enum fields";
    answered(mcp_caller(&cx)?.elicit_form(message, form).await?)
}

// The tasks extension's fixtures (`io.modelcontextprotocol/tasks`): which
// answer with tasks is said in `main`, not here.

/// Greets, at once.
#[tool(read_only)]
fn greet(
    /// Whom to greet.
    name: String,
) -> String {
    format!("Hello, {name}!")
}

/// Computes for `seconds` seconds.
#[tool(read_only, timeout = "10m")]
async fn slow_compute(
    /// How long the computation takes.
    seconds: u64,
    /// A label for the result.
    label: Option<String>,
) -> String {
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    format!(
        "Computed {} in {seconds} s",
        label.as_deref().unwrap_or("a result")
    )
}

/// Fails after a second, as a tool's error.
#[tool(read_only)]
async fn failing_job() -> Result<String, ToolError> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    Err(ToolError::execution("the job failed, on purpose"))
}

/// Panics: its task fails with a protocol error.
#[tool(read_only)]
async fn protocol_error_job() -> String {
    tokio::time::sleep(Duration::from_millis(100)).await;
    panic!("the job broke, on purpose")
}

/// A yes or no.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirmation {
    /// Yes to go on.
    confirm: bool,
}

/// Deletes a file once the user confirms.
#[tool]
async fn confirm_delete(
    /// The file to delete.
    filename: String,
    #[ctx] cx: ToolContext,
) -> Result<String, ToolError> {
    let caller = mcp_caller(&cx)?;
    let asked = format!("Delete {filename}?");
    Ok(match caller.elicit::<Confirmation>(asked).await? {
        Elicitation::Accepted(Confirmation { confirm: true }) => format!("Deleted {filename}"),
        _ => format!("Kept {filename}"),
    })
}

/// A name.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Named {
    /// The name.
    name: String,
}

/// Asks two questions at once.
#[tool(read_only)]
async fn multi_input(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = mcp_caller(&cx)?;
    let (first, second) = futures::join!(
        caller.elicit::<Named>("The first name?"),
        caller.elicit::<Named>("The second name?")
    );
    let name = |answer: Elicitation<Named>| match answer {
        Elicitation::Accepted(Named { name }) => name,
        _ => "nobody".to_owned(),
    };
    Ok(format!("Got {} and {}", name(first?), name(second?)))
}

/// Asks the user's name in its request, then goes on as a task.
#[tool(read_only)]
async fn test_tool_with_task(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = mcp_caller(&cx)?;
    let name = match caller.elicit::<Named>("What is your name?").await? {
        Elicitation::Accepted(Named { name }) => name,
        _ => "stranger".to_owned(),
    };
    caller.continue_as_task().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    Ok(format!("Hello, {name}, from a task"))
}

/// A tool whose arguments' schema is written by hand in JSON Schema
/// 2020-12 (`$defs` with an `$anchor`, `$ref`, `allOf`/`anyOf`,
/// `if`/`then`/`else`, no other properties), served as written.
struct JsonSchema202012Tool;

impl Tool for JsonSchema202012Tool {
    fn name(&self) -> &str {
        "json_schema_2020_12_tool"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "json_schema_2020_12_tool",
            "Tool with JSON Schema 2020-12 features",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {
                        "street": {"type": "string"},
                        "city": {"type": "string"}
                    }
                }},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"}
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {
                    "properties": {"contactMethod": {"const": "phone"}},
                    "required": ["contactMethod"]
                },
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false
            }),
        )
    }

    async fn execute(&self, arguments: serde_json::Value) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(format!(
            "JSON Schema 2020-12 tool called with: {arguments}"
        )))
    }
}

/// A tool whose `region` travels as the `Mcp-Param-Region` header too
/// (`x-mcp-header`, SEP-2243): the server checks that the header says
/// what the body does.
struct HeaderTool;

impl Tool for HeaderTool {
    fn name(&self) -> &str {
        "test_custom_header"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "test_custom_header",
            "A tool whose region is mirrored in a request header",
            json!({
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "query": {"type": "string"}
                },
                "required": ["region"]
            }),
        )
    }

    async fn execute(&self, arguments: serde_json::Value) -> ToolResult<ToolOutput> {
        Ok(ToolOutput::text(format!(
            "searched {}",
            arguments["region"].as_str().unwrap_or("nowhere")
        )))
    }
}

/// The client that made the call.
fn mcp_caller(cx: &ToolContext) -> Result<&McpCaller, ToolError> {
    cx.extension::<McpCaller>()
        .ok_or_else(|| ToolError::execution("this tool asks its MCP client, and has none"))
}

/// What the user answered, as the tool's text.
fn answered(elicitation: Elicitation<serde_json::Value>) -> Result<String, ToolError> {
    Ok(match elicitation {
        Elicitation::Accepted(content) => {
            format!("Elicitation completed: action=accept, content={content}")
        }
        Elicitation::Declined => "Elicitation completed: action=decline".to_owned(),
        _ => "Elicitation completed: action=cancel".to_owned(),
    })
}

/// A resource template with parameter substitution.
#[resource(
    "test://template/{id}/data",
    name = "template",
    title = "Template Resource",
    mime_type = "application/json"
)]
fn template(id: String) -> String {
    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()
}

/// A prompt with required arguments.
#[prompt]
fn test_prompt_with_arguments(
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
) -> String {
    format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")
}

/// The kit's resources and prompts: two made by `#[resource]` and
/// `#[prompt]`, the others by hand.
fn catalog() -> Result<McpCatalog, Box<dyn std::error::Error>> {
    let catalog = McpCatalog::new()
        .resource(
            Resource::new("test://static-text", "static-text", |_| async {
                Ok(ResourceContent::text(
                    "This is the content of the static text resource.",
                ))
            })
            .title("Static Text Resource")
            .description("A static text resource for testing")
            .media_type("text/plain"),
        )?
        .resource(
            Resource::new("test://static-binary", "static-binary", |_| async {
                Ok(ResourceContent::base64(IMAGE))
            })
            .title("Static Binary Resource")
            .description("A static binary resource (image) for testing")
            .media_type("image/png"),
        )?
        .resource(Template)?
        .resource(
            Resource::new("test://watched-resource", "watched-resource", |_| async {
                Ok(ResourceContent::text("Watched resource content"))
            })
            .title("Watched Resource")
            .description("A resource that can be subscribed to")
            .media_type("text/plain"),
        )?
        .prompt(Prompt::new(
            "test_simple_prompt",
            "A simple prompt without arguments",
            |_| async {
                Ok(vec![PromptMessage::user(
                    "This is a simple prompt for testing.",
                )])
            },
        ))?
        .prompt(
            Prompt::from(TestPromptWithArguments).complete("arg1", |typed| async move {
                ["test", "testing", "tested"]
                    .into_iter()
                    .filter(|value| value.starts_with(&typed))
                    .map(str::to_owned)
                    .collect()
            })?,
        )?
        .prompt(
            Prompt::new(
                "test_prompt_with_embedded_resource",
                "A prompt that includes an embedded resource",
                |arguments| async move {
                    let content = ResourceContent::text("Embedded resource content for testing.")
                        .with_media_type("text/plain");
                    Ok(vec![
                        PromptMessage::new(
                            PromptRole::User,
                            PromptContent::Resource {
                                uri: arguments["resourceUri"].clone(),
                                content,
                            },
                        ),
                        PromptMessage::user("Please process the embedded resource above."),
                    ])
                },
            )
            .argument("resourceUri", "URI of the resource to embed", true),
        )?
        .prompt(Prompt::new(
            "test_prompt_with_image",
            "A prompt that includes image content",
            |_| async {
                Ok(vec![
                    PromptMessage::new(
                        PromptRole::User,
                        PromptContent::Image {
                            data: IMAGE.to_owned(),
                            media_type: "image/png".to_owned(),
                        },
                    ),
                    PromptMessage::user("Please analyze the image above."),
                ])
            },
        ))?;
    Ok(catalog)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Tools' log events go to their client, at the level it sets.
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(McpLogLayer))?;
    let registry = ToolRegistry::new()
        .with(TestSimpleText)?
        .with(TestImageContent)?
        .with(TestAudioContent)?
        .with(TestEmbeddedResource)?
        .with(TestMultipleContentTypes)?
        .with(TestToolWithLogging)?
        .with(TestToolWithProgress)?
        .with(TestErrorHandling)?
        .with(TestSampling)?
        .with(TestElicitation)?
        .with(TestElicitationSep1034Defaults)?
        .with(TestElicitationSep1330Enums)?
        .with(JsonSchema202012Tool)?
        .with(HeaderTool)?
        .with(Greet)?
        .with(SlowCompute)?
        .with(FailingJob)?
        .with(ProtocolErrorJob)?
        .with(ConfirmDelete)?
        .with(MultiInput)?
        .with(TestToolWithTask)?;
    let tasks = McpTasks::new()
        .tool("slow_compute", TaskSupport::Optional)
        .tool("failing_job", TaskSupport::Required)
        .tool("protocol_error_job", TaskSupport::Optional)
        .tool("confirm_delete", TaskSupport::Optional)
        .tool("multi_input", TaskSupport::Optional)
        .deferred_tool("test_tool_with_task", TaskSupport::Required)
        .poll_interval(Duration::from_millis(200));
    let server = McpServer::new(ToolRuntime::new(registry))?
        .named("behest-conformance-server", env!("CARGO_PKG_VERSION"))
        .catalog(catalog()?)
        .tasks(tasks)?;
    // Port 0 takes a free one; the first line printed names it.
    let port: u16 = match std::env::args().nth(1) {
        Some(port) => port.parse()?,
        None => 3001,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("serving MCP at http://{}/mcp", listener.local_addr()?);
    serve(listener, server)
        .options(&HttpOptions::default())
        .await?;
    Ok(())
}

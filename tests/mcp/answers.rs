//! A behest client answers what a behest server's tools ask: sampling
//! with a behest model, forms with a callback and the forms' defaults.

use behest::mcp::{
    ConnectOptions, Elicitation, FormAnswer, FormRequest, McpCaller, McpClient, McpServer,
};
use behest::{
    tool, ScriptedModel, ScriptedTurn, ToolContext, ToolError, ToolRegistry, ToolRuntime,
};
use serde_json::{json, Map};

/// Asks the client's model.
#[tool]
async fn ask_model(question: String, #[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = cx
        .extension::<McpCaller>()
        .ok_or_else(|| ToolError::execution("no client"))?;
    Ok(caller.sample(question, 50).await?)
}

/// Asks the user for a name and an age.
#[tool]
async fn ask_user(#[ctx] cx: ToolContext) -> Result<String, ToolError> {
    let caller = cx
        .extension::<McpCaller>()
        .ok_or_else(|| ToolError::execution("no client"))?;
    let form = json!({"type": "object", "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "default": 30}
    }, "required": ["name"]});
    Ok(match caller.elicit_form("Who are you?", form).await? {
        Elicitation::Accepted(content) => content.to_string(),
        _ => "no answer".to_owned(),
    })
}

async fn client(options: ConnectOptions) -> McpClient {
    let registry = ToolRegistry::new()
        .with(AskModel)
        .unwrap()
        .with(AskUser)
        .unwrap();
    let server = McpServer::new(ToolRuntime::new(registry)).unwrap();
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve_on(server_end).await });
    McpClient::connect_with(client_end, &options).await.unwrap()
}

/// `options` answering sampling with "forty-two", and forms with the name
/// Ann (the age left to its default, 30).
fn answering(options: ConnectOptions) -> ConnectOptions {
    options
        .sampling(ScriptedModel::new([ScriptedTurn::text("forty-two")]))
        .elicitation(|form: FormRequest| async move {
            assert_eq!(form.schema["properties"]["age"]["default"], 30);
            let mut given = Map::new();
            given.insert("name".to_owned(), json!("Ann"));
            FormAnswer::Accept(given)
        })
}

async fn call(client: &McpClient, name: &'static str, arguments: serde_json::Value) -> String {
    let arguments = arguments.as_object().cloned().unwrap_or_default();
    crate::server::text_of(&client.call(name, arguments).await.unwrap())
}

#[tokio::test]
async fn a_client_answers_sampling_with_its_model_and_forms_with_their_defaults() {
    let client = client(answering(ConnectOptions::default())).await;
    assert_eq!(
        call(
            &client,
            "ask_model",
            json!({"question": "What is six times seven?"})
        )
        .await,
        "forty-two"
    );
    assert_eq!(
        call(&client, "ask_user", json!({})).await,
        r#"{"age":30,"name":"Ann"}"#
    );
}

#[tokio::test]
async fn a_client_without_answerers_is_not_asked() {
    let client = client(ConnectOptions::default()).await;
    let said = call(&client, "ask_model", json!({"question": "?"})).await;
    assert!(said.contains("did not declare `sampling`"), "{said}");
    let said = call(&client, "ask_user", json!({})).await;
    assert!(said.contains("did not declare `elicitation`"), "{said}");
}

/// Under protocol 2026-07-28 a tool's questions are input-required
/// rounds: the client answers them the same way.
#[tokio::test]
async fn under_the_newest_protocol_the_client_answers_in_rounds() {
    let client = client(answering(ConnectOptions::default().newest_protocol())).await;
    assert_eq!(
        client
            .peer()
            .peer_info()
            .map(|info| info.protocol_version.to_string()),
        Some("2026-07-28".to_owned())
    );
    assert_eq!(
        call(&client, "ask_model", json!({"question": "?"})).await,
        "forty-two"
    );
    assert_eq!(
        call(&client, "ask_user", json!({})).await,
        r#"{"age":30,"name":"Ann"}"#
    );
}

/// An imported tool answers its server's input-required rounds too: the
/// model's run sees the tool's answer, not a round.
#[tokio::test]
async fn an_imported_tool_answers_its_rounds_under_the_newest_protocol() {
    let options = ConnectOptions::default()
        .newest_protocol()
        .sampling(ScriptedModel::new([ScriptedTurn::text("forty-two")]));
    let client = client(options).await;
    let registry = crate::mcp_support::imported(&client).await;
    let runtime = ToolRuntime::new(registry);
    let result = runtime
        .call(behest::ToolCall::new(
            "c1",
            "ask_model",
            json!({"question": "What is six times seven?"}),
        ))
        .await;
    assert_eq!(result.outcome.unwrap().to_text(), "forty-two");
    // A question this client cannot answer is the call's error, said so.
    let result = runtime
        .call(behest::ToolCall::new("c2", "ask_user", json!({})))
        .await;
    let said = result.to_model_text();
    assert!(said.contains("elicitation"), "{said}");
}

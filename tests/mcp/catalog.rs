//! Resources, resource templates, prompts and completions served beside
//! the tools, read by rmcp's client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::mcp::rmcp::model::{
    ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, ReadResourceRequestParams,
    Reference, ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use behest::mcp::rmcp::service::{NotificationContext, RunningService};
use behest::mcp::rmcp::{ClientHandler, RoleClient, ServiceExt};
use behest::mcp::{
    McpCatalog, McpServer, Prompt, PromptContent, PromptMessage, PromptRole, Resource,
    ResourceContent,
};
use behest::{ToolError, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

/// A client that keeps the URIs it is told were updated, and the lists it
/// is told changed.
#[derive(Clone, Default)]
struct Updates(Arc<Mutex<Vec<String>>>);

impl ClientHandler for Updates {
    async fn on_resource_updated(
        &self,
        params: ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.uri);
    }

    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push("resources changed".to_owned());
    }

    async fn on_prompt_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.0.lock().unwrap().push("prompts changed".to_owned());
    }
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

fn catalog() -> McpCatalog {
    McpCatalog::new()
        .resource(
            Resource::new("test://static-text", "static-text", |_| async {
                Ok(ResourceContent::text("static text"))
            })
            .media_type("text/plain")
            .description("A text that never changes"),
        )
        .unwrap()
        .resource(
            Resource::new("test://static-binary", "static-binary", |_| async {
                Ok(ResourceContent::base64(PNG))
            })
            .media_type("image/png"),
        )
        .unwrap()
        .resource(
            Resource::template("test://orders/{id}/data", "order", |read| async move {
                let id = read.variable("id")?;
                if id == "0" {
                    return Err(ToolError::execution("order 0 is not kept"));
                }
                Ok(ResourceContent::text(json!({ "id": id }).to_string()))
            })
            .unwrap()
            .media_type("application/json")
            .complete("id", |typed| async move {
                ["100", "101", "200"]
                    .into_iter()
                    .filter(|id| id.starts_with(&typed))
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap(),
        )
        .unwrap()
        .prompt(
            Prompt::new("greet", "Greet someone", |arguments| async move {
                let name = &arguments["name"];
                let tone = arguments.get("tone").map_or("warmly", String::as_str);
                Ok(vec![
                    PromptMessage::user(format!("Greet {name} {tone}.")),
                    PromptMessage::new(
                        PromptRole::User,
                        PromptContent::Resource {
                            uri: "test://static-text".into(),
                            content: ResourceContent::text("context").with_media_type("text/plain"),
                        },
                    ),
                    PromptMessage::new(
                        PromptRole::Assistant,
                        PromptContent::Image {
                            data: PNG.into(),
                            media_type: "image/png".into(),
                        },
                    ),
                ])
            })
            .argument("name", "Who to greet", true)
            .argument("tone", "How", false)
            .complete("tone", |typed| async move {
                (0..150).map(|n| format!("{typed}{n}")).collect()
            })
            .unwrap(),
        )
        .unwrap()
}

async fn connect(server: McpServer) -> RunningService<RoleClient, Updates> {
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server.serve_on(server_end).await });
    Updates::default().serve(client_end).await.unwrap()
}

fn server() -> McpServer {
    McpServer::new(ToolRuntime::new(ToolRegistry::new()))
        .unwrap()
        .catalog(catalog())
        .page_size(1)
}

fn json_of<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap()
}

#[tokio::test]
async fn resources_are_listed_page_by_page_and_read_as_text_bytes_or_by_template() {
    let client = connect(server()).await;
    let info = json_of(&client.peer_info().unwrap().capabilities);
    assert_eq!(
        info["resources"],
        json!({ "subscribe": true, "listChanged": true })
    );
    assert_eq!(info["prompts"], json!({ "listChanged": true }));
    assert!(info["completions"].is_object(), "{info}");

    let first = client.list_resources(None).await.unwrap();
    assert_eq!(first.resources.len(), 1);
    let cursor = first.next_cursor.clone().expect("a second page");
    let second = client
        .list_resources(Some(
            behest::mcp::rmcp::model::PaginatedRequestParams::default().with_cursor(Some(cursor)),
        ))
        .await
        .unwrap();
    assert!(second.next_cursor.is_none());
    let listed: Vec<Value> = first
        .resources
        .iter()
        .chain(&second.resources)
        .map(json_of)
        .collect();
    assert_eq!(listed[0]["uri"], "test://static-text");
    assert_eq!(listed[0]["mimeType"], "text/plain");
    assert_eq!(listed[0]["description"], "A text that never changes");
    assert_eq!(listed[1]["name"], "static-binary");
    let templates = json_of(&client.list_resource_templates(None).await.unwrap());
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "test://orders/{id}/data"
    );

    let read = |uri: &str| {
        let client = &client;
        let uri = uri.to_owned();
        async move {
            client
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
        }
    };
    let text = json_of(&read("test://static-text").await.unwrap());
    assert_eq!(
        text["contents"][0],
        json!({ "uri": "test://static-text", "mimeType": "text/plain", "text": "static text" })
    );
    let binary = json_of(&read("test://static-binary").await.unwrap());
    assert_eq!(binary["contents"][0]["blob"], PNG);
    assert_eq!(binary["contents"][0]["mimeType"], "image/png");
    let order = json_of(&read("test://orders/123/data").await.unwrap());
    assert_eq!(order["contents"][0]["uri"], "test://orders/123/data");
    assert_eq!(order["contents"][0]["text"], r#"{"id":"123"}"#);

    // Nothing there: -32002 with the URI; a read that fails: its reason.
    let missing = read("test://nothing").await.unwrap_err().to_string();
    assert!(
        missing.contains("no resource is at `test://nothing`"),
        "{missing}"
    );
    assert!(missing.contains("-32002"), "{missing}");
    let failed = read("test://orders/0/data").await.unwrap_err().to_string();
    assert!(failed.contains("order 0 is not kept"), "{failed}");
}

#[tokio::test]
async fn prompts_are_got_with_their_arguments_checked() {
    let client = connect(server()).await;
    let listed = json_of(&client.list_all_prompts().await.unwrap());
    assert_eq!(listed[0]["name"], "greet");
    assert_eq!(listed[0]["description"], "Greet someone");
    assert_eq!(
        listed[0]["arguments"],
        json!([
            { "name": "name", "description": "Who to greet", "required": true },
            { "name": "tone", "description": "How", "required": false },
        ])
    );
    let got = client
        .get_prompt(
            GetPromptRequestParams::new("greet")
                .with_arguments(json!({ "name": "Ann" }).as_object().cloned().unwrap()),
        )
        .await
        .unwrap();
    let got = json_of(&got);
    assert_eq!(got["messages"][0]["content"]["text"], "Greet Ann warmly.");
    assert_eq!(got["messages"][1]["content"]["type"], "resource");
    assert_eq!(got["messages"][1]["content"]["resource"]["text"], "context");
    assert_eq!(got["messages"][2]["role"], "assistant");
    assert_eq!(got["messages"][2]["content"]["type"], "image");

    let refused = |arguments: Value| {
        let client = &client;
        async move {
            client
                .get_prompt(
                    GetPromptRequestParams::new("greet")
                        .with_arguments(arguments.as_object().cloned().unwrap()),
                )
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let missing = refused(json!({ "tone": "coldly" })).await;
    assert!(
        missing.contains("needs the argument(s) `name`"),
        "{missing}"
    );
    let unknown = refused(json!({ "name": "Ann", "mood": "x" })).await;
    assert!(unknown.contains("no argument(s) `mood`"), "{unknown}");
    let nobody = client
        .get_prompt(GetPromptRequestParams::new("nobody"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        nobody.contains("no prompt is named `nobody` (the prompts: greet)"),
        "{nobody}"
    );
}

#[tokio::test]
async fn completions_give_at_most_a_hundred_values_and_say_how_many_there_were() {
    let client = connect(server()).await;
    let complete = |reference: Reference, name: &str, value: &str| {
        let client = &client;
        let argument = ArgumentInfo::new(name, value);
        async move {
            client
                .complete(CompleteRequestParams::new(reference, argument))
                .await
        }
    };
    let tone = json_of(
        &complete(Reference::for_prompt("greet"), "tone", "x")
            .await
            .unwrap(),
    );
    assert_eq!(tone["completion"]["values"].as_array().unwrap().len(), 100);
    assert_eq!(tone["completion"]["total"], 150);
    assert_eq!(tone["completion"]["hasMore"], true);
    // An argument without completions has none.
    let name = json_of(
        &complete(Reference::for_prompt("greet"), "name", "A")
            .await
            .unwrap(),
    );
    assert_eq!(name["completion"]["values"], json!([]));
    let id = json_of(
        &complete(
            Reference::for_resource("test://orders/{id}/data"),
            "id",
            "10",
        )
        .await
        .unwrap(),
    );
    assert_eq!(id["completion"]["values"], json!(["100", "101"]));
    let unknown = complete(Reference::for_prompt("nobody"), "x", "")
        .await
        .unwrap_err()
        .to_string();
    assert!(unknown.contains("no prompt is named `nobody`"), "{unknown}");
}

// `resources/subscribe` is how the versions before 2026-07-28 subscribe.
#[allow(deprecated)]
#[tokio::test]
async fn a_subscribed_client_is_told_of_updates_until_it_unsubscribes() {
    let server = server();
    let client = connect(server.clone()).await;
    let other = connect(server.clone()).await;
    client
        .subscribe(SubscribeRequestParams::new("test://orders/7/data"))
        .await
        .unwrap();
    let missing = client
        .subscribe(SubscribeRequestParams::new("test://nothing"))
        .await
        .unwrap_err()
        .to_string();
    assert!(missing.contains("-32002"), "{missing}");
    server.resource_updated("test://orders/7/data").await;
    server.resource_updated("test://static-text").await;
    let updates = client.service().0.clone();
    for _ in 0..100 {
        if !updates.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(*updates.lock().unwrap(), ["test://orders/7/data"]);
    assert!(other.service().0.lock().unwrap().is_empty());
    client
        .unsubscribe(behest::mcp::rmcp::model::UnsubscribeRequestParams::new(
            "test://orders/7/data",
        ))
        .await
        .unwrap();
    server.resource_updated("test://orders/7/data").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(updates.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn a_server_without_a_catalog_offers_no_resources_or_prompts() {
    let client = connect(McpServer::new(ToolRuntime::new(ToolRegistry::new())).unwrap()).await;
    let info = json_of(&client.peer_info().unwrap().capabilities);
    assert!(info.get("resources").is_none(), "{info}");
    assert!(info.get("prompts").is_none(), "{info}");
    assert!(info.get("completions").is_none(), "{info}");
}

#[tokio::test]
async fn a_replaced_catalog_is_served_to_every_client_and_announced() {
    let server = server();
    let client = connect(server.clone()).await;
    // A request first: the server knows a client once it is initialized.
    client.list_all_prompts().await.unwrap();
    let fewer = McpCatalog::new()
        .prompt(Prompt::new("only", "The only prompt", |_| async {
            Ok(vec![PromptMessage::user("hi")])
        }))
        .unwrap();
    server.replace_catalog(fewer).await;
    let told = client.service().0.clone();
    for _ in 0..100 {
        if told.lock().unwrap().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        *told.lock().unwrap(),
        ["resources changed", "prompts changed"]
    );
    let prompts = json_of(&client.list_all_prompts().await.unwrap());
    assert_eq!(prompts[0]["name"], "only");
    assert_eq!(prompts.as_array().unwrap().len(), 1);
    assert!(client.list_all_resources().await.unwrap().is_empty());
}

/// behest's client reads a behest server's catalog: lists, reads, and a
/// prompt's messages as a run's conversation.
#[tokio::test]
async fn behest_s_client_lists_reads_and_gets_prompts_as_messages() {
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    tokio::spawn(async move { server().serve_on(server_end).await });
    let client = behest::mcp::McpClient::connect(client_end).await.unwrap();
    let resources = client.resources().await.unwrap();
    let uris: Vec<&str> = resources
        .iter()
        .map(|resource| resource.uri.as_str())
        .collect();
    assert_eq!(uris, ["test://static-text", "test://static-binary"]);
    assert_eq!(resources[0].media_type.as_deref(), Some("text/plain"));
    let templates = client.resource_templates().await.unwrap();
    assert_eq!(templates[0].uri, "test://orders/{id}/data");
    assert_eq!(
        client.read("test://orders/5/data").await.unwrap(),
        [ResourceContent::text(r#"{"id":"5"}"#).with_media_type("application/json")]
    );
    assert_eq!(
        client.read("test://static-binary").await.unwrap(),
        [ResourceContent::base64(PNG).with_media_type("image/png")]
    );
    let missing = client.read("test://nothing").await.unwrap_err().to_string();
    assert!(
        missing.contains("no resource is at `test://nothing`"),
        "{missing}"
    );
    let prompts = client.prompts().await.unwrap();
    assert_eq!(prompts[0].name, "greet");
    assert!(prompts[0].arguments[0].required);
    assert!(!prompts[0].arguments[1].required);
    let messages = client.prompt("greet", [("name", "Ann")]).await.unwrap();
    assert_eq!(messages[0], behest::Message::user("Greet Ann warmly."));
    assert_eq!(messages[1], behest::Message::user("context"));
    assert!(
        matches!(&messages[2], behest::Message::Assistant(reply) if reply.text.as_deref() == Some("[image]"))
    );
    let refused = client
        .prompt("greet", std::iter::empty::<(String, String)>())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("needs the argument(s) `name`"),
        "{refused}"
    );
}

/// What a client sends wrong is refused with what it can fix: a cursor no
/// list gave, a URI past the longest read, a bad escape, a variable of the
/// wrong type, a completion of a template that is not there.
#[tokio::test]
async fn bad_requests_get_errors_the_client_can_act_on() {
    use behest::mcp::rmcp::model::PaginatedRequestParams;

    let catalog = catalog()
        .resource(
            Resource::template("test://counts/{n}", "count", |read| async move {
                let n: u32 = read
                    .variable("n")?
                    .parse()
                    .map_err(|_| ToolError::invalid_argument("n", "not a count"))?;
                Ok(ResourceContent::text(n.to_string()))
            })
            .unwrap(),
        )
        .unwrap();
    let server = McpServer::new(ToolRuntime::new(ToolRegistry::new()))
        .unwrap()
        .catalog(catalog);
    let client = connect(server).await;
    let cursor = || Some(PaginatedRequestParams::default().with_cursor(Some("999".into())));
    let said = client
        .list_resources(cursor())
        .await
        .unwrap_err()
        .to_string();
    assert!(said.contains("invalid cursor `999`"), "{said}");
    let said = client.list_prompts(cursor()).await.unwrap_err().to_string();
    assert!(said.contains("invalid cursor `999`"), "{said}");
    let said = client
        .list_resource_templates(cursor())
        .await
        .unwrap_err()
        .to_string();
    assert!(said.contains("invalid cursor `999`"), "{said}");
    let read = |uri: String| {
        let client = &client;
        async move {
            client
                .read_resource(ReadResourceRequestParams::new(uri))
                .await
                .unwrap_err()
                .to_string()
        }
    };
    let huge = format!(
        "test://orders/{}/data",
        "7".repeat(behest::mcp::MAX_URI_BYTES)
    );
    assert!(read(huge).await.contains("-32002"));
    assert!(read("test://orders/a%zz/data".into())
        .await
        .contains("-32002"));
    let said = read("test://counts/many".into()).await;
    assert!(
        said.contains("-32602") && said.contains("not a count"),
        "{said}"
    );
    let said = client
        .complete(CompleteRequestParams::new(
            Reference::for_resource("test://nothing/{x}"),
            ArgumentInfo::new("x", ""),
        ))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        said.contains("no resource template is `test://nothing/{x}`"),
        "{said}"
    );
}

/// Under protocol 2026-07-28 a client listens (`subscriptions/listen`) on
/// a request's stream, over stateless HTTP too: it is told of the
/// resources it named and the lists it asked about, and of nothing else.
#[tokio::test]
async fn a_listening_client_is_told_of_what_it_asked_for_over_stateless_http() {
    let server = server();
    let mut options = behest::mcp::http::HttpOptions::default();
    options.stateless = true;
    let app = behest::mcp::http::router(server.clone(), "/mcp", &options);
    let addr = crate::mcp_support::serve_app(app).await;
    let params = json!({
        "notifications": {
            "toolsListChanged": true,
            "resourceSubscriptions": ["test://orders/7/data", "test://nothing"],
        },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {},
        },
    });
    let mut stream = crate::mcp_support::http_client()
        .post(format!("http://{addr}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen", "params": params}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    // The stream's events, as JSON, until `enough` of them came.
    let mut seen: Vec<Value> = Vec::new();
    let mut buffer = String::new();
    let read = |buffer: &mut String, seen: &mut Vec<Value>| {
        while let Some(end) = buffer.find("\n\n") {
            let event: String = buffer.drain(..end + 2).collect();
            for line in event.lines() {
                if let Some(data) = line.strip_prefix("data:") {
                    if let Ok(value) = serde_json::from_str(data.trim()) {
                        seen.push(value);
                    }
                }
            }
        }
    };
    // The listener is kept just after its acknowledgement goes out (rmcp
    // sends it first): the changes are made again until the stream tells
    // of them.
    let has = |seen: &[Value], method: &str| seen.iter().any(|event| event["method"] == method);
    let mut deadline = 100;
    while !(has(&seen, "notifications/resources/updated")
        && has(&seen, "notifications/tools/list_changed"))
    {
        deadline -= 1;
        assert!(
            deadline > 0,
            "the changes never reached the stream: {seen:?}"
        );
        if !seen.is_empty() {
            server.resource_updated("test://static-text").await;
            server.resource_updated("test://orders/7/data").await;
            server
                .replace_runtime(ToolRuntime::new(ToolRegistry::new()))
                .await
                .unwrap();
        }
        if let Ok(chunk) = tokio::time::timeout(Duration::from_millis(100), stream.chunk()).await {
            let chunk = chunk.unwrap().expect("the stream is open");
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            read(&mut buffer, &mut seen);
        }
    }
    // The acknowledgement names what is listened for: a URI the catalog
    // does not have is left out.
    assert_eq!(
        seen[0]["method"],
        "notifications/subscriptions/acknowledged"
    );
    assert_eq!(
        seen[0]["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://orders/7/data"])
    );
    let methods: Vec<&str> = seen
        .iter()
        .filter_map(|event| event["method"].as_str())
        .collect();
    assert!(
        methods.contains(&"notifications/resources/updated"),
        "{seen:?}"
    );
    assert!(
        methods.contains(&"notifications/tools/list_changed"),
        "{seen:?}"
    );
    // Only the resource it named.
    let updated = seen
        .iter()
        .filter(|event| event["method"] == "notifications/resources/updated");
    for event in updated {
        assert_eq!(event["params"]["uri"], "test://orders/7/data", "{seen:?}");
    }
}

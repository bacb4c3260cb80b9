//! Azure OpenAI against a local server that answers as Azure does: the v1
//! API and a deployment's own path by `api-version`, the `api-key` header,
//! Microsoft Entra ID tokens asked again before they expire, and Azure's
//! error bodies.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use behest::models::azure::AzureChat;
use behest::models::{AccessToken, TokenSource};
use behest::{Agent, Message, Model, ModelError, ModelSettings, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

use crate::models_support::{Reply, Server};

/// The server as an Azure resource's endpoint (its origin).
fn endpoint(server: &Server) -> String {
    server.url().trim_end_matches("/v1").to_owned()
}

/// A chat completion as Azure answers it: OpenAI's shape with Azure's
/// content-filter results beside it.
fn azure_answer(text: &str) -> Value {
    json!({
        "id": "chatcmpl-AZ1", "object": "chat.completion", "created": 1_765_000_000,
        "model": "gpt-4.1-2025-04-14",
        "prompt_filter_results": [{"prompt_index": 0, "content_filter_results": {
            "hate": {"filtered": false, "severity": "safe"},
            "self_harm": {"filtered": false, "severity": "safe"}}}],
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": null,
            "content_filter_results": {"hate": {"filtered": false, "severity": "safe"}},
            "message": {"role": "assistant", "content": text, "refusal": null, "annotations": []}}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0}},
        "system_fingerprint": "fp_azure"
    })
}

#[tokio::test]
async fn a_deployment_is_asked_on_the_v1_api_or_by_its_api_version_with_its_key() {
    let responses_answer = json!({"id": "resp_1", "object": "response", "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Hello from Responses.", "annotations": []}]}],
        "usage": {"input_tokens": 10, "output_tokens": 4}});
    let server = Server::start([
        Reply::json(&azure_answer("Hello from v1.")),
        Reply::json(&azure_answer("Hello by api-version.")),
        Reply::json(&responses_answer),
        Reply::json(&responses_answer),
    ])
    .await;
    let hi = [Message::user("Hi")];
    let settings = ModelSettings::new().max_tokens(64);
    let v1 = AzureChat::new("gpt41-prod")
        .base_url(endpoint(&server))
        .api_key("azure-key")
        .settings(settings.clone())
        .stream(false);
    let turn = v1.respond(&hi, &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Hello from v1."));
    assert_eq!(turn.usage.unwrap().input_tokens, 12);
    let dated = AzureChat::new("gpt41-prod")
        .base_url(endpoint(&server))
        .api_key("azure-key")
        .api_version("2024-10-21")
        .stream(false);
    let turn = dated.respond(&hi, &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Hello by api-version."));
    for version in [None, Some("2025-04-01-preview")] {
        let mut responses = behest::models::azure::AzureResponses::new("gpt5-prod")
            .base_url(endpoint(&server))
            .api_key("azure-key")
            .stream(false);
        if let Some(version) = version {
            responses = responses.api_version(version);
        }
        let turn = responses.respond(&hi, &[]).await.unwrap();
        assert_eq!(turn.text.as_deref(), Some("Hello from Responses."));
    }

    let received = server.received();
    assert_eq!(received[0].path, "/openai/v1/chat/completions");
    assert_eq!(
        received[1].path,
        "/openai/deployments/gpt41-prod/chat/completions?api-version=2024-10-21"
    );
    // Responses: on v1, and on the dated API under `openai/`, the
    // deployment as the body's model either way.
    assert_eq!(received[2].path, "/openai/v1/responses");
    assert_eq!(
        received[3].path,
        "/openai/responses?api-version=2025-04-01-preview"
    );
    for request in &received {
        assert_eq!(request.headers["api-key"], "azure-key");
        assert!(request.headers.get("authorization").is_none());
    }
    assert_eq!(received[0].body["model"], "gpt41-prod");
    assert_eq!(received[3].body["model"], "gpt5-prod");
    // Azure's name for the limit, whatever the deployment is called.
    assert_eq!(received[0].body["max_completion_tokens"], 64);
    assert!(received[0].body.get("max_tokens").is_none());
}

/// Entra ID tokens from a source that counts how often it is asked.
struct Entra {
    asked: Arc<AtomicUsize>,
    lasts: Duration,
}

impl TokenSource for Entra {
    fn token(&self) -> futures::future::BoxFuture<'_, Result<AccessToken, ModelError>> {
        Box::pin(async move {
            let n = self.asked.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(AccessToken {
                token: format!("entra-{n}"),
                expires_at: SystemTime::now() + self.lasts,
            })
        })
    }
}

#[tokio::test]
async fn entra_tokens_go_in_place_of_the_key_and_are_asked_again_before_they_expire() {
    let server = Server::start((0..5).map(|_| Reply::json(&azure_answer("ok")))).await;
    let hi = [Message::user("Hi")];
    let asked = Arc::new(AtomicUsize::new(0));
    let client = |lasts| {
        AzureChat::new("gpt41-prod")
            .base_url(endpoint(&server))
            .api_key("not-sent")
            .token_source(Entra {
                asked: asked.clone(),
                lasts,
            })
            .stream(false)
    };
    // An hour left: one token serves both requests.
    let hour = client(Duration::from_secs(3600));
    hour.respond(&hi, &[]).await.unwrap();
    hour.respond(&hi, &[]).await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 1);
    // Given for two minutes: kept for its first half, then asked again.
    let short = client(Duration::from_secs(120));
    short.respond(&hi, &[]).await.unwrap();
    short.respond(&hi, &[]).await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    // Already past its end when given: asked again each time.
    let stale = client(Duration::ZERO);
    stale.respond(&hi, &[]).await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    let received = server.received();
    let bearers: Vec<&str> = received
        .iter()
        .map(|request| request.headers["authorization"].to_str().unwrap())
        .collect();
    assert_eq!(
        bearers,
        [
            "Bearer entra-1",
            "Bearer entra-1",
            "Bearer entra-2",
            "Bearer entra-2",
            "Bearer entra-3"
        ]
    );
    assert!(received
        .iter()
        .all(|request| request.headers.get("api-key").is_none()));
}

/// A token the API refuses (401: revoked before its time) is not sent
/// again: the next request asks the source for a new one.
#[tokio::test]
async fn a_refused_token_is_asked_again() {
    let refused = Reply::error(
        401,
        &json!({"error": {"code": "401", "message": "Access denied due to invalid subscription key or wrong API endpoint."}}),
    );
    let server = Server::start([refused, Reply::json(&azure_answer("ok"))]).await;
    let asked = Arc::new(AtomicUsize::new(0));
    let client = AzureChat::new("gpt41-prod")
        .base_url(endpoint(&server))
        .token_source(Entra {
            asked: asked.clone(),
            lasts: Duration::from_secs(3600),
        })
        .stream(false);
    let hi = [Message::user("Hi")];
    let error = client.respond(&hi, &[]).await.unwrap_err();
    assert_eq!(error.status, Some(401));
    client.respond(&hi, &[]).await.unwrap();
    assert_eq!(asked.load(Ordering::SeqCst), 2);
    let bearers: Vec<String> = server
        .received()
        .iter()
        .map(|request| {
            request.headers["authorization"]
                .to_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(bearers, ["Bearer entra-1", "Bearer entra-2"]);
}

#[tokio::test]
async fn azure_errors_become_model_errors_of_their_kind() {
    let server = Server::start([
        Reply::error(404, &json!({"error": {"code": "DeploymentNotFound",
            "message": "The API deployment for this resource does not exist. If you created the deployment within the last 5 minutes, please wait a moment and try again."}})),
        Reply::error(400, &json!({"error": {
            "message": "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.",
            "type": null, "param": "prompt", "code": "content_filter", "status": 400,
            "innererror": {"code": "ResponsibleAIPolicyViolation",
                "content_filter_result": {"violence": {"filtered": true, "severity": "medium"}}}}})),
    ])
    .await;
    let client = AzureChat::new("gone")
        .base_url(endpoint(&server))
        .api_key("k")
        .stream(false)
        .retry(behest::models::RetryPolicy::none());
    let hi = [Message::user("Hi")];
    let missing = client.respond(&hi, &[]).await.unwrap_err();
    assert_eq!(missing.status, Some(404));
    assert_eq!(missing.kind.as_deref(), Some("DeploymentNotFound"));
    assert!(missing.message.contains("does not exist"), "{missing}");
    let filtered = client.respond(&hi, &[]).await.unwrap_err();
    assert_eq!(
        filtered.kind.as_deref(),
        Some("content_filter"),
        "{filtered}"
    );
    assert!(!filtered.retryable);
}

#[tokio::test]
async fn a_client_without_an_endpoint_says_where_to_give_one() {
    if std::env::var_os("AZURE_OPENAI_ENDPOINT").is_some() {
        return eprintln!("skipped: AZURE_OPENAI_ENDPOINT is set here");
    }
    let agent = Agent::new(
        AzureChat::new("gpt41-prod").api_key("k"),
        ToolRuntime::new(ToolRegistry::new()),
    );
    let outcome = agent.invoke([Message::user("Hi")]).await;
    let error = match outcome {
        behest::RunOutcome::Failed { error, .. } => error.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(error.contains("AZURE_OPENAI_ENDPOINT"), "{error}");
}

/// Get the weather of a city.
#[behest::tool]
fn city_weather(city: String) -> String {
    format!("Mild in {city}.")
}

/// A reasoning deployment under a name that does not say so (`prod-agent`)
/// is not asked for encrypted reasoning; its reasoning items, which came
/// without it, stay out of the next request, where Azure, as OpenAI, would
/// look them up by their ids in a store that was not kept and refuse them.
#[tokio::test]
async fn a_reasoning_deployment_under_any_name_runs_its_tools() {
    let call = json!({"id": "resp_1", "object": "response", "status": "completed",
        "model": "gpt-5-mini-2025-08-07",
        "output": [
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "city_weather",
                "arguments": "{\"city\":\"Lyon\"}", "status": "completed"}],
        "usage": {"input_tokens": 20, "output_tokens": 30}});
    let answer = json!({"id": "resp_2", "object": "response", "status": "completed",
        "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": "Mild in Lyon.", "annotations": []}]}],
        "usage": {"input_tokens": 40, "output_tokens": 4}});
    // Azure's Responses API, as OpenAI's: a reasoning item sent back
    // without its content is looked up by its id, in a store not kept.
    let answers = Arc::new(std::sync::Mutex::new(vec![answer, call]));
    let service = || {
        let answers = answers.clone();
        Reply::decide(move |request| {
            let input = request.body["input"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let unknown = input.iter().find(|item| {
                item["type"] == "reasoning" && item.get("encrypted_content").is_none()
            });
            if let Some(item) = unknown {
                let id = item["id"].as_str().unwrap_or_default();
                return Reply::error(
                    404,
                    &json!({"error": {
                    "message": format!("Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."),
                    "type": "invalid_request_error", "param": "input", "code": null}}),
                );
            }
            Reply::json(&answers.lock().unwrap().pop().unwrap())
        })
    };
    let server = Server::start([service(), service()]).await;
    let model = behest::models::azure::AzureResponses::new("prod-agent")
        .base_url(endpoint(&server))
        .api_key("azure-key")
        .stream(false);
    let runtime = ToolRuntime::new(ToolRegistry::new().with(CityWeather).unwrap());
    let outcome = Agent::new(model, runtime)
        .invoke([Message::user("Weather in Lyon?")])
        .await;
    assert_eq!(outcome.text(), Some("Mild in Lyon."), "{outcome:?}");
    let received = server.received();
    assert!(received[0].body.get("include").is_none());
    let input = received[1].body["input"].as_array().unwrap();
    assert!(input.iter().all(|item| item["type"] != "reasoning"));
    assert!(input
        .iter()
        .any(|item| item["type"] == "function_call" && item.get("id").is_none()));
}

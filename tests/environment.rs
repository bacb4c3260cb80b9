//! The official SDKs' environment conventions: `OPENAI_BASE_URL` (and the
//! other providers' variables) names where a client goes, and the
//! environment's key goes there; an explicit `.base_url(..)` does not take
//! the environment's key along. One test alone in its binary: it sets the
//! process's environment.
#![cfg(feature = "models")]

#[allow(dead_code)]
#[path = "support/models.rs"]
mod models_support;

use behest::models::anthropic::Messages;
use behest::models::openai::Chat;
use behest::{Message, Model};
use models_support::{Reply, Server};
use serde_json::json;

#[tokio::test]
async fn the_environment_s_base_url_gets_the_environment_s_key() {
    let named = Server::start([
        Reply::json(&json!({"choices": [{"index": 0, "finish_reason": "stop",
            "message": {"role": "assistant", "content": "from the named server"}}]})),
        Reply::json(
            &json!({"id": "msg_1", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": "from the proxy"}], "stop_reason": "end_turn"}),
        ),
    ])
    .await;
    let other = Server::start([Reply::json(&json!({"choices": [{"index": 0,
        "finish_reason": "stop", "message": {"role": "assistant", "content": "elsewhere"}}]}))])
    .await;
    std::env::set_var("OPENAI_BASE_URL", named.url());
    std::env::set_var("OPENAI_API_KEY", "sk-from-env");
    std::env::set_var("ANTHROPIC_BASE_URL", named.url());
    std::env::set_var("ANTHROPIC_API_KEY", "sk-ant-from-env");
    let hi = [Message::user("hi")];
    let answer = Chat::new("llama3.2")
        .stream(false)
        .respond(&hi, &[])
        .await
        .unwrap();
    assert_eq!(answer.text.as_deref(), Some("from the named server"));
    let claude = Messages::new("claude-sonnet-4-5").stream(false);
    assert_eq!(
        claude.respond(&hi, &[]).await.unwrap().text.as_deref(),
        Some("from the proxy")
    );
    let received = named.received();
    assert_eq!(received[0].path, "/v1/chat/completions");
    assert_eq!(received[0].headers["authorization"], "Bearer sk-from-env");
    assert_eq!(received[1].path, "/v1/messages");
    assert_eq!(received[1].headers["x-api-key"], "sk-ant-from-env");
    // A base URL given in code is another server: the key stays home.
    let elsewhere = Chat::new("llama3.2").base_url(other.url()).stream(false);
    elsewhere.respond(&hi, &[]).await.unwrap();
    assert!(other.received()[0].headers.get("authorization").is_none());
}

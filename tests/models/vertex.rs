//! Vertex AI against a local server that answers as Vertex AI and Google's
//! token endpoints do: Gemini's stream at its project and location, Claude
//! through `rawPredict` and `streamRawPredict`, and the token exchanges of
//! a service account's key, a user's credentials and the metadata server.
//! Each exchange is checked against google-auth, Google's own Python
//! library, doing the same against the same server (when `BEHEST_PYTHON`
//! has it; `.ci/run` installs it; without it those tests say "skipped"): the same request, and an assertion
//! whose signature google-auth verifies with the key's public half.

use behest::models::google::GoogleCredentials;
use behest::models::vertex::{VertexAnthropic, VertexGemini};
use behest::{Message, Model};
use serde_json::{json, Value};

use crate::models_support::{Received, Reply, Server};

const KEY_FILE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/google/service-account.json"
);
const PUBLIC_KEY: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/google/service-account.pub.pem"
);

fn token_answer(token: &str) -> Reply {
    Reply::json(&json!({"access_token": token, "expires_in": 3599, "token_type": "Bearer"}))
}

/// The service account's key, its token endpoint this server.
fn service_account(server: &Server) -> GoogleCredentials {
    let mut key: Value = serde_json::from_str(&std::fs::read_to_string(KEY_FILE).unwrap()).unwrap();
    key["token_uri"] = json!(format!("http://{}/token", server.addr));
    GoogleCredentials::from_json(&key.to_string()).unwrap()
}

fn gemini_stream() -> Reply {
    Reply::events(
        &[
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hello"}]}}],
                   "modelVersion": "gemini-2.5-flash"}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": " from Vertex."}]},
                   "finishReason": "STOP"}],
                   "usageMetadata": {"promptTokenCount": 6, "candidatesTokenCount": 4, "totalTokenCount": 10},
                   "modelVersion": "gemini-2.5-flash"}),
        ],
        false,
        false,
    )
}

/// A form body's fields.
fn form(received: &Received) -> Vec<(String, String)> {
    let text = String::from_utf8(received.raw.clone()).unwrap();
    text.split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            (decode(name), decode(value))
        })
        .collect()
}

/// Percent-decoding of a form's name or value.
fn decode(text: &str) -> String {
    let bytes = text.replace('+', " ").into_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
            out.push(u8::from_str_radix(hex, 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Runs `script` with google-auth, `case` on its standard input; what it
/// printed.
fn google_auth(script: &str, case: &Value, env: &[(&str, String)]) -> String {
    crate::python::run("google-auth disagrees", script, &case.to_string(), env)
}

/// google-auth's requests, recorded on their way out (the same server
/// answers them).
const RECORDING: &str = r#"
import json, sys
import google.auth.transport.requests as transport

recorded = []

class Recording(transport.Request):
    def __call__(self, url, method="GET", body=None, headers=None, **kwargs):
        recorded.append({"url": url, "method": method, "headers": dict(headers or {}),
                         "body": body.decode() if isinstance(body, bytes) else body})
        return super().__call__(url, method=method, body=body, headers=headers, **kwargs)
"#;

/// Gemini on Vertex: the stream at the project's and location's path with
/// a service account's token. The token request is google-auth's: the
/// same form, the same JWT header and claims, and a signature google-auth
/// verifies with the key's public half.
// google-auth's requests are answered while the test waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(behest_python_google_auth),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with google-auth (.ci/run installs it)"
)]
async fn gemini_streams_at_its_location_with_a_service_account_s_token() {
    let server = Server::start([token_answer("ya29.behest-sa"), gemini_stream()]).await;
    let gemini = VertexGemini::new("gemini-2.5-flash")
        .project("behest-test")
        .location("europe-west4")
        .base_url(server.url())
        .google_credentials(service_account(&server));
    let turn = gemini.respond(&[Message::user("Hi")], &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Hello from Vertex."));
    assert_eq!(turn.usage.unwrap().input_tokens, 6);

    let received = server.received();
    let token = &received[0];
    assert_eq!(
        (token.method.as_str(), token.path.as_str()),
        ("POST", "/token")
    );
    let fields = form(token);
    assert_eq!(
        fields[0],
        (
            "grant_type".to_owned(),
            "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned()
        )
    );
    let assertion = fields[1].1.clone();
    let turn = &received[1];
    assert_eq!(
        turn.path,
        "/v1/projects/behest-test/locations/europe-west4/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    );
    assert_eq!(turn.headers["authorization"], "Bearer ya29.behest-sa");
    assert_eq!(turn.body["contents"][0]["role"], "user");

    // google-auth against the same endpoint, with the same key.
    server.push(token_answer("ya29.google-auth"));
    let script = format!(
        "{RECORDING}{}",
        r#"
from google.oauth2 import service_account
from google.auth import jwt
case = json.load(sys.stdin)
info = json.load(open(case["key_file"]))
info["token_uri"] = case["token_uri"]
credentials = service_account.Credentials.from_service_account_info(
    info, scopes=["https://www.googleapis.com/auth/cloud-platform"])
credentials.refresh(Recording())
assert credentials.token == "ya29.google-auth", credentials.token
theirs = dict(pair.split("=", 1) for pair in recorded[0]["body"].split("&"))
ours = dict(case["form"])
assert sorted(theirs) == sorted(ours), (theirs.keys(), ours.keys())
assert theirs["grant_type"].replace("%3A", ":") == ours["grant_type"]
public_key = open(case["public_key"]).read()
audience = "https://oauth2.googleapis.com/token"
their_claims = jwt.decode(theirs["assertion"], certs=public_key, audience=audience)
our_claims = jwt.decode(ours["assertion"], certs=public_key, audience=audience)
for claims in (their_claims, our_claims):
    assert claims["exp"] - claims["iat"] == 3600, claims
    del claims["exp"], claims["iat"]
assert their_claims == our_claims, (their_claims, our_claims)
their_header = jwt.decode_header(theirs["assertion"])
our_header = jwt.decode_header(ours["assertion"])
assert their_header == our_header, (their_header, our_header)
print("agreed")
"#
    );
    let case = json!({
        "key_file": KEY_FILE,
        "public_key": PUBLIC_KEY,
        "token_uri": format!("http://{}/token", server.addr),
        "form": [["grant_type", fields[0].1], ["assertion", assertion]],
    });
    assert_eq!(google_auth(&script, &case, &[]), "agreed");
}

/// Claude on Vertex: `rawPredict` whole and `streamRawPredict` streamed,
/// the model in the path, `anthropic_version` in the body, with a user's
/// credentials (gcloud's) whose refresh is the one google-auth sends.
// google-auth's requests are answered while the test waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(behest_python_google_auth),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with google-auth (.ci/run installs it)"
)]
async fn claude_answers_through_raw_predict_with_user_credentials() {
    let message = json!({"id": "msg_vrtx_1", "type": "message", "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": [{"type": "text", "text": "Hello from Claude on Vertex."}],
        "stop_reason": "end_turn", "usage": {"input_tokens": 9, "output_tokens": 7}});
    let stream = Reply::events(
        &[
            json!({"type": "message_start", "message": {"id": "msg_vrtx_2", "type": "message",
                "role": "assistant", "model": "claude-sonnet-4-5-20250929", "content": [],
                "stop_reason": null, "usage": {"input_tokens": 9, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Streamed."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 3}}),
            json!({"type": "message_stop"}),
        ],
        true,
        false,
    );
    let server = Server::start([token_answer("ya29.user"), Reply::json(&message), stream]).await;
    let user = json!({
        "type": "authorized_user",
        "client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps.googleusercontent.com",
        "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
        "refresh_token": "1//0behest-refresh-token",
        "token_uri": format!("http://{}/token", server.addr),
    });
    let credentials = GoogleCredentials::from_json(&user.to_string()).unwrap();
    let claude = VertexAnthropic::new("claude-sonnet-4-5@20250929")
        .project("behest-test")
        .location("us-east5")
        .base_url(server.url())
        .google_credentials(credentials)
        .max_tokens(256);
    let hi = [Message::system("Be brief."), Message::user("Hi")];
    let whole = claude
        .clone()
        .stream(false)
        .respond(&hi, &[])
        .await
        .unwrap();
    assert_eq!(whole.text.as_deref(), Some("Hello from Claude on Vertex."));
    // The clone shares the token: one refresh for both.
    let streamed = claude.respond(&hi, &[]).await.unwrap();
    assert_eq!(streamed.text.as_deref(), Some("Streamed."));

    let received = server.received();
    let refresh = form(&received[0]);
    let raw = &received[1];
    assert_eq!(
        raw.path,
        "/v1/projects/behest-test/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    );
    assert_eq!(raw.headers["authorization"], "Bearer ya29.user");
    assert_eq!(raw.body["anthropic_version"], "vertex-2023-10-16");
    assert!(raw.body.get("model").is_none(), "{}", raw.body);
    assert_eq!(raw.body["system"], "Be brief.");
    assert!(raw.headers.get("anthropic-version").is_none());
    let streamed_request = received.last().unwrap();
    assert!(
        streamed_request.path.ends_with(":streamRawPredict"),
        "{}",
        streamed_request.path
    );
    assert_eq!(streamed_request.body["stream"], true);

    server.push(token_answer("ya29.google-auth-user"));
    let script = format!(
        "{RECORDING}{}",
        r#"
from google.oauth2 import credentials as user_credentials
case = json.load(sys.stdin)
user = case["user"]
credentials = user_credentials.Credentials(
    token=None, refresh_token=user["refresh_token"], client_id=user["client_id"],
    client_secret=user["client_secret"], token_uri=user["token_uri"])
credentials.refresh(Recording())
from urllib.parse import parse_qsl
theirs = dict(parse_qsl(recorded[0]["body"]))
ours = dict(case["form"])
assert theirs == ours, (theirs, ours)
print("agreed")
"#
    );
    let case = json!({"user": user, "form": refresh});
    assert_eq!(google_auth(&script, &case, &[]), "agreed");
}

/// The metadata server: the token of the machine's service account, asked
/// as google-auth asks it (its path, scopes and `Metadata-Flavor`).
// google-auth's requests are answered while the test waits for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    not(behest_python_google_auth),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with google-auth (.ci/run installs it)"
)]
async fn the_metadata_server_gives_the_machine_s_token() {
    let answer = |request: &Received| {
        if request.path.contains("/token") {
            token_answer("ya29.metadata")
        } else if request.path.contains("service-accounts/default/") {
            Reply::json(
                &json!({"email": "default@behest-test.iam.gserviceaccount.com",
                "scopes": ["https://www.googleapis.com/auth/cloud-platform"], "aliases": ["default"]}),
            )
        } else {
            gemini_stream()
        }
    };
    let server = Server::start((0..6).map(|_| Reply::decide(answer))).await;
    let gemini = VertexGemini::new("gemini-2.5-flash")
        .project("behest-test")
        .location("global")
        .base_url(server.url())
        .google_credentials(GoogleCredentials::metadata_server(server.addr.to_string()));
    let turn = gemini.respond(&[Message::user("Hi")], &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Hello from Vertex."));
    let received = server.received();
    let token = &received[0];
    assert_eq!(token.method, "GET");
    assert_eq!(token.headers["metadata-flavor"], "Google");
    assert!(
        received[1]
            .path
            .starts_with("/v1/projects/behest-test/locations/global/"),
        "{}",
        received[1].path
    );
    let script = format!(
        "{RECORDING}{}",
        r#"
from google.auth import compute_engine
case = json.load(sys.stdin)
credentials = compute_engine.Credentials(scopes=["https://www.googleapis.com/auth/cloud-platform"])
credentials.refresh(Recording())
token_requests = [request for request in recorded if "/token" in request["url"]]
assert len(token_requests) == 1, recorded
theirs = token_requests[0]
assert theirs["headers"].get("metadata-flavor", theirs["headers"].get("Metadata-Flavor")) == "Google", theirs
from urllib.parse import urlsplit, parse_qs
their_url, our_url = urlsplit(theirs["url"]), urlsplit(case["url"])
assert their_url.path == our_url.path, (their_url.path, our_url.path)
assert parse_qs(their_url.query) == parse_qs(our_url.query), (their_url.query, our_url.query)
print("agreed")
"#
    );
    let case = json!({"url": format!("http://{}{}", server.addr, token.path)});
    assert_eq!(
        google_auth(
            &script,
            &case,
            &[("GCE_METADATA_HOST", server.addr.to_string())],
        ),
        "agreed"
    );
}

/// A refused refresh says what the token endpoint said; a client with no
/// project says what to set; a key that is no key is refused when read.
#[tokio::test]
async fn token_and_setup_errors_say_what_happened() {
    let server = Server::start([Reply::error(
        400,
        &json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}),
    )])
    .await;
    let gemini = VertexGemini::new("gemini-2.5-flash")
        .project("behest-test")
        .base_url(server.url())
        .google_credentials(service_account(&server));
    let error = gemini
        .respond(&[Message::user("Hi")], &[])
        .await
        .unwrap_err();
    assert!(
        error.message.contains("Invalid JWT Signature") && error.message.contains("400"),
        "{error}"
    );
    assert!(!error.retryable);
    assert_eq!(server.received().len(), 1);

    let no_project = VertexGemini::new("gemini-2.5-flash")
        .base_url(server.url())
        .google_credentials(service_account(&server));
    if std::env::var_os("GOOGLE_CLOUD_PROJECT").is_none()
        && std::env::var_os("GCLOUD_PROJECT").is_none()
    {
        let error = no_project
            .respond(&[Message::user("Hi")], &[])
            .await
            .unwrap_err();
        assert!(error.message.contains("GOOGLE_CLOUD_PROJECT"), "{error}");
    }

    let bad_key = json!({"type": "service_account", "client_email": "a@b", "private_key": "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"});
    let error = GoogleCredentials::from_json(&bad_key.to_string()).unwrap_err();
    assert_eq!(error.kind.as_deref(), Some("credentials"));
    assert!(error.message.contains("PKCS #8"), "{error}");
    let error = GoogleCredentials::from_json(r#"{"type": "external_account"}"#).unwrap_err();
    assert!(error.message.contains("`external_account`"), "{error}");
}

/// The credentials found in the environment go to Google's own endpoints
/// only: a client pointed elsewhere sends no token (and asks for none),
/// as a key from the environment is held back.
#[tokio::test]
async fn found_credentials_are_not_sent_to_another_server() {
    let server = Server::start([gemini_stream()]).await;
    let gemini = VertexGemini::new("gemini-2.5-flash")
        .project("behest-test")
        .base_url(server.url());
    let turn = gemini.respond(&[Message::user("Hi")], &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Hello from Vertex."));
    let received = server.received();
    assert_eq!(received.len(), 1, "no token was asked for");
    assert!(received[0].headers.get("authorization").is_none());
}

/// Gemini's explicit caches on Vertex AI: made in the project's location
/// for the model by its full name, used by their full name (what the
/// cache holds left out of the request), kept longer and deleted.
#[tokio::test]
async fn explicit_caches_live_in_the_project_s_location() {
    let name = "projects/123456789/locations/europe-west4/cachedContents/4455";
    let answer = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Chapter 7."}]},
        "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 4300, "cachedContentTokenCount": 4213,
            "candidatesTokenCount": 3, "totalTokenCount": 4303}});
    let server = Server::start([
        token_answer("ya29.cache"),
        Reply::json(&json!({"name": name,
            "model": "projects/behest-test/locations/europe-west4/publishers/google/models/gemini-2.5-flash",
            "createTime": "2026-12-06T15:00:00Z", "updateTime": "2026-12-06T15:00:00Z",
            "expireTime": "2026-12-06T15:10:00Z", "usageMetadata": {"totalTokenCount": 4213}})),
        Reply::json(&answer),
        Reply::json(&json!({"name": name, "expireTime": "2026-12-06T16:00:00Z"})),
        Reply::json(&json!({})),
    ])
    .await;
    let gemini = VertexGemini::new("gemini-2.5-flash")
        .project("behest-test")
        .location("europe-west4")
        .base_url(server.url())
        .google_credentials(service_account(&server))
        .stream(false);
    let prefix = [
        Message::system("Answer from the manual."),
        Message::user("THE MANUAL: …"),
    ];
    let cache = gemini
        .create_cache(&prefix, &[], std::time::Duration::from_secs(600))
        .await
        .unwrap();
    assert_eq!(cache.name, name);
    let mut asked = prefix.to_vec();
    asked.push(Message::user("Which chapter is on the weather?"));
    let turn = gemini
        .clone()
        .cached_content(&cache)
        .respond(&asked, &[])
        .await
        .unwrap();
    assert_eq!(turn.usage.unwrap().cached_tokens, 4213);
    let kept = gemini
        .update_cache_ttl(&cache, std::time::Duration::from_secs(3600))
        .await
        .unwrap();
    assert_eq!(kept.expire_time.as_deref(), Some("2026-12-06T16:00:00Z"));
    gemini.delete_cache(&cache).await.unwrap();

    let received = server.received();
    let made = &received[1];
    assert_eq!(
        (made.method.as_str(), made.path.as_str()),
        (
            "POST",
            "/v1/projects/behest-test/locations/europe-west4/cachedContents"
        )
    );
    assert_eq!(
        made.body["model"],
        "projects/behest-test/locations/europe-west4/publishers/google/models/gemini-2.5-flash"
    );
    assert_eq!(made.body["ttl"], "600s");
    assert_eq!(made.headers["authorization"], "Bearer ya29.cache");
    let used = &received[2].body;
    assert_eq!(used["cachedContent"], name);
    assert!(used.get("systemInstruction").is_none(), "{used}");
    assert_eq!(used["contents"].as_array().unwrap().len(), 1, "{used}");
    assert_eq!(
        (received[3].method.as_str(), received[3].path.as_str()),
        ("PATCH", &*format!("/v1/{name}?updateMask=ttl"))
    );
    assert_eq!(received[3].body, json!({"ttl": "3600s"}));
    // One token, for every request of the cache and the turn.
    assert!(received[1..]
        .iter()
        .all(|request| request.headers["authorization"] == "Bearer ya29.cache"));
    assert_eq!(
        (received[4].method.as_str(), received[4].path.as_str()),
        ("DELETE", &*format!("/v1/{name}"))
    );
}

/// Claude on Vertex: strict tools and structured outputs only when asked
/// (`.structured_output(true)`), whatever the model's name; its prompt
/// caching marks `cache_control` as Anthropic's own API does.
#[test]
fn claude_s_strict_tools_and_caching_on_vertex() {
    use behest::{ModelRequest, Tool, ToolSpec};

    let tools: Vec<ToolSpec> = vec![Lookup.spec()];
    let hi = [Message::system("Be brief."), Message::user("Hi")];
    let all_strict =
        || behest::providers::ExportOptions::new().strict(behest::providers::Strictness::All);
    let claude = || {
        VertexAnthropic::new("claude-sonnet-4-5@20250929")
            .project("behest-test")
            .location("us-east5")
            .export_options(all_strict())
    };
    let body = claude()
        .request_body(&ModelRequest::new(&hi, &tools))
        .unwrap();
    assert!(body["tools"][0].get("strict").is_none(), "{body}");
    let body = claude()
        .structured_output(true)
        .prompt_caching(true)
        .request_body(&ModelRequest::new(&hi, &tools))
        .unwrap();
    assert_eq!(body["tools"][0]["strict"], true, "{body}");
    assert_eq!(
        body["tools"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    assert_eq!(
        body["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
}

/// Look a record up.
#[behest::tool]
fn lookup(id: String) -> String {
    id
}

/// A token endpoint's `expires_in` out of all measure is believed for a
/// day at most: no overflow, and the token serves.
#[tokio::test]
async fn a_token_s_lifetime_out_of_measure_is_capped() {
    let server = Server::start([
        Reply::json(&json!({"access_token": "ya29.forever", "expires_in": u64::MAX, "token_type": "Bearer"})),
        gemini_stream(),
    ])
    .await;
    let gemini = VertexGemini::new("gemini-2.5-flash")
        .project("behest-test")
        .base_url(server.url())
        .google_credentials(service_account(&server));
    let turn = gemini.respond(&[Message::user("Hi")], &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Hello from Vertex."));
    assert_eq!(
        server.received()[1].headers["authorization"],
        "Bearer ya29.forever"
    );
}

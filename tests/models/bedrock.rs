//! AWS Bedrock's Converse API against a local server that answers as
//! Bedrock documents: ConverseStream in AWS event-stream frames (their
//! payloads padded with `p`, as Bedrock pads them), Converse whole, errors
//! named in `x-amzn-ErrorType`, exceptions inside a stream. Signatures are
//! checked by botocore, AWS's own Python signer, when `BEHEST_PYTHON` has it
//! (`.ci/run` installs it; without it that test says "skipped").

use behest::models::bedrock::Converse;
use behest::models::{AwsCredentials, RetryPolicy};
use behest::{Agent, Message, Model, ModelDelta, ModelSettings, ToolRegistry, ToolRuntime};
use serde_json::{json, Value};

use crate::eventstream::frame;
use crate::models_support::{Received, Reply, Server};

const MODEL: &str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0";

/// A stream of events, each payload padded as Bedrock pads it.
fn stream(events: &[(&str, Value)]) -> Vec<u8> {
    events
        .iter()
        .flat_map(|(kind, payload)| {
            let mut payload = payload.clone();
            payload["p"] = json!("abcdefghijklmnopqrstuvwxyzABCDEF");
            frame("event", kind, &payload)
        })
        .collect()
}

/// An error answer as Bedrock sends it: the message in the body, the
/// exception's name in `x-amzn-ErrorType`.
fn aws_error(status: u16, kind: &str, message: &str) -> Reply {
    Reply::error(status, &json!({ "message": message })).header(
        "x-amzn-errortype",
        &format!("{kind}:http://internal.amazon.com/coral/com.amazon.bedrock/"),
    )
}

/// A stream that starts a message, then reports an exception.
fn exception_after_start(kind: &str, message: &str) -> Vec<u8> {
    let mut bytes = stream(&[("messageStart", json!({"role": "assistant"}))]);
    bytes.extend(frame("exception", kind, &json!({ "message": message })));
    bytes
}

/// A streamed turn with text and a tool call, as ConverseStream sends it.
fn weather_call_stream() -> Vec<u8> {
    stream(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "Let me "}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": "check."}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        (
            "contentBlockStart",
            json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "tooluse_w1", "name": "get_weather"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"city\":"}}}),
        ),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "\"Oslo\"}"}}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 1})),
        ("messageStop", json!({"stopReason": "tool_use"})),
        (
            "metadata",
            json!({"usage": {"inputTokens": 40, "outputTokens": 12, "totalTokens": 1252,
                "cacheReadInputTokens": 1200, "cacheWriteInputTokens": 0},
                "metrics": {"latencyMs": 311}}),
        ),
    ])
}

fn text_stream(text: &str) -> Vec<u8> {
    stream(&[
        ("messageStart", json!({"role": "assistant"})),
        (
            "contentBlockDelta",
            json!({"contentBlockIndex": 0, "delta": {"text": text}}),
        ),
        ("contentBlockStop", json!({"contentBlockIndex": 0})),
        ("messageStop", json!({"stopReason": "end_turn"})),
        (
            "metadata",
            json!({"usage": {"inputTokens": 60, "outputTokens": 4, "totalTokens": 64}, "metrics": {"latencyMs": 90}}),
        ),
    ])
}

/// Get the weather of a city.
#[behest::tool]
fn get_weather(
    /// The city.
    city: String,
) -> String {
    format!("12 °C in {city}")
}

fn weather_runtime() -> ToolRuntime {
    ToolRuntime::new(ToolRegistry::new().with(GetWeather).unwrap())
}

fn credentials() -> AwsCredentials {
    AwsCredentials::new("AKIDBEHESTTEST", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
        .session_token("FwoGZXIvYXdzEBYaDH7session")
}

/// The server as a Bedrock runtime endpoint (its origin).
fn endpoint(server: &Server) -> String {
    format!("http://{}", server.addr)
}

/// A whole run against ConverseStream: the stream's frames arrive in
/// 7-byte pieces (frames split anywhere), the pieces show as they come,
/// the call runs, and the second turn answers. Each request goes to the
/// model's path, signed for its region with the session token; botocore
/// computes the same signature for each.
#[tokio::test]
async fn a_run_streams_through_converse_stream_signed_for_its_region() {
    let server = Server::start([
        Reply::frames(weather_call_stream()).binary_chunks(7),
        Reply::frames(text_stream("12 °C in Oslo.")).binary_chunks(7),
    ])
    .await;
    let model = Converse::new(MODEL)
        .region("eu-central-1")
        .base_url(endpoint(&server))
        .credentials(credentials())
        .prompt_caching(true)
        .settings(ModelSettings::new().max_tokens(512).temperature(0.2));
    let pieces = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = pieces.clone();
    let invocation = Agent::new(model, weather_runtime())
        .instructions("Answer briefly.")
        .invoke([Message::user("Weather in Oslo?")]);
    invocation.on(move |envelope, _| {
        if let behest::EventKind::ModelDelta(delta) = envelope.kind {
            seen.lock().unwrap().push(delta);
        }
    });
    let outcome = invocation.await;
    assert_eq!(outcome.text(), Some("12 °C in Oslo."), "{outcome:?}");
    let usage = outcome.usage();
    assert_eq!(usage.cached_tokens, 1200);
    assert_eq!(usage.input_tokens, 100);
    let pieces = pieces.lock().unwrap().clone();
    assert!(
        pieces.contains(&ModelDelta::Text("Let me ".into())),
        "{pieces:?}"
    );

    let received = server.received();
    assert_eq!(received.len(), 2);
    let first = &received[0];
    assert_eq!(first.method, "POST");
    assert_eq!(
        first.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream"
    );
    let authorization = first.headers["authorization"].to_str().unwrap();
    assert!(
        authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKIDBEHESTTEST/")
            && authorization.contains("/eu-central-1/bedrock/aws4_request"),
        "{authorization}"
    );
    assert_eq!(
        first.headers["x-amz-security-token"],
        "FwoGZXIvYXdzEBYaDH7session"
    );
    let body = &first.body;
    assert_eq!(
        body["system"],
        json!([{"text": "Answer briefly."}, {"cachePoint": {"type": "default"}}])
    );
    assert_eq!(
        body["messages"][0]["content"],
        json!([{"text": "Weather in Oslo?"}, {"cachePoint": {"type": "default"}}])
    );
    assert_eq!(
        body["inferenceConfig"],
        json!({"maxTokens": 512, "temperature": 0.2})
    );
    let spec = &body["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["name"], "get_weather");
    assert_eq!(spec["inputSchema"]["json"]["required"], json!(["city"]));
    assert_eq!(body["toolConfig"]["toolChoice"], json!({"auto": {}}));
    // The second turn carries the call and its result.
    let second = &received[1].body["messages"];
    assert_eq!(
        second[1]["content"][1]["toolUse"],
        json!({"toolUseId": "tooluse_w1", "name": "get_weather", "input": {"city": "Oslo"}})
    );
    assert_eq!(
        second[2]["content"][0]["toolResult"]["toolUseId"],
        "tooluse_w1"
    );
}

/// botocore's SigV4 signer agrees with every signature: requests with a
/// session token, a model id that must be percent-encoded in the path, a
/// retry signed anew, whole and streamed.
#[tokio::test]
#[cfg_attr(
    not(behest_python_botocore),
    ignore = "skipped: BEHEST_PYTHON does not name a Python with botocore (.ci/run installs it)"
)]
async fn every_signature_is_the_one_botocore_computes() {
    let throttled = aws_error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    );
    let whole = Reply::json(&json!({
        "output": {"message": {"role": "assistant", "content": [{"text": "Whole."}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 8, "outputTokens": 1, "totalTokens": 9},
        "metrics": {"latencyMs": 80}
    }));
    let server = Server::start([
        Reply::frames(weather_call_stream()),
        Reply::frames(text_stream("12 °C in Oslo.")),
        throttled,
        whole,
    ])
    .await;
    let mut fast = RetryPolicy::default();
    fast.initial_backoff = std::time::Duration::from_millis(1);
    let model = Converse::new(MODEL)
        .region("eu-central-1")
        .base_url(endpoint(&server))
        .credentials(credentials())
        .retry(fast);
    let outcome = Agent::new(model.clone(), weather_runtime())
        .invoke([Message::user("Weather in Oslo?")])
        .await;
    assert_eq!(outcome.text(), Some("12 °C in Oslo."), "{outcome:?}");
    let turn = model
        .stream(false)
        .respond(&[Message::user("Hi")], &[])
        .await
        .unwrap();
    assert_eq!(turn.text.as_deref(), Some("Whole."));
    let received = server.received();
    assert_eq!(received.len(), 4);
    botocore_agrees(&server, &received, "eu-central-1");
}

/// botocore's SigV4 signer, given each request as the server received it
/// (the headers it signed, the body's bytes) and the same credentials,
/// computes the signature the request carries.
fn botocore_agrees(server: &Server, received: &[Received], region: &str) {
    let requests: Vec<Value> = received
        .iter()
        .map(|request| {
            let headers: serde_json::Map<String, Value> = request
                .headers
                .iter()
                .map(|(name, value)| {
                    (
                        name.as_str().to_owned(),
                        json!(value.to_str().unwrap_or_default()),
                    )
                })
                .collect();
            json!({
                "method": request.method,
                "url": format!("http://{}{}", server.addr, request.path),
                "headers": headers,
                "body_hex": request.raw.iter().map(|byte| format!("{byte:02x}")).collect::<String>(),
            })
        })
        .collect();
    let case = json!({
        "key": "AKIDBEHESTTEST",
        "secret": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "token": "FwoGZXIvYXdzEBYaDH7session",
        "region": region,
        "requests": requests,
    });
    let script = r#"
import json, sys
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

case = json.load(sys.stdin)
credentials = Credentials(case["key"], case["secret"], case["token"])
for request in case["requests"]:
    headers = request["headers"]
    fields = headers["authorization"].split(" ", 1)[1]
    parts = dict(part.strip().split("=", 1) for part in fields.split(","))
    signed = parts["SignedHeaders"].split(";")
    for wanted in ("host", "x-amz-date", "x-amz-security-token", "content-type"):
        assert wanted in signed, (wanted, signed)
    aws_request = AWSRequest(
        method=request["method"],
        url=request["url"],
        data=bytes.fromhex(request["body_hex"]),
        headers={name: headers[name] for name in signed},
    )
    aws_request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(credentials, "bedrock", case["region"])
    canonical = signer.canonical_request(aws_request)
    expected = signer.signature(signer.string_to_sign(aws_request, canonical), aws_request)
    assert expected == parts["Signature"], (expected, parts["Signature"], canonical)
    scope = parts["Credential"].split("/", 1)[1]
    assert scope == signer.scope(aws_request).split("/", 1)[1], (scope, signer.scope(aws_request))
print(len(case["requests"]))
"#;
    let said = crate::python::run("botocore does not agree", script, &case.to_string(), &[]);
    assert_eq!(said, received.len().to_string());
}

/// Converse whole, with a Bedrock API key: a bearer token, no signature.
/// A typed run of a Claude 4.5 model asks for the answer's schema in
/// `outputConfig.textFormat` (the schema as JSON text) and reads it from
/// the text.
#[tokio::test]
async fn a_whole_answer_with_an_api_key_and_structured_output() {
    #[derive(serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
    struct Trip {
        city: String,
        days: u32,
    }
    let server = Server::start([Reply::json(&json!({
        "output": {"message": {"role": "assistant", "content": [
            {"text": "{\"city\": \"Lisbon\", \"days\": 3}"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 80, "outputTokens": 12, "totalTokens": 92},
        "metrics": {"latencyMs": 500}
    }))
    .header("x-amzn-requestid", "a1b2c3")])
    .await;
    let model = Converse::new(MODEL)
        .region("us-east-1")
        .base_url(endpoint(&server))
        .api_key("ABSKQmVkcm9ja0FQSUtleS1example")
        .stream(false);
    let trip: Trip = Agent::new(model, weather_runtime())
        .output([Message::user("Plan three days in Lisbon.")])
        .await
        .unwrap();
    assert_eq!(
        trip,
        Trip {
            city: "Lisbon".into(),
            days: 3
        }
    );
    let request = &server.received()[0];
    assert_eq!(
        request.path,
        "/model/us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse"
    );
    assert_eq!(
        request.headers["authorization"],
        "Bearer ABSKQmVkcm9ja0FQSUtleS1example"
    );
    assert!(request.headers.get("x-amz-date").is_none());
    let format = &request.body["outputConfig"]["textFormat"];
    assert_eq!(format["type"], "json_schema");
    let schema: Value = serde_json::from_str(
        format["structure"]["jsonSchema"]["schema"]
            .as_str()
            .expect("the schema as JSON text"),
    )
    .unwrap();
    assert_eq!(schema["additionalProperties"], false);
    assert_eq!(schema["required"], json!(["city", "days"]));
}

/// Bedrock's errors become the error's kind: the `x-amzn-ErrorType`
/// header's name. A throttled request is asked again; a validation error
/// is not. An exception inside a stream, and a frame whose checksum does
/// not hold, end the attempt; the turn is asked again and answers.
#[tokio::test]
async fn errors_exceptions_and_garbled_frames() {
    let throttled = aws_error(
        429,
        "ThrottlingException",
        "Too many requests, please wait before trying again.",
    );
    let invalid = aws_error(
        400,
        "ValidationException",
        "The provided model identifier is invalid.",
    );
    let exception = exception_after_start(
        "throttlingException",
        "Too many tokens, please wait before trying again.",
    );
    let mut garbled = text_stream("never seen");
    let last = garbled.len() - 1;
    garbled[last] ^= 0xFF;
    let server = Server::start([
        invalid,
        throttled,
        Reply::frames(exception),
        Reply::frames(garbled),
        Reply::frames(text_stream("Fine.")),
    ])
    .await;
    let mut fast = RetryPolicy::default();
    fast.max_retries = 3;
    fast.initial_backoff = std::time::Duration::from_millis(1);
    fast.max_backoff = std::time::Duration::from_millis(5);
    let model = Converse::new("amazon.nova-pro-v1:0")
        .region("us-east-1")
        .base_url(endpoint(&server))
        .credentials(credentials())
        .retry(fast);
    let hi = [Message::user("Hi")];
    let error = model.respond(&hi, &[]).await.unwrap_err();
    assert_eq!(error.status, Some(400));
    assert_eq!(error.kind.as_deref(), Some("ValidationException"));
    assert!(
        error.message.contains("model identifier is invalid"),
        "{error}"
    );
    assert!(!error.retryable);
    // Throttled, then an exception mid-stream, then a garbled frame, then
    // the answer: three retries of one budget.
    let turn = model.respond(&hi, &[]).await.unwrap();
    assert_eq!(turn.text.as_deref(), Some("Fine."));
    assert_eq!(server.received().len(), 5);

    // Each failure alone, with no retry left, says what it was.
    for (reply, says) in [
        (
            Reply::frames(exception_after_start(
                "validationException",
                "The model returned an invalid tool input.",
            )),
            "validationException",
        ),
        (
            {
                // A byte of the first frame's payload changed (the payload
                // ends 4 bytes before the frame does, with its `}`): the
                // frame's own checksum fails.
                let mut bytes = text_stream("x");
                let first_frame_end = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                let in_payload = first_frame_end as usize - 6;
                bytes[in_payload] ^= 0x01;
                Reply::frames(bytes)
            },
            "could not be read",
        ),
        (
            {
                // Whole frames, up to the text's end: no `messageStop`.
                let mut bytes = stream(&[("messageStart", json!({"role": "assistant"}))]);
                bytes.extend(stream(&[(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": 0, "delta": {"text": "cut"}}),
                )]));
                Reply::frames(bytes)
            },
            "`messageStop`",
        ),
        (
            {
                // A prelude that says 64 MiB, its checksum right: refused
                // at once, not waited for.
                let mut prelude = (64u32 << 20).to_be_bytes().to_vec();
                prelude.extend(0u32.to_be_bytes());
                let crc = crc32(&prelude);
                prelude.extend(crc.to_be_bytes());
                let mut bytes = stream(&[("messageStart", json!({"role": "assistant"}))]);
                bytes.extend(prelude);
                Reply::frames(bytes)
            },
            "16 MiB",
        ),
        (
            {
                // A prelude whose checksum does not hold.
                let mut bytes = stream(&[("messageStart", json!({"role": "assistant"}))]);
                let mut next = text_stream("x");
                next[1] ^= 0x40;
                bytes.extend(next);
                Reply::frames(bytes)
            },
            "prelude checksum",
        ),
        (
            {
                // Cut inside the last frame (the usage).
                let bytes = text_stream("cut");
                let at = bytes.len() - 20;
                Reply::frames(bytes).binary_cut_at(at)
            },
            "ended inside a frame",
        ),
    ] {
        server.push(reply);
        let error = model
            .clone()
            .retry(RetryPolicy::none())
            .respond(&hi, &[])
            .await
            .unwrap_err();
        let shown = format!("{error} {:?}", error.kind);
        assert!(shown.contains(says), "{shown}");
    }
}

/// Without a region, or without credentials, the first request says what
/// to set; nothing is sent.
#[tokio::test]
async fn a_missing_region_or_missing_credentials_say_what_to_set() {
    let server = Server::start([]).await;
    let no_region = Converse::new(MODEL).credentials(credentials());
    // The environment of the test may name a region; a client without
    // one has an empty base URL only when it names none.
    if std::env::var_os("AWS_REGION").is_none()
        && std::env::var_os("AWS_DEFAULT_REGION").is_none()
        && std::env::var_os("AWS_ENDPOINT_URL").is_none()
        && std::env::var_os("AWS_ENDPOINT_URL_BEDROCK_RUNTIME").is_none()
    {
        let error = no_region
            .respond(&[Message::user("Hi")], &[])
            .await
            .unwrap_err();
        assert!(error.message.contains("AWS_REGION"), "{error}");
    }
    let missing = Converse::new(MODEL)
        .region("us-east-1")
        .base_url(endpoint(&server))
        .credentials(credentials());
    // A profile that is in no file has no credentials.
    let missing = missing.profile("behest-no-such-profile");
    let error = missing
        .respond(&[Message::user("Hi")], &[])
        .await
        .unwrap_err();
    assert_eq!(error.kind.as_deref(), Some("credentials"), "{error}");
    assert!(error.message.contains("AWS_ACCESS_KEY_ID"), "{error}");
    assert!(server.received().is_empty());
}

/// Bedrock's failures fall back as their kinds say: a throttled stream
/// (an exception frame, no status) as a rate limit, "Input is too long"
/// as a full context window.
#[tokio::test]
async fn bedrock_s_failures_are_classified_for_fallback() {
    use behest::model::Failure;

    let throttled = exception_after_start(
        "throttlingException",
        "Too many tokens, please wait before trying again.",
    );
    let too_long = aws_error(
        400,
        "ValidationException",
        "Input is too long for requested model.",
    );
    let unavailable = exception_after_start(
        "serviceUnavailableException",
        "The service is unavailable. Please try again later.",
    );
    let server = Server::start([
        Reply::frames(throttled),
        too_long,
        Reply::frames(unavailable),
    ])
    .await;
    let model = Converse::new(MODEL)
        .region("us-east-1")
        .base_url(endpoint(&server))
        .credentials(credentials())
        .retry(RetryPolicy::none());
    let hi = [Message::user("Hi")];
    let throttled = model.respond(&hi, &[]).await.unwrap_err();
    assert_eq!(throttled.status, None);
    assert!(Failure::RateLimit.matches(&throttled), "{throttled:?}");
    let full = model.respond(&hi, &[]).await.unwrap_err();
    assert!(Failure::ContextWindow.matches(&full), "{full:?}");
    assert!(!Failure::RateLimit.matches(&full));
    let down = model.respond(&hi, &[]).await.unwrap_err();
    assert!(Failure::Overloaded.matches(&down), "{down:?}");
}

/// CRC-32 (IEEE), as the event-stream framing checksums its parts.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for byte in bytes {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// `ToolChoice::None` leaves the tools out, unless the conversation holds
/// calls (Converse then needs them declared); blank texts are left out and
/// an empty result says so; documents are named uniquely in their message.
#[test]
fn request_bodies_keep_to_what_converse_takes() {
    use behest::conversation::{ContentPart, MediaSource, ToolResultMessage};
    use behest::models::ToolChoice;
    use behest::{AssistantMessage, ModelRequest, Tool, ToolCall};

    let tools = [GetWeather.spec()];
    let model = Converse::new(MODEL)
        .region("us-east-1")
        .credentials(credentials())
        .tool_choice(ToolChoice::None);
    let fresh = [Message::user("Hi")];
    let body = model
        .request_body(&ModelRequest::new(&fresh, &tools))
        .unwrap();
    assert!(body.get("toolConfig").is_none(), "{body}");
    let pdf = || ContentPart::Document {
        source: MediaSource::base64("application/pdf", "JVBERi0="),
    };
    let with_calls = [
        Message::UserParts {
            parts: vec![ContentPart::text("Read this."), pdf()],
        },
        Message::Assistant(AssistantMessage::default().with_tool_calls([ToolCall::new(
            "t1",
            "get_weather",
            json!({"city": "Oslo"}),
        )])),
        Message::ToolResult(ToolResultMessage::new("t1", "get_weather", "")),
        Message::UserParts {
            parts: vec![ContentPart::text("  "), pdf()],
        },
    ];
    let body = model
        .request_body(&ModelRequest::new(&with_calls, &tools))
        .unwrap();
    assert!(body["toolConfig"].get("toolChoice").is_none(), "{body}");
    assert_eq!(
        body["toolConfig"]["tools"][0]["toolSpec"]["name"],
        "get_weather"
    );
    let last = &body["messages"][2]["content"];
    assert_eq!(
        last[0]["toolResult"]["content"],
        json!([{"text": "(no output)"}])
    );
    // The result and the next user turn are one message: the blank text
    // is left out, its document named apart from the first message's.
    assert_eq!(last.as_array().unwrap().len(), 2, "{last}");
    assert_eq!(last[1]["document"]["name"], "document-1");
    assert_eq!(
        body["messages"][0]["content"][1]["document"]["name"],
        "document-1"
    );
    // Strict tools and extended thinking for a Claude 4.5 model.
    let all_strict =
        || behest::providers::ExportOptions::new().strict(behest::providers::Strictness::All);
    let strict = Converse::new(MODEL)
        .region("us-east-1")
        .credentials(credentials())
        .export_options(all_strict())
        .thinking_budget(2048);
    let body = strict
        .request_body(&ModelRequest::new(&fresh, &tools))
        .unwrap();
    let spec = &body["toolConfig"]["tools"][0]["toolSpec"];
    assert_eq!(spec["strict"], true, "{body}");
    assert_eq!(spec["inputSchema"]["json"]["additionalProperties"], false);
    assert_eq!(
        body["additionalModelRequestFields"],
        json!({"thinking": {"type": "enabled", "budget_tokens": 2048}})
    );
    // An older model gets the same tool, not strict.
    let older = Converse::new("anthropic.claude-3-5-sonnet-20240620-v1:0")
        .region("us-east-1")
        .credentials(credentials())
        .export_options(all_strict());
    let body = older
        .request_body(&ModelRequest::new(&fresh, &tools))
        .unwrap();
    assert!(body["toolConfig"]["tools"][0]["toolSpec"]
        .get("strict")
        .is_none());
}

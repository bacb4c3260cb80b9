//! What must not leak: an API key, a panic's message (unless the tool
//! opts in), a file path or an environment value stays out of the model's
//! text, `Debug` output and traces. Every event and span field this
//! process traces is captured (one subscriber for the whole test binary)
//! and searched.

use std::fmt::Write as _;
use std::sync::{Arc, Mutex, OnceLock};

use behest::{
    Tool, ToolCall, ToolError, ToolOutput, ToolRegistry, ToolResult, ToolRuntime, ToolSpec,
};
use serde_json::{json, Value};

use crate::tracing_support;

#[cfg(feature = "models")]
use crate::models_support;

/// Everything traced, as text.
#[derive(Clone, Default)]
struct Traced(Arc<Mutex<String>>);

struct Visit<'a>(&'a mut String);

impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Traced {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut text = self.0.lock().unwrap();
        let _ = write!(text, "\nspan {}", attrs.metadata().name());
        attrs.record(&mut Visit(&mut text));
    }

    fn on_record(
        &self,
        _: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        values.record(&mut Visit(&mut self.0.lock().unwrap()));
    }

    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let mut text = self.0.lock().unwrap();
        text.push_str("\nevent");
        event.record(&mut Visit(&mut text));
    }
}

/// What the process traced so far (its subscriber installed first).
fn traced() -> String {
    static TRACED: OnceLock<Traced> = OnceLock::new();
    let traced = tracing_support::installed(&TRACED, Traced::default);
    let text = traced.0.lock().unwrap().clone();
    text
}

/// Panics with what it was handling.
#[behest::tool]
fn unlock(code: String) -> String {
    panic!("could not unlock with token=hunter2-{code}")
}

/// A hand-written tool that reveals its panics.
struct Loud;

impl Tool for Loud {
    fn name(&self) -> &str {
        "loud"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new("loud", "Panics, and says why.", json!({"type": "object"}))
    }

    async fn execute(&self, _arguments: Value) -> ToolResult<ToolOutput> {
        panic!("loud reason-7")
    }

    fn reveals_panics(&self) -> bool {
        true
    }
}

/// Fails reading a file and an environment variable, with `?`.
#[behest::tool]
fn read_settings() -> Result<String, ToolError> {
    let path = "/srv/behest-private/settings-4721.toml";
    let text = std::fs::read_to_string(path).map_err(ToolError::from_error)?;
    Ok(text)
}

/// An error whose `Debug` carries more than its `Display`.
#[derive(Debug)]
struct Rejected {
    #[allow(dead_code)]
    credential: String,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the service refused the request")
    }
}

impl std::error::Error for Rejected {}

/// Fails with an error that holds a credential.
#[behest::tool]
fn call_service() -> Result<String, ToolError> {
    let credential = std::env::var("BEHEST_LEAK_TEST_CREDENTIAL").unwrap_or_default();
    Err(ToolError::from_error(Rejected { credential }))
}

fn runtime() -> ToolRuntime {
    let registry = ToolRegistry::new()
        .with(Unlock)
        .and_then(|r| r.with(Loud))
        .and_then(|r| r.with(ReadSettings))
        .and_then(|r| r.with(CallService))
        .unwrap();
    ToolRuntime::new(registry)
}

#[tokio::test]
async fn a_panic_message_stays_out_of_model_text_debug_and_traces() {
    let _ = traced();
    let result = runtime()
        .call(ToolCall::new("c1", "unlock", json!({"code": "q9"})))
        .await;
    let text = result.to_model_text();
    assert!(text.contains("internal error"), "{text}");
    let debug = format!("{result:?}");
    let error = result.outcome.unwrap_err();
    // The program can still read it.
    let ToolError::Panicked { payload, .. } = &error else {
        panic!("{error:?}");
    };
    assert!(payload.contains("hunter2"));
    let traces = traced();
    for (place, shown) in [
        ("model text", &text),
        ("Debug", &debug),
        ("traces", &traces),
    ] {
        assert!(
            !shown.contains("hunter2"),
            "the panic message is in the {place}: {shown}"
        );
    }
    assert!(traces.contains("tool panicked"), "{traces}");

    // A tool that opts in shows it everywhere.
    let loud = runtime().call(ToolCall::new("c2", "loud", json!({}))).await;
    assert!(loud.to_model_text().contains("loud reason-7"));
    assert!(format!("{loud:?}").contains("loud reason-7"));
    assert!(traced().contains("loud reason-7"));
}

#[tokio::test]
async fn file_paths_and_environment_values_stay_out_of_model_text() {
    let _ = traced();
    std::env::set_var("BEHEST_LEAK_TEST_CREDENTIAL", "cred-5501");
    let runtime = runtime();
    let settings = runtime
        .call(ToolCall::new("c1", "read_settings", json!({})))
        .await;
    let service = runtime
        .call(ToolCall::new("c2", "call_service", json!({})))
        .await;
    for result in [&settings, &service] {
        assert!(result.is_error(), "{result:?}");
        let text = result.to_model_text();
        assert!(!text.contains("behest-private"), "{text}");
        assert!(!text.contains("cred-5501"), "{text}");
    }
    // Only the error's `Display` is sent: the file could not be read.
    assert!(settings.to_model_text().contains("No such file"));
    assert!(service
        .to_model_text()
        .contains("the service refused the request"));
    assert!(!traced().contains("cred-5501"));
}

#[cfg(feature = "models")]
#[tokio::test]
async fn an_api_key_stays_out_of_debug_errors_and_traces() {
    use behest::models::openai::Chat;
    use behest::{Agent, Message};
    use models_support::{Reply, Server};

    let _ = traced();
    let key = "sk-leak-check-90210";
    let header_key = "azure-leak-check-31337";
    let server = Server::start([Reply::error(
        401,
        &json!({"error": {"type": "invalid_request_error", "message": "Incorrect API key provided"}}),
    )])
    .await;
    let model = Chat::new("gpt-leaks")
        .api_key(key)
        .header("api-key", header_key)
        .base_url(server.url())
        .stream(false);
    let debug = format!("{model:?}");
    assert!(
        !debug.contains(key) && !debug.contains(header_key),
        "{debug}"
    );
    let registry = ToolRegistry::new();
    let outcome = Agent::new(model, ToolRuntime::new(registry))
        .invoke([Message::user("hi")])
        .await;
    let shown = format!("{outcome:?}");
    assert!(shown.contains("401"), "{shown}");
    assert!(
        !shown.contains(key) && !shown.contains(header_key),
        "{shown}"
    );
    let traces = traced();
    assert!(
        traces.contains("gpt-leaks"),
        "the request was traced: {traces}"
    );
    assert!(
        !traces.contains(key) && !traces.contains(header_key),
        "{traces}"
    );
}

//! The OpenTelemetry GenAI spans of tools, agents and guardrails.

use std::sync::{Arc, Mutex, OnceLock};

use behest::run::{ScriptedTurn, Verdict};
use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};

/// Every span's name and fields, as `name field=value`.
#[derive(Clone, Default)]
struct Spans(Arc<Mutex<Vec<String>>>);

struct Visit<'a>(&'a mut String);
impl tracing::field::Visit for Visit<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!(" {}={value:?}", field.name()));
    }
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        self.0.push_str(&format!(" {}={value}", field.name()));
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Spans {
    fn on_new_span(
        &self,
        attributes: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = attributes.metadata().name().to_owned();
        attributes.record(&mut Visit(&mut line));
        self.0.lock().unwrap().push(line);
    }

    fn on_record(
        &self,
        _: &tracing::span::Id,
        values: &tracing::span::Record<'_>,
        _: tracing_subscriber::layer::Context<'_, S>,
    ) {
        let mut line = "record".to_owned();
        values.record(&mut Visit(&mut line));
        self.0.lock().unwrap().push(line);
    }
}

/// Tool calls, agents run as tools and guardrails each have a span
/// with the OpenTelemetry GenAI names.
#[tokio::test]
async fn tools_agents_and_guardrails_have_genai_spans() {
    static SPANS: OnceLock<Spans> = OnceLock::new();
    let spans = crate::tracing_support::installed(&SPANS, Spans::default);
    let poet = Agent::new(
        ScriptedModel::new([ScriptedTurn::text("Roses are red")]),
        ToolRuntime::new(ToolRegistry::new()),
    );
    let tools = ToolRegistry::new()
        .with(poet.as_tool("poet_for_spans", "Writes a poem."))
        .unwrap();
    let lead = Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new(
                "span-call",
                "poet_for_spans",
                r#"{"input": "a poem"}"#,
            )]),
            ScriptedTurn::text("done"),
        ]),
        ToolRuntime::new(tools),
    )
    .name("lead_for_spans")
    .tool_guardrail("span_guard", |_call: ToolCall| async { Verdict::Allow });
    let outcome = lead.invoke([Message::user("a poem, please")]).await;
    assert_eq!(outcome.text(), Some("done"));
    let seen = spans.0.lock().unwrap().clone();
    let has = |parts: &[&str]| {
        seen.iter()
            .any(|line| parts.iter().all(|part| line.contains(part)))
    };
    assert!(
        has(&[
            "tool_call",
            "otel.name=execute_tool poet_for_spans",
            "gen_ai.operation.name=execute_tool",
            "gen_ai.tool.name=poet_for_spans",
            "gen_ai.tool.call.id=span-call",
        ]),
        "{seen:#?}"
    );
    assert!(
        has(&[
            "invoke_agent",
            "gen_ai.operation.name=invoke_agent",
            "gen_ai.agent.name=poet_for_spans",
        ]),
        "{seen:#?}"
    );
    // The agent the run starts on has its span too, named as the
    // conventions name it, with the run's id.
    assert!(
        has(&[
            "invoke_agent",
            "otel.name=invoke_agent lead_for_spans",
            "gen_ai.operation.name=invoke_agent",
            "gen_ai.agent.name=lead_for_spans",
            "behest.run.id=run_",
        ]),
        "{seen:#?}"
    );
    assert!(
        has(&[
            "guardrail",
            "behest.guardrail.name=span_guard",
            "behest.guardrail.stage=tool call"
        ]),
        "{seen:#?}"
    );
    assert!(
        has(&["record", "behest.guardrail.action=allowed"]),
        "{seen:#?}"
    );
}

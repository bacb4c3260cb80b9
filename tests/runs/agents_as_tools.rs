//! Agents as tools.

use behest::run::{AgentEvent, RunError, ScriptedTurn, UsageLimit, UsageLimits};
use behest::{
    Agent, AssistantMessage, EventKind, Message, RunOutcome, ScriptedModel, ToolCall, ToolRegistry,
    ToolRuntime, ToolStreamEvent, Usage,
};
use futures::StreamExt;

fn reply_with_usage(reply: AssistantMessage, input: u64) -> ScriptedTurn {
    ScriptedTurn::reply(reply.with_usage(Usage {
        input_tokens: input,
        output_tokens: 1,
        ..Usage::default()
    }))
}

fn translator() -> Agent {
    let model = ScriptedModel::new([reply_with_usage(AssistantMessage::text("Bonjour"), 100)]);
    Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
}

fn lead(tools: ToolRegistry, turns: Vec<ScriptedTurn>) -> Agent {
    Agent::new(ScriptedModel::new(turns), ToolRuntime::new(tools))
}

fn call(id: &str, tool: &str, input: &str) -> AssistantMessage {
    AssistantMessage::tool_calls([ToolCall::new(
        id,
        tool,
        serde_json::json!({ "input": input }).to_string(),
    )])
}

#[tokio::test]
async fn a_nested_agents_events_and_usage_are_its_callers() {
    let tools = ToolRegistry::new()
        .with(translator().as_tool("translate", "Translate into French."))
        .unwrap();
    let lead = lead(
        tools,
        vec![
            reply_with_usage(call("c1", "translate", "Hello"), 10),
            ScriptedTurn::text("Bonjour!").expect_ok("c1", "Bonjour"),
        ],
    );
    let run = lead.invoke([Message::user("Say hello in French")]);
    let events = run.events();
    let outcome = run.await;
    assert_eq!(outcome.text(), Some("Bonjour!"));
    // The lead's 10 tokens and the translator's 100.
    assert_eq!(outcome.usage().input_tokens, 110);
    let events: Vec<EventKind> = events.map(|envelope| envelope.kind).collect().await;
    let nested: Vec<&AgentEvent> = events
        .iter()
        .filter_map(|kind| match kind {
            EventKind::Agent(event) => Some(event),
            _ => None,
        })
        .collect();
    assert!(nested
        .iter()
        .all(|event| event.agent == "translate" && event.call_id == "c1"));
    assert!(
        nested
            .iter()
            .any(|event| matches!(&*event.kind, EventKind::Output(text) if text == "Bonjour")),
        "{nested:?}"
    );
    // The nested run's events come before the call's result.
    let last_nested = events
        .iter()
        .rposition(|kind| matches!(kind, EventKind::Agent(_)))
        .unwrap();
    let result = events
        .iter()
        .position(|kind| matches!(kind, EventKind::Tool(ToolStreamEvent::Result { .. })))
        .unwrap();
    assert!(last_nested < result);
}

#[tokio::test]
async fn agents_nest_no_deeper_than_the_roots_limit() {
    // leaf <- middle <- top; the top allows a depth of 1 only.
    let leaf = translator();
    let middle = lead(
        ToolRegistry::new()
            .with(leaf.as_tool("leaf", "The leaf."))
            .unwrap(),
        vec![
            ScriptedTurn::reply(call("m1", "leaf", "go")),
            ScriptedTurn::text("middle done").expect_error("m1", "nest 1 deep"),
        ],
    );
    let top = lead(
        ToolRegistry::new()
            .with(middle.as_tool("middle", "The middle."))
            .unwrap(),
        vec![
            ScriptedTurn::reply(call("t1", "middle", "go")),
            ScriptedTurn::text("top done").expect_ok("t1", "middle done"),
        ],
    )
    .max_agent_depth(1);
    let outcome = top.invoke([Message::user("go")]).await;
    assert_eq!(outcome.text(), Some("top done"), "{outcome:?}");
}

#[tokio::test]
async fn the_roots_request_limit_counts_every_request_of_the_tree() {
    let tools = ToolRegistry::new()
        .with(translator().as_tool("translate", "Translate into French."))
        .unwrap();
    // Two requests of the lead's and one of the translator's: a limit
    // of 2 stops the lead's second request.
    let lead = lead(
        tools,
        vec![
            ScriptedTurn::reply(call("c1", "translate", "Hello")),
            ScriptedTurn::text("never"),
        ],
    )
    .usage_limits(UsageLimits::new().requests(2));
    let outcome = lead.invoke([Message::user("Say hello in French")]).await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        matches!(
            error,
            RunError::UsageLimit {
                limit: UsageLimit::Requests,
                ..
            }
        ),
        "{error}"
    );
}

#[derive(Debug, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Lookup {
    order: u32,
}

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Order {
    order: u32,
    paid: bool,
}

#[tokio::test]
async fn a_typed_agent_tool_takes_typed_input_and_gives_structured_output() {
    let clerk = Agent::new(
        ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
            "f1",
            "final_answer",
            r#"{"order": 42, "paid": true}"#,
        )])
        .expect_tools(["final_answer"])]),
        ToolRuntime::new(ToolRegistry::new()),
    )
    .with_output::<Order>();
    let tool = clerk.as_tool_with::<Lookup>("look_up", "Look an order up.");
    let tools = ToolRegistry::new().with(tool).unwrap();
    let spec = tools.spec("look_up").unwrap();
    assert_eq!(spec.parameters["required"], serde_json::json!(["order"]));
    let lead = lead(
        tools,
        vec![
            ScriptedTurn::tool_calls([ToolCall::new("c1", "look_up", r#"{"order": 42}"#)]),
            ScriptedTurn::text("paid").expect_ok("c1", r#""paid":true"#),
        ],
    );
    let outcome = lead.invoke([Message::user("is 42 paid?")]).await;
    assert_eq!(outcome.text(), Some("paid"), "{outcome:?}");
    let structured = outcome
        .transcript()
        .iter()
        .find_map(|message| match message {
            Message::ToolResult(result) => result.structured.clone(),
            _ => None,
        });
    assert_eq!(
        structured,
        Some(serde_json::json!({"order": 42, "paid": true}))
    );
}

//! A run's state as a value: a run stopped at every wait it reaches, its
//! state written to JSON and read back in between, gives the same
//! transcript, usage, events and outcome as the run that never stopped.

use behest::run::{RunError, RunPhase, RunState, ScriptedTurn, UsageLimits, Verdict, WaitKind};
use behest::{
    json, tool, Agent, AssistantMessage, Envelope, EventKind, ExternalTool, Message, RunOutcome,
    ScriptedModel, ToolCall, ToolOutput, ToolRegistry, ToolRuntime, ToolStreamEvent, Usage,
};
use futures::StreamExt;
use serde_json::Value;

/// Look an order up.
#[tool]
fn look_up(order: u32) -> String {
    format!("order {order}: paid")
}

/// Refund an order (a person approves each refund).
#[tool(needs_approval)]
fn refund(order: u32) -> String {
    format!("refunded {order}")
}

/// Wire money (never approved in these runs).
#[tool(needs_approval)]
fn wire_money(cents: u32) -> String {
    format!("wired {cents}")
}

fn registry() -> ToolRegistry {
    let ask_customer = ExternalTool::new(
        "ask_customer",
        "Ask the customer a question; they answer later.",
        json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}),
    );
    let approve_and_ask = ExternalTool::new(
        "ask_manager",
        "Ask the manager, once a person allows it.",
        json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}),
    );
    ToolRegistry::new()
        .with(LookUp)
        .unwrap()
        .with(Refund)
        .unwrap()
        .with(WireMoney)
        .unwrap()
        .with(ask_customer)
        .unwrap()
        .with(approve_and_ask)
        .unwrap()
}

fn turn(calls: &[(&str, &str, &str)], input: u64) -> ScriptedTurn {
    let calls = calls
        .iter()
        .map(|(id, tool, arguments)| ToolCall::new(*id, *tool, *arguments));
    ScriptedTurn::reply(AssistantMessage::tool_calls(calls).with_usage(Usage {
        input_tokens: input,
        output_tokens: 5,
        ..Usage::default()
    }))
}

fn answer(text: &str) -> ScriptedTurn {
    ScriptedTurn::reply(AssistantMessage::text(text).with_usage(Usage {
        input_tokens: 50,
        output_tokens: 7,
        ..Usage::default()
    }))
}

/// The scenarios, each made afresh (a scripted model is used up by a run).
fn scenarios() -> Vec<(&'static str, Agent)> {
    let runtime = || ToolRuntime::new(registry());
    // An approval beside a call that runs at once, then the answer.
    let approval = Agent::new(
        ScriptedModel::new([
            turn(
                &[
                    ("c1", "look_up", r#"{"order": 7}"#),
                    ("c2", "refund", r#"{"order": 7}"#),
                ],
                10,
            ),
            answer("Refunded order 7.")
                .expect_ok("c1", "paid")
                .expect_ok("c2", "refunded 7"),
        ]),
        runtime(),
    );
    // A denial, an external answer and an external call that needs an
    // approval first, over two rounds.
    let mixed = Agent::new(
        ScriptedModel::new([
            turn(
                &[
                    ("c1", "wire_money", r#"{"cents": 500}"#),
                    ("c2", "ask_customer", r#"{"question": "Which card?"}"#),
                ],
                10,
            ),
            turn(&[("c3", "ask_manager", r#"{"question": "May I?"}"#)], 20)
                .expect_error("c1", "not today")
                .expect_ok("c2", "answer to c2"),
            answer("Done.").expect_ok("c3", "answer to c3"),
        ]),
        runtime(),
    )
    .require_approval("ask_manager");
    // A handoff, then an approval in the agent the run was handed to, with
    // guardrails on both sides of the call and a limit on calls.
    let billing = Agent::new(
        ScriptedModel::new([
            turn(&[("b1", "refund", r#"{"order": 9}"#)], 30),
            answer("Billing refunded order 9.").expect_ok("b1", "REFUNDED 9"),
        ]),
        runtime(),
    )
    .tool_guardrail("no_big_orders", |call: ToolCall| async move {
        if call.arguments["order"].as_u64() > Some(100) {
            Verdict::Refuse("too big".into())
        } else {
            Verdict::Allow
        }
    })
    .tool_output_guardrail("shout", |(_, output): (ToolCall, ToolOutput)| async move {
        Verdict::Rewrite(ToolOutput::text(output.to_text().to_uppercase()))
    });
    let handed = Agent::new(
        ScriptedModel::new([turn(&[("h1", "transfer_to_billing", "{}")], 10)]),
        runtime(),
    )
    .handoff("billing", "refunds", billing)
    .usage_limits(UsageLimits::new().tool_calls(5));
    // A nested agent answers beside an approval.
    let helper = Agent::new(ScriptedModel::new([answer("order 3 is late")]), runtime());
    let nested = Agent::new(
        ScriptedModel::new([
            turn(
                &[
                    ("n1", "helper", r#"{"input": "Is order 3 late?"}"#),
                    ("n2", "refund", r#"{"order": 3}"#),
                ],
                10,
            ),
            answer("Order 3 was late and is refunded.")
                .expect_ok("n1", "late")
                .expect_ok("n2", "refunded 3"),
        ]),
        ToolRuntime::new(
            registry()
                .with(helper.as_tool("helper", "Answers questions about orders."))
                .unwrap(),
        ),
    );
    vec![
        ("approval", approval),
        ("mixed", mixed),
        ("handed", handed),
        ("nested", nested),
    ]
}

/// How every wait is answered, in both runs.
enum Answer {
    Approve,
    Deny(&'static str),
    Output(String),
}

fn policy(tool: &str, call_id: &str, kind: WaitKind) -> Answer {
    match (tool, kind) {
        ("wire_money", _) => Answer::Deny("not today"),
        (_, WaitKind::Approval) => Answer::Approve,
        (_, _) => Answer::Output(format!("answer to {call_id}")),
    }
}

/// What a run told, in order, without what differs from run to run (ids of
/// runs, the paused phase a stopped run tells at each stop).
fn told(events: &[Envelope]) -> Vec<Value> {
    fn without_run_ids(value: &mut Value) {
        match value {
            Value::Object(object) => {
                object.remove("run_id");
                object.values_mut().for_each(without_run_ids);
            }
            Value::Array(items) => items.iter_mut().for_each(without_run_ids),
            _ => {}
        }
    }
    events
        .iter()
        .filter(|envelope| !matches!(envelope.kind, EventKind::State(RunPhase::Paused)))
        .map(|envelope| {
            let mut kind = serde_json::to_value(&envelope.kind).unwrap();
            without_run_ids(&mut kind);
            kind
        })
        .collect()
}

/// The events of one run are numbered from 1 without gaps, across its
/// stops (each stop's `Paused` phase included), so that a run's id and a
/// number name one event.
fn numbered_without_gaps(events: &[Envelope]) {
    let numbers: Vec<u64> = events.iter().map(|envelope| envelope.sequence).collect();
    let expected: Vec<u64> = (1..=events.len() as u64).collect();
    assert_eq!(numbers, expected);
}

/// The run that never stops: a handler answers every wait as it comes.
async fn never_stopped(agent: Agent) -> (RunOutcome, Vec<Envelope>) {
    let run = agent.invoke([Message::user("Please help with my orders.")]);
    let events = run.events();
    run.on(|envelope, control| {
        let EventKind::Tool(event) = envelope.kind else {
            return;
        };
        let (call, kind) = match event {
            ToolStreamEvent::ApprovalRequested { call } => (call, WaitKind::Approval),
            ToolStreamEvent::Call {
                call,
                external: true,
            } => (call, WaitKind::Answer),
            _ => return,
        };
        let answered = match policy(&call.tool_name, &call.call_id, kind) {
            Answer::Approve => control.approve(&call.call_id),
            Answer::Deny(reason) => control.deny(&call.call_id, reason),
            Answer::Output(text) => control.resolve(&call.call_id, Ok(ToolOutput::text(text))),
        };
        answered.unwrap();
    });
    let outcome = run.await;
    (outcome, events.collect().await)
}

/// The run stopped at every wait: each stop's state answered by the same
/// policy, written to JSON, read back, and gone on from.
async fn stopped_at_every_wait(agent: Agent) -> (RunOutcome, Vec<Envelope>, usize) {
    let mut invocation = agent
        .invoke([Message::user("Please help with my orders.")])
        .pause_at_waits();
    let mut events = Vec::new();
    let mut stops = 0;
    loop {
        let stream = invocation.events();
        let outcome = invocation.await;
        events.extend(stream.collect::<Vec<_>>().await);
        let Some(state) = outcome.paused() else {
            return (outcome, events, stops);
        };
        stops += 1;
        let mut state: RunState = serde_json::from_str(&serde_json::to_string(state).unwrap())
            .expect("a state reads back");
        let waits: Vec<_> = state.waits().cloned().collect();
        assert!(!waits.is_empty(), "a paused run waits for something");
        for wait in waits {
            let id = &wait.call.call_id;
            match policy(&wait.call.tool_name, id, wait.kind) {
                Answer::Approve => state.approve(id).unwrap(),
                Answer::Deny(reason) => state.deny(id, reason).unwrap(),
                Answer::Output(text) => state.resolve(id, Ok(ToolOutput::text(text))).unwrap(),
            }
        }
        assert!(!state.is_waiting());
        invocation = agent.resume(state).pause_at_waits();
    }
}

#[tokio::test]
async fn a_run_stopped_at_every_wait_is_the_run_that_never_stopped() {
    let expected_stops = [("approval", 1), ("mixed", 3), ("handed", 1), ("nested", 1)];
    for ((name, once), (_, stopping)) in scenarios().into_iter().zip(scenarios()) {
        let (whole, whole_events) = never_stopped(once).await;
        let (stopped, stopped_events, stops) = stopped_at_every_wait(stopping).await;
        assert!(whole.text().is_some(), "{name}: {whole:?}");
        assert_eq!(whole.text(), stopped.text(), "{name}");
        assert_eq!(whole.transcript(), stopped.transcript(), "{name}");
        assert_eq!(whole.spent(), stopped.spent(), "{name}");
        assert_eq!(told(&whole_events), told(&stopped_events), "{name}");
        numbered_without_gaps(&whole_events);
        numbered_without_gaps(&stopped_events);
        let stopped_as = expected_stops.iter().find(|(n, _)| *n == name).unwrap().1;
        assert_eq!(stops, stopped_as, "{name}: how many times it stopped");
    }
}

#[tokio::test]
async fn a_paused_run_says_what_it_waits_for_and_keeps_its_books() {
    let (_, agent) = scenarios().remove(0);
    let outcome = agent
        .invoke([Message::user("Refund order 7")])
        .pause_at_waits()
        .await;
    assert_eq!(outcome.state(), RunPhase::Paused);
    assert_eq!(outcome.text(), None);
    let state = outcome.paused().unwrap();
    let waits: Vec<_> = state.waits().collect();
    assert_eq!(waits.len(), 1);
    assert_eq!(waits[0].call.call_id, "c2");
    assert_eq!(waits[0].kind, WaitKind::Approval);
    assert_eq!(waits[0].call.arguments, json!({"order": 7}));
    assert_eq!(outcome.spent().requests, 1);
    assert_eq!(outcome.usage().input_tokens, 10);
    // The turn whose calls wait ends the transcript.
    assert!(matches!(
        state.transcript().last(),
        Some(Message::Assistant(_))
    ));
}

#[tokio::test]
async fn answers_that_do_not_fit_a_wait_are_refused() {
    let (_, agent) = scenarios().remove(0);
    let outcome = agent
        .invoke([Message::user("Refund order 7")])
        .pause_at_waits()
        .await;
    let mut state = outcome.into_paused().unwrap();
    assert!(state.approve("c9").unwrap_err().to_string().contains("c9"));
    assert!(state
        .resolve("c2", Ok(ToolOutput::text("x")))
        .unwrap_err()
        .to_string()
        .contains("an approval"));
    state.deny("c2", "no refunds on Sundays").unwrap();
    assert!(state.approve("c2").is_err(), "the first answer stands");
}

#[tokio::test]
async fn a_wait_left_unanswered_stops_the_run_again() {
    let (_, agent) = scenarios().remove(0);
    let first = agent
        .invoke([Message::user("Refund order 7")])
        .pause_at_waits()
        .await
        .into_paused()
        .unwrap();
    let again = agent.resume(first.clone()).pause_at_waits().await;
    let state = again.paused().expect("it stops at the same wait");
    assert_eq!(state.waits().count(), 1);
    assert_eq!(state.transcript(), first.transcript());
}

#[tokio::test]
async fn a_state_of_another_format_or_agent_is_refused_clearly() {
    let (_, agent) = scenarios().remove(0);
    let state = agent
        .invoke([Message::user("Refund order 7")])
        .pause_at_waits()
        .await
        .into_paused()
        .unwrap();
    let mut written = serde_json::to_value(&state).unwrap();
    written["format"] = json!(RunState::FORMAT + 1);
    let future: RunState = serde_json::from_value(written).unwrap();
    let outcome = agent.resume(future).await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(matches!(error, RunError::Resume { .. }), "{error}");
    assert!(error.to_string().contains("format"), "{error}");

    let mut written = serde_json::to_value(&state).unwrap();
    written["holder"] = json!(["nobody"]);
    let elsewhere: RunState = serde_json::from_value(written).unwrap();
    let outcome = agent.resume(elsewhere).await;
    assert!(
        matches!(&outcome, RunOutcome::Failed { error: RunError::Resume { message }, .. } if message.contains("nobody")),
        "{outcome:?}"
    );

    // Not JSON of a state at all: serde says what is wrong.
    let broken = serde_json::from_str::<RunState>(r#"{"format": 1, "run_id": 3}"#);
    assert!(broken.is_err());
}

/// A state read back from anywhere may have been changed on the way: every
/// value of a real state, replaced in turn by values of every other kind,
/// either fails to read (serde says why) or goes on to an outcome. Never a
/// panic or a hang.
#[tokio::test]
async fn a_state_changed_anywhere_reads_clearly_or_goes_on_without_panicking() {
    fn leaves(value: &Value, path: String, into: &mut Vec<String>) {
        match value {
            Value::Object(object) => {
                for (key, value) in object {
                    leaves(
                        value,
                        format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
                        into,
                    );
                }
            }
            Value::Array(items) => {
                for (index, value) in items.iter().enumerate() {
                    leaves(value, format!("{path}/{index}"), into);
                }
            }
            _ => {}
        }
        into.push(path);
    }
    let (mut refused, mut went_on) = (0, 0);
    // The mixed run (a denial, answers, an approval first) and the one
    // handed to another agent (its holder, a call limit).
    for scenario in [1, 2] {
        let (_, agent) = scenarios().swap_remove(scenario);
        let state = agent
            .invoke([Message::user("go")])
            .pause_at_waits()
            .await
            .into_paused()
            .unwrap();
        let written = serde_json::to_value(&state).unwrap();
        let mut paths = Vec::new();
        leaves(&written, String::new(), &mut paths);
        let replacements = [
            Value::Null,
            json!(-1),
            json!(u64::MAX),
            json!(1.5e300),
            json!("c1"),
            json!([]),
            json!({}),
            json!(true),
        ];
        for path in &paths {
            for replacement in &replacements {
                let mut changed = written.clone();
                if path.is_empty() {
                    changed = replacement.clone();
                } else if let Some(slot) = changed.pointer_mut(path) {
                    *slot = replacement.clone();
                }
                let Ok(mut state) = serde_json::from_value::<RunState>(changed) else {
                    refused += 1;
                    continue;
                };
                let waits: Vec<_> = state.waits().cloned().collect();
                for wait in waits {
                    let _ = state.approve(&wait.call.call_id);
                    let _ = state.resolve(&wait.call.call_id, Ok(ToolOutput::text("ok")));
                }
                // Each resume on a fresh agent: a scripted model is used up.
                let (_, agent) = scenarios().swap_remove(scenario);
                let run = agent.resume(state).pause_at_waits();
                let outcome = tokio::time::timeout(std::time::Duration::from_secs(10), run)
                    .await
                    .unwrap_or_else(|_| panic!("resuming with {path} = {replacement} hung"));
                let _ = outcome.state();
                went_on += 1;
            }
        }
    }
    assert!(
        refused > 0 && went_on > 0,
        "{refused} refused, {went_on} went on"
    );
}

//! Approvals and external calls at any depth of a tree of agents: the
//! root's handlers answer them by their call path, under the root's
//! deadline; a run that stops at its waits keeps the nested waits in its
//! state, answered by path.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use behest::run::{ModelError, ModelRequest, RunState, WaitKind};
use behest::{
    Agent, AssistantMessage, ControlError, ExternalTool, Message, Model, RunOutcome, Tool,
    ToolCall, ToolOutput, ToolRegistry, ToolRuntime, ToolSpec,
};

/// A model that answers by the conversation: `reply` is given the last
/// user text and the tool results after it (empty before any call).
struct ByConversation<F>(F);

impl<F> Model for ByConversation<F>
where
    F: Fn(&str, &[String]) -> AssistantMessage + Send + Sync + 'static,
{
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let conversation = request.conversation;
        let asked = conversation
            .iter()
            .rev()
            .find_map(|message| match message {
                Message::User { text } => Some(text.as_str()),
                _ => None,
            })
            .unwrap_or_default();
        let results: Vec<String> = conversation
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.clone()),
                _ => None,
            })
            .collect();
        Ok((self.0)(asked, &results))
    }
}

/// Refunds an order; counts its runs.
struct Refund(Arc<AtomicUsize>);

impl Tool for Refund {
    fn name(&self) -> &str {
        "refund"
    }

    fn spec(&self) -> ToolSpec {
        ToolSpec::new(
            "refund",
            "Refund an order.",
            serde_json::json!({"type": "object", "properties": {"order": {"type": "integer"}}, "required": ["order"]}),
        )
    }

    async fn execute(&self, arguments: serde_json::Value) -> behest::ToolResult<ToolOutput> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text(format!("refunded {}", arguments["order"])))
    }
}

fn call(id: &str, tool: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall::new(id, tool, arguments.to_string())
}

/// Billing: refunds the order it is asked about (with an approval), or
/// asks the `ledger` (an external tool) when asked "ledger".
fn billing(refunds: &Arc<AtomicUsize>) -> Agent {
    let mut tools = ToolRegistry::new().with(Refund(refunds.clone())).unwrap();
    tools
        .register(
            "ledger",
            Arc::new(ExternalTool::new(
                "ledger",
                "Read the ledger.",
                serde_json::json!({"type": "object"}),
            )),
        )
        .unwrap();
    let model = ByConversation(|asked: &str, results: &[String]| {
        if let Some(result) = results.first() {
            return AssistantMessage::text(format!("billing: {result}"));
        }
        if asked == "ledger" {
            return AssistantMessage::tool_calls([call("l1", "ledger", serde_json::json!({}))]);
        }
        let order: u64 = asked.parse().unwrap_or(0);
        AssistantMessage::tool_calls([call("r1", "refund", serde_json::json!({ "order": order }))])
    });
    Agent::new(model, ToolRuntime::new(tools)).require_approval("refund")
}

/// An agent that hands what it is asked to `below` (its tool `tool`, by
/// the call `id`), and says `name: …` of the answer.
fn relay(name: &'static str, below: Agent, tool: &'static str, id: &'static str) -> Agent {
    let tools = ToolRegistry::new()
        .with(below.as_tool(tool, "Ask it."))
        .unwrap();
    let model = ByConversation(
        move |asked: &str, results: &[String]| match results.first() {
            Some(result) => AssistantMessage::text(format!("{name}: {result}")),
            None => AssistantMessage::tool_calls([call(
                id,
                tool,
                serde_json::json!({ "input": asked }),
            )]),
        },
    );
    Agent::new(model, ToolRuntime::new(tools))
}

/// The desk: hands what it is asked to billing.
fn desk(refunds: &Arc<AtomicUsize>) -> Agent {
    relay("desk", billing(refunds), "billing", "d1")
}

/// A lead agent over `agent` (as the tool `name`), asking it each of
/// `inputs` at once as calls `c1`, `c2`, …, then saying the results.
fn lead_over(agent: Agent, name: &'static str, inputs: &[&str]) -> Agent {
    let tools = ToolRegistry::new()
        .with(agent.as_tool(name, "Ask it."))
        .unwrap();
    let calls: Vec<ToolCall> = inputs
        .iter()
        .enumerate()
        .map(|(at, input)| {
            call(
                &format!("c{}", at + 1),
                name,
                serde_json::json!({ "input": input }),
            )
        })
        .collect();
    let model = ByConversation(move |_: &str, results: &[String]| {
        if results.is_empty() {
            AssistantMessage::tool_calls(calls.clone())
        } else {
            AssistantMessage::text(results.join(" | "))
        }
    });
    Agent::new(model, ToolRuntime::new(tools))
}

/// Runs `agent` with a handler that answers every asked call by its path
/// as `answer` says, recording the paths.
async fn run_answering(
    agent: &Agent,
    answer: impl Fn(&str, &behest::RunControl) + Send + Sync + 'static,
) -> (RunOutcome, Vec<String>) {
    let paths = Arc::new(Mutex::new(Vec::new()));
    let seen = paths.clone();
    let run = agent.invoke([Message::user("go")]);
    run.on(move |envelope, control| {
        if let Some(path) = envelope.kind.call_path() {
            seen.lock().unwrap().push(path.clone());
            answer(&path, &control);
        }
    });
    let outcome = run.await;
    let mut paths = paths.lock().unwrap().clone();
    paths.sort();
    paths.dedup();
    (outcome, paths)
}

#[tokio::test]
async fn a_nested_approval_reaches_the_root_by_its_path_and_is_answered_there() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = lead_over(billing(&refunds), "billing", &["7"]);
    let (outcome, paths) = run_answering(&agent, |path, control| {
        control.approve(path).unwrap();
    })
    .await;
    assert_eq!(paths, ["billing#c1/refund#r1"]);
    assert_eq!(outcome.text(), Some("billing: refunded 7"));
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn approvals_two_deep_in_parallel_calls_are_answered_each_by_its_own_path() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = lead_over(desk(&refunds), "desk", &["7", "8", "9"]);
    let (outcome, paths) = run_answering(&agent, |path, control| {
        // Order 8 (the second call) is refused.
        if path.starts_with("desk#c2/") {
            control.deny(path, "not this one").unwrap();
        } else {
            control.approve(path).unwrap();
        }
    })
    .await;
    assert_eq!(
        paths,
        [
            "desk#c1/billing#d1/refund#r1",
            "desk#c2/billing#d1/refund#r1",
            "desk#c3/billing#d1/refund#r1"
        ]
    );
    let text = outcome.text().unwrap();
    assert!(text.starts_with("desk: billing: refunded 7 | "), "{text}");
    assert!(text.contains("not this one"), "{text}");
    assert!(text.ends_with("desk: billing: refunded 9"), "{text}");
    assert_eq!(refunds.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_nested_external_call_is_answered_by_path_and_a_wrong_path_is_refused() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = lead_over(desk(&refunds), "desk", &["ledger"]);
    let (outcome, paths) = run_answering(&agent, |path, control| {
        // The call's id alone is not its name: it is known by its path.
        assert!(matches!(
            control.resolve("l1", Ok(ToolOutput::text("x"))),
            Err(ControlError::UnknownCall { .. })
        ));
        assert!(matches!(
            control.approve(path),
            Err(ControlError::WrongAnswer { .. })
        ));
        control
            .resolve(path, Ok(ToolOutput::text("balance 12")))
            .unwrap();
        assert!(matches!(
            control.resolve(path, Ok(ToolOutput::text("again"))),
            Err(ControlError::AlreadyAnswered { .. })
        ));
    })
    .await;
    assert_eq!(paths, ["desk#c1/billing#d1/ledger#l1"]);
    assert_eq!(outcome.text(), Some("desk: billing: balance 12"));
}

#[tokio::test]
async fn a_nested_wait_holds_to_the_roots_deadline() {
    let refunds = Arc::new(AtomicUsize::new(0));
    // The nested agent would wait five minutes; the root says 50 ms.
    let agent = lead_over(billing(&refunds), "billing", &["7"])
        .approval_deadline(Duration::from_millis(50));
    let (outcome, paths) = run_answering(&agent, |_, _| {}).await;
    assert_eq!(paths, ["billing#c1/refund#r1"]);
    let text = outcome.text().unwrap();
    assert!(text.contains("nobody approved it within 50ms"), "{text}");
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn without_anyone_to_answer_a_nested_approval_is_still_denied() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = lead_over(billing(&refunds), "billing", &["7"]);
    let outcome = agent.invoke([Message::user("go")]).await;
    let text = outcome.text().unwrap();
    assert!(text.contains("nobody is there to give it"), "{text}");
    assert_eq!(refunds.load(Ordering::SeqCst), 0);
}

/// The paths a paused state waits at, unanswered.
fn waiting(state: &RunState) -> Vec<String> {
    state
        .waits_by_path()
        .into_iter()
        .filter(|(_, wait)| !wait.is_answered())
        .map(|(path, _)| path)
        .collect()
}

/// A state as it comes back from being kept: JSON, read again.
fn kept(state: RunState) -> RunState {
    serde_json::from_str(&serde_json::to_string(&state).unwrap()).unwrap()
}

#[tokio::test]
async fn a_run_stopped_at_nested_waits_keeps_them_in_its_state_and_goes_on_at_their_depth() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = lead_over(desk(&refunds), "desk", &["7", "8"]);
    let outcome = agent.invoke([Message::user("go")]).pause_at_waits().await;
    let state = kept(outcome.into_paused().expect("the refunds wait"));
    assert_eq!(
        waiting(&state),
        [
            "desk#c1/billing#d1/refund#r1",
            "desk#c2/billing#d1/refund#r1"
        ]
    );
    // The run's own waits are the two calls of the desk.
    let own: Vec<_> = state
        .waits()
        .map(|wait| (wait.call.call_id.as_str(), wait.kind))
        .collect();
    assert_eq!(own, [("c1", WaitKind::Agent), ("c2", WaitKind::Agent)]);
    assert_eq!(refunds.load(Ordering::SeqCst), 0);

    // One answered: the run goes on and stops again at the other.
    let mut state = state;
    state.approve("desk#c1/billing#d1/refund#r1").unwrap();
    assert!(state.is_waiting());
    let outcome = agent.resume(kept(state)).pause_at_waits().await;
    let mut state = kept(outcome.into_paused().expect("order 8 still waits"));
    assert_eq!(waiting(&state), ["desk#c2/billing#d1/refund#r1"]);
    assert_eq!(refunds.load(Ordering::SeqCst), 1);

    state
        .deny("desk#c2/billing#d1/refund#r1", "not this one")
        .unwrap();
    assert!(!state.is_waiting());
    let outcome = agent.resume(state).pause_at_waits().await;
    let text = outcome.text().expect("the run completes");
    assert!(text.starts_with("desk: billing: refunded 7 | "), "{text}");
    assert!(text.contains("not this one"), "{text}");
    // Each refund ran once, over three processes' worth of runs.
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn waits_three_deep_are_answered_by_path_and_the_tree_spends_once() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let front = relay("front", desk(&refunds), "desk", "f1");
    let agent = lead_over(front, "front", &["5", "ledger"]);
    let outcome = agent.invoke([Message::user("go")]).pause_at_waits().await;
    let mut state = kept(outcome.into_paused().unwrap());
    assert_eq!(
        waiting(&state),
        [
            "front#c1/desk#f1/billing#d1/refund#r1",
            "front#c2/desk#f1/billing#d1/ledger#l1"
        ]
    );
    let requests = state.spent().requests;
    // Wrong paths and wrong answers are refused, and change nothing.
    for (path, expected) in [
        ("front#c9/desk#f1/billing#d1/refund#r1", "no call"),
        ("front#c1/desk#f1/billing#d1/refund#r2", "no call"),
        ("front#c1/desk#f1/billing#d1/ledger#r1", "no call"),
        // The root's own calls go by their ids alone.
        ("front#c1", "no call"),
        ("c1", "is waiting for the answers of its agent's calls"),
        (
            "front#c1/desk#f1/billing#d1",
            "is waiting for the answers of its agent's calls",
        ),
        ("refund#r1", "no call"),
        ("front#c1/desk#f1/billing#d1/refund#r1/x#y", "no call"),
    ] {
        let error = state.approve(path).unwrap_err();
        assert!(error.to_string().contains(expected), "{path}: {error}");
    }
    let error = state
        .approve("front#c2/desk#f1/billing#d1/ledger#l1")
        .unwrap_err();
    assert!(matches!(error, ControlError::WrongAnswer { .. }), "{error}");
    state
        .approve("front#c1/desk#f1/billing#d1/refund#r1")
        .unwrap();
    let error = state
        .approve("front#c1/desk#f1/billing#d1/refund#r1")
        .unwrap_err();
    assert!(
        matches!(error, ControlError::AlreadyAnswered { .. }),
        "{error}"
    );
    state
        .resolve(
            "front#c2/desk#f1/billing#d1/ledger#l1",
            Ok(ToolOutput::text("balance 3")),
        )
        .unwrap();
    let outcome = agent.resume(kept(state)).pause_at_waits().await;
    let text = outcome.text().expect("the run completes");
    assert_eq!(
        text,
        "front: desk: billing: refunded 5 | front: desk: billing: balance 3"
    );
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
    // Every model request of the tree counted once: 2 of the lead, and 2
    // of each of the three agents under each of its two calls.
    assert_eq!(requests, 1 + 2 * 3);
    assert_eq!(outcome.spent().requests, 2 + 2 * 3 * 2);
}

#[tokio::test]
async fn a_nested_approval_is_answered_through_a_session_on_another_replica() {
    use behest::run::{MemoryStore, SessionId};
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = lead_over(desk(&refunds), "desk", &["4"]);
    let store = Arc::new(MemoryStore::new());
    let id = SessionId::new("s").unwrap();
    let outcome = agent
        .session(store.clone(), id.clone())
        .run([Message::user("go")])
        .await
        .unwrap();
    let state = outcome.paused().unwrap();
    let run_id = state.run_id().to_owned();
    assert_eq!(waiting(state), ["desk#c1/billing#d1/refund#r1"]);
    // Another replica builds the same agent and answers by path.
    let replica = lead_over(desk(&refunds), "desk", &["4"]);
    let outcome = replica
        .session(store, id)
        .approve(&run_id, "desk#c1/billing#d1/refund#r1")
        .await
        .unwrap()
        .expect("its last wait");
    assert_eq!(outcome.text(), Some("desk: billing: refunded 4"));
    assert_eq!(refunds.load(Ordering::SeqCst), 1);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
    /// Any text given as a path is refused clearly unless it names a
    /// waiting call: never a panic, never another call answered.
    #[test]
    fn any_path_is_answered_only_if_it_names_a_waiting_call(
        path in proptest::prop_oneof![
            "[a-z0-9#/]{0,40}",
            "(desk#c[0-3]/){0,2}(billing#d[01]/)?(refund|ledger)#[rl][0-2]",
            ".{0,20}",
        ]
    ) {
        let state = nested_state();
        let waiting = waiting(&state);
        let mut answered = state.clone();
        match answered.approve(&path) {
            Ok(()) => {
                proptest::prop_assert!(waiting.contains(&path), "{} answered", path);
                proptest::prop_assert_eq!(waiting.len() - 1, self::waiting(&answered).len());
            }
            Err(error) => {
                proptest::prop_assert!(!error.to_string().is_empty());
                proptest::prop_assert_eq!(&answered, &state);
            }
        }
    }
}

/// A state stopped at two nested approvals, made once.
fn nested_state() -> RunState {
    static STATE: std::sync::OnceLock<RunState> = std::sync::OnceLock::new();
    STATE
        .get_or_init(|| {
            std::thread::spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                runtime.block_on(async {
                    let refunds = Arc::new(AtomicUsize::new(0));
                    let agent = lead_over(desk(&refunds), "desk", &["7", "8"]);
                    agent
                        .invoke([Message::user("go")])
                        .pause_at_waits()
                        .await
                        .into_paused()
                        .unwrap()
                })
            })
            .join()
            .unwrap()
        })
        .clone()
}

#[tokio::test]
async fn call_ids_holding_a_slash_are_answered_by_their_paths() {
    let refunds = Arc::new(AtomicUsize::new(0));
    let desk = relay("desk", billing(&refunds), "billing", "calls/d1");
    let agent = lead_over(desk, "desk", &["6"]);
    // In process, by the path the event gives.
    let (outcome, paths) = run_answering(&agent, |path, control| {
        control.approve(path).unwrap();
    })
    .await;
    assert_eq!(paths, ["desk#c1/billing#calls/d1/refund#r1"]);
    assert_eq!(outcome.text(), Some("desk: billing: refunded 6"));
    // Stopped, by the path the state gives.
    let outcome = agent.invoke([Message::user("go")]).pause_at_waits().await;
    let mut state = kept(outcome.into_paused().unwrap());
    assert_eq!(waiting(&state), ["desk#c1/billing#calls/d1/refund#r1"]);
    let error = state
        .approve("desk#c1/billing#calls/refund#r1")
        .unwrap_err();
    assert!(matches!(error, ControlError::UnknownCall { .. }), "{error}");
    state.approve("desk#c1/billing#calls/d1/refund#r1").unwrap();
    let outcome = agent.resume(state).pause_at_waits().await;
    assert_eq!(outcome.text(), Some("desk: billing: refunded 6"));
    assert_eq!(refunds.load(Ordering::SeqCst), 2);
}

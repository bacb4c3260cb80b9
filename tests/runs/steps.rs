//! Runs whose steps a journal carries out, as a durable engine does
//! (`RunSteps`): recorded turns and calls are given back when the run is
//! played again, so a run resumed after a crash asks the model nothing it
//! already answered and runs no completed tool twice; approvals and
//! external answers come from the journal.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use behest::run::{ModelError, ModelRequest, ModelTurn, RunSteps, StepKind, ToolStep};
use behest::{
    external_tool, tool, Agent, AssistantMessage, Message, Model, ToolCall, ToolError, ToolOutput,
    ToolRegistry, ToolResult, ToolRuntime,
};
use futures::future::BoxFuture;
use serde_json::json;

/// A model whose answer follows from the conversation alone, as a replayed
/// run needs: a tally until two results are in, then asking a person (if
/// the agent has the tool), then the answer.
struct Steady {
    asked: Arc<AtomicUsize>,
}

impl Model for Steady {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let results: Vec<&str> = request
            .conversation
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.as_str()),
                _ => None,
            })
            .collect();
        let offered = |name: &str| request.tools.iter().any(|spec| spec.name == name);
        let n = results.len();
        let call = |name: &str, arguments| ToolCall::new(format!("c{n}"), name, arguments);
        Ok(if n < 2 {
            AssistantMessage::text("").with_tool_calls([call("tally", json!({"step": n}))])
        } else if n == 2 && offered("ask_person") {
            AssistantMessage::text("")
                .with_tool_calls([call("ask_person", json!({"question": "go on?"}))])
        } else {
            AssistantMessage::text(format!("done: {}", results.join(", ")))
        })
    }
}

static TALLIED: AtomicUsize = AtomicUsize::new(0);

/// Count a step.
#[tool]
fn tally(step: u32) -> String {
    TALLIED.fetch_add(1, Ordering::SeqCst);
    format!("step {step} counted")
}

/// Ask a person.
#[external_tool]
struct AskPerson {
    question: String,
}

/// A journal of steps, as a durable engine keeps one: each step's answer
/// by its place; a recorded step is given back, not done again.
#[derive(Default)]
struct Journal {
    turns: Mutex<HashMap<usize, AssistantMessage>>,
    calls: Mutex<HashMap<String, ToolResult<ToolOutput>>>,
    /// Answers to external calls, by call id, as people gave them.
    answers: Mutex<HashMap<String, String>>,
    /// Approvals, by call id.
    approvals: Mutex<HashMap<String, bool>>,
    kinds: Mutex<Vec<StepKind>>,
    /// Decisions (guardrail verdicts, summaries), by name.
    decisions: Mutex<Vec<(String, serde_json::Value)>>,
}

impl Journal {
    /// A copy holding the first `turns` turns and `calls` calls: what a
    /// journal held when the process died.
    fn cut(&self, turns: usize, calls: &[&str]) -> Self {
        let journal = Journal::default();
        for (index, turn) in self.turns.lock().unwrap().iter() {
            if *index < turns {
                journal.turns.lock().unwrap().insert(*index, turn.clone());
            }
        }
        for id in calls {
            let result = self.calls.lock().unwrap()[*id].clone();
            journal
                .calls
                .lock()
                .unwrap()
                .insert((*id).to_owned(), result);
        }
        journal
    }
}

impl RunSteps for Journal {
    fn model_turn<'a>(
        &'a self,
        turn: ModelTurn<'a>,
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        Box::pin(async move {
            if let Some(recorded) = self.turns.lock().unwrap().get(&turn.index).cloned() {
                return Ok(recorded);
            }
            let index = turn.index;
            let answer = turn.ask().await?;
            self.turns.lock().unwrap().insert(index, answer.clone());
            Ok(answer)
        })
    }

    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            let id = step.call.call_id.clone();
            if let Some(recorded) = self.calls.lock().unwrap().get(&id).cloned() {
                return recorded;
            }
            self.kinds.lock().unwrap().push(step.kind);
            let result = match step.kind {
                StepKind::External { deadline, .. } => {
                    let answer = self.answers.lock().unwrap().get(&id).cloned();
                    answer
                        .map(ToolOutput::text)
                        .ok_or(ToolError::Timeout { after: deadline })
                }
                StepKind::NeedsApproval { .. }
                    if !self
                        .approvals
                        .lock()
                        .unwrap()
                        .get(&id)
                        .copied()
                        .unwrap_or(false) =>
                {
                    Err(ToolError::ApprovalDenied {
                        reason: "denied in the journal".to_owned(),
                    })
                }
                _ => step.run().await,
            };
            self.calls.lock().unwrap().insert(id, result.clone());
            result
        })
    }

    fn decision<'a>(
        &'a self,
        name: String,
        decide: BoxFuture<'a, serde_json::Value>,
    ) -> BoxFuture<'a, serde_json::Value> {
        Box::pin(async move {
            let recorded = self
                .decisions
                .lock()
                .unwrap()
                .iter()
                .find(|(n, _)| *n == name)
                .cloned();
            if let Some((_, decided)) = recorded {
                return decided;
            }
            let decided = decide.await;
            self.decisions.lock().unwrap().push((name, decided.clone()));
            decided
        })
    }
}

fn agent(asked: &Arc<AtomicUsize>, registry: ToolRegistry) -> Agent {
    let model = Steady {
        asked: asked.clone(),
    };
    Agent::new(model, ToolRuntime::new(registry))
}

// One test: the tool's counter is shared by the whole binary.
#[tokio::test]
async fn a_run_played_again_from_its_journal_repeats_no_step() {
    let tools = || ToolRegistry::new().with(Tally).unwrap();
    let question = [Message::user("count")];

    // In process, for reference.
    let asked = Arc::new(AtomicUsize::new(0));
    let in_process = agent(&asked, tools()).invoke(question.clone()).await;
    assert_eq!(
        in_process.text(),
        Some("done: step 0 counted, step 1 counted")
    );
    assert_eq!(asked.load(Ordering::SeqCst), 3);

    // Through a journal: the same run, step for step.
    let journal = Journal::default();
    let asked = Arc::new(AtomicUsize::new(0));
    TALLIED.store(0, Ordering::SeqCst);
    let journaled = agent(&asked, tools())
        .invoke(question.clone())
        .drive_with(&journal)
        .await;
    assert_eq!(journaled.transcript(), in_process.transcript());
    assert_eq!(
        (asked.load(Ordering::SeqCst), TALLIED.load(Ordering::SeqCst)),
        (3, 2)
    );
    assert_eq!(
        *journal.kinds.lock().unwrap(),
        [StepKind::Local, StepKind::Local]
    );

    // Crashed after the first turn and the first call: played again, the
    // model is asked only for the turns after them, the tool runs once.
    let resumed_journal = journal.cut(1, &["c0"]);
    let asked = Arc::new(AtomicUsize::new(0));
    TALLIED.store(0, Ordering::SeqCst);
    let resumed = agent(&asked, tools())
        .invoke(question.clone())
        .drive_with(&resumed_journal)
        .await;
    assert_eq!(resumed.transcript(), in_process.transcript());
    assert_eq!(
        (asked.load(Ordering::SeqCst), TALLIED.load(Ordering::SeqCst)),
        (2, 1)
    );

    // The whole journal: nothing is asked or run again.
    let asked = Arc::new(AtomicUsize::new(0));
    TALLIED.store(0, Ordering::SeqCst);
    let replayed = agent(&asked, tools())
        .invoke(question.clone())
        .drive_with(&journal)
        .await;
    assert_eq!(replayed.transcript(), in_process.transcript());
    assert_eq!(
        (asked.load(Ordering::SeqCst), TALLIED.load(Ordering::SeqCst)),
        (0, 0)
    );

    // An external tool is answered from the journal; unanswered, the
    // model reads its deadline passed.
    let with_person = || {
        ToolRegistry::new()
            .with(Tally)
            .unwrap()
            .with(AskPerson::external_tool())
            .unwrap()
    };
    let answered = Journal::default();
    answered
        .answers
        .lock()
        .unwrap()
        .insert("c2".to_owned(), "yes".to_owned());
    let outcome = agent(&asked, with_person())
        .invoke(question.clone())
        .drive_with(&answered)
        .await;
    assert_eq!(
        outcome.text(),
        Some("done: step 0 counted, step 1 counted, yes")
    );
    assert!(matches!(
        answered.kinds.lock().unwrap().last(),
        Some(StepKind::External { .. })
    ));
    let unanswered = Journal::default();
    let outcome = agent(&asked, with_person())
        .invoke(question.clone())
        .drive_with(&unanswered)
        .await;
    let text = outcome.text().unwrap();
    assert!(
        text.ends_with("did not finish within 60s and was stopped"),
        "{text}"
    );

    // A tool that needs an approval waits for the journal's; denied, the
    // model reads why.
    let denied = Journal::default();
    let outcome = agent(&asked, tools())
        .require_approval("tally")
        .invoke(question)
        .drive_with(&denied)
        .await;
    assert!(
        outcome.text().unwrap().contains("denied in the journal"),
        "{outcome:?}"
    );
    assert!(matches!(
        denied.kinds.lock().unwrap()[0],
        StepKind::NeedsApproval { .. }
    ));
}

/// Stamp a step (a tool of its own: `tally` counts for the test above).
#[tool]
fn stamp(step: u32) -> String {
    format!("step {step} stamped")
}

/// Steps that record each call they are given, approve every call and
/// answer external ones with `answer`.
struct Recorder {
    answer: String,
    seen: Mutex<Vec<(ToolCall, StepKind)>>,
}

impl RunSteps for Recorder {
    fn model_turn<'a>(
        &'a self,
        turn: ModelTurn<'a>,
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        turn.ask()
    }

    fn tool_call(&self, step: ToolStep) -> BoxFuture<'_, ToolResult<ToolOutput>> {
        Box::pin(async move {
            self.seen
                .lock()
                .unwrap()
                .push((step.call.clone(), step.kind));
            match step.kind {
                StepKind::External { .. } => Ok(ToolOutput::text(self.answer.clone())),
                _ => step.run().await,
            }
        })
    }
}

/// A run's steps get each call routed once, by the runtime, after
/// validation: a person approving a call sees its arguments as the tool
/// reads them, a call with bad arguments never reaches the steps (the
/// model reads why), and an outside answer meets the same output limit
/// as a tool's own.
#[tokio::test]
async fn steps_receive_validated_calls_and_answers_meet_the_output_limit() {
    let registry = ToolRegistry::new()
        .with(Stamp)
        .unwrap()
        .with(AskPerson::external_tool())
        .unwrap();
    let model = behest::ScriptedModel::new([
        behest::Turn::tool_calls([
            ToolCall::new("bad", "stamp", json!({"step": "two"})),
            ToolCall::new("ok", "stamp", r#"{"step": 2.0}"#),
            ToolCall::new("ask", "ask_person", json!({"question": "go on?"})),
        ]),
        behest::Turn::text("done"),
    ]);
    let runtime = ToolRuntime::builder(registry).max_output_bytes(64).build();
    let recorder = Recorder {
        answer: "y".repeat(100),
        seen: Mutex::default(),
    };
    let outcome = Agent::new(model, runtime)
        .require_approval("stamp")
        .require_approval("ask_person")
        .invoke([Message::user("count")])
        .drive_with(&recorder)
        .await;
    let seen = recorder.seen.into_inner().unwrap();
    let ids: Vec<&str> = seen.iter().map(|(call, _)| call.call_id.as_str()).collect();
    assert_eq!(ids, ["ok", "ask"], "the invalid call reached the steps");
    // Text decoded and the float read as the integer the schema asks for.
    assert_eq!(seen[0].0.arguments, json!({"step": 2}));
    assert!(matches!(seen[0].1, StepKind::NeedsApproval { .. }));
    // An external call that needs an approval is routed so.
    assert!(matches!(
        seen[1].1,
        StepKind::External {
            approval: Some(_),
            ..
        }
    ));

    let results: Vec<&behest::conversation::ToolResultMessage> = outcome
        .transcript()
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result),
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 3);
    assert!(results[0].is_error && results[0].content.contains("/step"));
    assert_eq!(results[1].content, "step 2 stamped");
    assert!(
        results[2].is_error && results[2].content.contains("64"),
        "an answer over the output limit reached the model: {}",
        results[2].content
    );
}

/// A guardrail's verdict is a step of the journal: played again, the run
/// gets the verdicts it had, though the guardrail would now decide
/// otherwise (it refuses every call after its first look).
#[tokio::test]
async fn a_guardrails_verdicts_are_journaled_and_replayed() {
    use behest::run::Verdict;

    let looked = Arc::new(AtomicUsize::new(0));
    let guarded = |looked: Arc<AtomicUsize>| {
        let asked = Arc::new(AtomicUsize::new(0));
        // `stamp` under the name the model calls: `tally` counts for the
        // test above.
        let mut registry = ToolRegistry::new();
        registry.register("tally", Arc::new(Stamp)).unwrap();
        agent(&asked, registry).tool_guardrail("first_only", move |_call: behest::ToolCall| {
            let first = looked.fetch_add(1, Ordering::SeqCst) == 0;
            async move {
                if first {
                    Verdict::Allow
                } else {
                    Verdict::Refuse("only the first call".to_owned())
                }
            }
        })
    };
    let journal = Journal::default();
    let first = guarded(looked.clone())
        .invoke([Message::user("count")])
        .drive_with(&journal)
        .await;
    let names: Vec<String> = journal
        .decisions
        .lock()
        .unwrap()
        .iter()
        .map(|(name, _)| name.clone())
        .collect();
    assert_eq!(
        names,
        [
            "decision 0: guardrail `first_only`",
            "decision 1: guardrail `first_only`"
        ]
    );
    // Played again on the journal of decisions alone (turns and calls
    // done again): the verdicts are those of the first run.
    let decisions_only = Journal::default();
    *decisions_only.decisions.lock().unwrap() = journal.decisions.lock().unwrap().clone();
    let again = guarded(looked.clone())
        .invoke([Message::user("count")])
        .drive_with(&decisions_only)
        .await;
    assert_eq!(again.transcript(), first.transcript());
    assert!(
        looked.load(Ordering::SeqCst) == 2,
        "the guardrail was not asked again"
    );
}

/// What an agent run as a tool spent is the caller's, whether the agent
/// runs or a journal gives its answer back: a run played again reports, and
/// its limits count, the tokens the first one did.
#[tokio::test]
async fn a_nested_agents_tokens_count_when_a_journal_gives_its_answer_back() {
    use behest::run::ScriptedTurn;
    use behest::{ScriptedModel, Usage};

    let spent = |input| Usage {
        input_tokens: input,
        ..Usage::default()
    };
    let lead = || {
        let helper = Agent::new(
            ScriptedModel::new([ScriptedTurn::reply(
                AssistantMessage::text("late").with_usage(spent(70)),
            )]),
            ToolRuntime::new(ToolRegistry::new()),
        );
        let tools = ToolRegistry::new()
            .with(helper.as_tool("helper", "Answers questions."))
            .unwrap();
        Agent::new(
            ScriptedModel::new([
                ScriptedTurn::reply(
                    AssistantMessage::tool_calls([ToolCall::new(
                        "n1",
                        "helper",
                        r#"{"input": "Is it late?"}"#,
                    )])
                    .with_usage(spent(10)),
                ),
                ScriptedTurn::reply(AssistantMessage::text("It is late.").with_usage(spent(20))),
            ]),
            ToolRuntime::new(tools),
        )
    };
    let journal = Journal::default();
    let first = lead()
        .invoke([Message::user("late?")])
        .drive_with(&journal)
        .await;
    assert_eq!(first.text(), Some("It is late."));
    assert_eq!(first.usage().input_tokens, 100);
    // Played again whole: no agent runs, the journal answers.
    let again = lead()
        .invoke([Message::user("late?")])
        .drive_with(&journal)
        .await;
    assert_eq!(again.transcript(), first.transcript());
    assert_eq!(again.usage().input_tokens, 100);
}

/// A run goes on from its state in process only: a journal's run is played
/// again from its journal.
#[tokio::test]
async fn a_state_cannot_be_driven_by_steps() {
    use behest::run::{RunError, ScriptedTurn};
    use behest::ScriptedModel;

    /// Needs a person's approval.
    #[tool(needs_approval)]
    fn guarded_tally() -> String {
        "tallied".to_owned()
    }
    let agent = Agent::new(
        ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
            "c1",
            "guarded_tally",
            "{}",
        )])]),
        ToolRuntime::new(ToolRegistry::new().with(GuardedTally).unwrap()),
    );
    let state = agent
        .invoke([Message::user("count")])
        .pause_at_waits()
        .await
        .into_paused()
        .unwrap();
    let outcome = agent.resume(state).drive_with(&Journal::default()).await;
    let behest::RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(matches!(error, RunError::Resume { .. }), "{error}");
}

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
    fn model_turn(&self, turn: ModelTurn) -> BoxFuture<'_, Result<AssistantMessage, ModelError>> {
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
                StepKind::External { deadline } => {
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

//! An agent run in a session: the conversation kept between runs, the
//! runs that wait kept in the session and finished by whichever replica
//! gets their answers, each tool run once.

mod support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use behest::run::session::{Commit, PausedRun, RunChange};
use behest::run::{
    Compaction, ContextPolicy, ControlError, Message, RunOutcome, SessionError, SessionId, WaitKind,
};
use behest::ToolOutput;
use support::agent::{agent, agent_counting};

fn id(text: &str) -> SessionId {
    SessionId::new(text).unwrap()
}

fn paused(outcome: &RunOutcome) -> (String, Vec<String>) {
    let state = outcome.paused().expect("the run waits");
    let calls = state
        .waits()
        .map(|wait| wait.call.call_id.clone())
        .collect();
    (state.run_id().to_owned(), calls)
}

#[tokio::test]
async fn a_session_remembers_the_conversation_between_runs() {
    for (name, store) in support::stores("a_session_remembers").await {
        let (agent, _) = agent();
        let agent = agent.instructions("Be kind.");
        let session = agent.session(store.clone(), id("ada"));
        let first = session.run([Message::user("I am Ada")]).await.unwrap();
        assert_eq!(first.text(), Some("heard 1: I am Ada"), "{name}");
        // Another process, the same store: the same conversation.
        let again = agent.session(store.clone(), id("ada"));
        let second = again.run([Message::user("who am I?")]).await.unwrap();
        assert_eq!(second.text(), Some("heard 2: who am I?"), "{name}");
        // The instructions are the agent's, put first by each run: the
        // session does not keep them.
        let history = session.history().await.unwrap();
        assert_eq!(history.len(), 4, "{name}");
        assert!(
            !history
                .iter()
                .any(|message| matches!(message, Message::System { .. })),
            "{name}"
        );
        // Another session knows nothing of it.
        let other = agent.session(store, id("bob"));
        let outcome = other.run([Message::user("hi")]).await.unwrap();
        assert_eq!(outcome.text(), Some("heard 1: hi"), "{name}");
    }
}

#[tokio::test]
async fn an_approval_given_to_another_replica_finishes_the_run_and_the_tool_runs_once() {
    for (name, one, two) in support::replicas("an_approval_given_to_another_replica").await {
        let (agent, refunds) = agent();
        let asked = agent.session(one, id("s"));
        let outcome = asked.run([Message::user("refund 42")]).await.unwrap();
        let (run_id, calls) = paused(&outcome);
        assert_eq!(calls, ["t0c0"], "{name}");
        assert_eq!(refunds.load(Ordering::SeqCst), 0, "{name}");
        // The session takes no other run while this one waits.
        let busy = asked.run([Message::user("hello?")]).await.unwrap_err();
        assert!(
            matches!(&busy, SessionError::Busy { run_id: busy, .. } if *busy == run_id),
            "{name}: {busy}"
        );
        // Nothing is in the history until the run ends.
        assert!(asked.history().await.unwrap().is_empty(), "{name}");
        let waiting = asked.paused().await.unwrap();
        assert_eq!(
            waiting[0].state.waits().next().unwrap().kind,
            WaitKind::Approval,
            "{name}"
        );

        let (other_agent, other_refunds) = agent_sharing(&refunds);
        let answered = other_agent.session(two, id("s"));
        let outcome = answered
            .approve(&run_id, "t0c0")
            .await
            .unwrap()
            .expect("the last answer");
        assert_eq!(outcome.text(), Some("done: refunded 42"), "{name}");
        assert_eq!(other_refunds.load(Ordering::SeqCst), 1, "{name}");
        // The history holds the whole run; the session takes runs again.
        assert_eq!(asked.history().await.unwrap().len(), 4, "{name}");
        assert!(asked.paused().await.unwrap().is_empty(), "{name}");
        let error = answered.approve(&run_id, "t0c0").await.unwrap_err();
        assert!(
            matches!(error, SessionError::NoRun { .. }),
            "{name}: {error}"
        );
        let next = asked.run([Message::user("thanks")]).await.unwrap();
        assert_eq!(next.text(), Some("heard 2: thanks"), "{name}");
    }
}

/// The agent as another process builds it, its refunds counted with
/// these.
fn agent_sharing(refunds: &Arc<AtomicUsize>) -> (behest::Agent, Arc<AtomicUsize>) {
    (agent_counting(refunds.clone()), refunds.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_approval_sent_to_two_replicas_at_once_runs_the_tool_once() {
    for (name, one, two) in support::replicas("the_same_approval_sent_to_two").await {
        let (agent, refunds) = agent();
        let outcome = agent
            .session(one.clone(), id("s"))
            .run([Message::user("refund 7")])
            .await
            .unwrap();
        let (run_id, _) = paused(&outcome);
        let (twin, _) = agent_sharing(&refunds);
        let answers = [(agent, one), (twin, two)].map(|(agent, store)| {
            let run_id = run_id.clone();
            tokio::spawn(
                async move { agent.session(store, id("s")).approve(&run_id, "t0c0").await },
            )
        });
        let mut finished = 0;
        for answer in answers {
            match answer.await.unwrap() {
                Ok(Some(outcome)) => {
                    assert_eq!(outcome.text(), Some("done: refunded 7"), "{name}");
                    finished += 1;
                }
                Err(
                    SessionError::Answer(ControlError::AlreadyAnswered { .. })
                    | SessionError::Claimed { .. }
                    | SessionError::NoRun { .. },
                ) => {}
                other => panic!("{name}: {other:?}"),
            }
        }
        assert_eq!(finished, 1, "{name}");
        assert_eq!(refunds.load(Ordering::SeqCst), 1, "{name}");
    }
}

#[tokio::test]
async fn answers_to_one_run_given_on_two_replicas_are_all_kept() {
    for (name, one, two) in support::replicas("answers_to_one_run_given_on_two").await {
        let (agent, refunds) = agent();
        let outcome = agent
            .session(one.clone(), id("s"))
            .run([Message::user("refund 1 2 3")])
            .await
            .unwrap();
        let (run_id, calls) = paused(&outcome);
        assert_eq!(calls.len(), 3, "{name}");
        let first = agent.session(one, id("s"));
        let second = agent.session(two, id("s"));
        assert!(
            first.approve(&run_id, &calls[0]).await.unwrap().is_none(),
            "{name}"
        );
        assert!(
            second
                .deny(&run_id, &calls[1], "not this one")
                .await
                .unwrap()
                .is_none(),
            "{name}"
        );
        let error = second.approve(&run_id, &calls[0]).await.unwrap_err();
        assert!(
            matches!(
                error,
                SessionError::Answer(ControlError::AlreadyAnswered { .. })
            ),
            "{name}: {error}"
        );
        let error = second.approve(&run_id, "nope").await.unwrap_err();
        assert!(
            matches!(
                error,
                SessionError::Answer(ControlError::UnknownCall { .. })
            ),
            "{name}: {error}"
        );
        let outcome = second.approve(&run_id, &calls[2]).await.unwrap().unwrap();
        let text = outcome.text().unwrap();
        assert!(
            text.contains("refunded 1") && text.contains("refunded 3"),
            "{name}: {text}"
        );
        assert!(text.contains("not this one"), "{name}: {text}");
        assert_eq!(refunds.load(Ordering::SeqCst), 2, "{name}");
    }
}

#[tokio::test]
async fn an_external_call_is_answered_through_the_session() {
    for (name, store) in support::stores("an_external_call_is_answered").await {
        let (agent, _) = agent();
        let session = agent.session(store, id("s"));
        let outcome = session.run([Message::user("ask")]).await.unwrap();
        let (run_id, calls) = paused(&outcome);
        let error = session.approve(&run_id, &calls[0]).await.unwrap_err();
        assert!(
            matches!(
                error,
                SessionError::Answer(ControlError::WrongAnswer { .. })
            ),
            "{name}: {error}"
        );
        let outcome = session
            .resolve(&run_id, &calls[0], Ok(ToolOutput::text("42")))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(outcome.text(), Some("done: 42"), "{name}");
    }
}

#[tokio::test]
async fn a_run_whose_finishing_process_stopped_is_finished_once_its_lease_passes() {
    for (name, store) in support::stores("a_run_whose_finishing_process_stopped").await {
        let (agent, refunds) = agent();
        let session = agent.session(store.clone(), id("s"));
        let outcome = session.run([Message::user("refund 5")]).await.unwrap();
        let (run_id, _) = paused(&outcome);
        // A process approved and claimed the run, then stopped.
        let loaded = store.load(&id("s")).await.unwrap();
        let mut run: PausedRun = loaded.paused[0].clone();
        run.state.approve("t0c0").unwrap();
        run.claimed_until = Some(SystemTime::now() + Duration::from_millis(300));
        let commit = Commit {
            messages: None,
            run: Some(RunChange::Save(&run)),
        };
        store
            .commit(&id("s"), loaded.version, commit)
            .await
            .unwrap();
        let error = session.go_on(&run_id).await.unwrap_err();
        assert!(
            matches!(error, SessionError::Claimed { .. }),
            "{name}: {error}"
        );
        let error = session.approve(&run_id, "t0c0").await.unwrap_err();
        assert!(
            matches!(error, SessionError::Claimed { .. }),
            "{name}: {error}"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        let outcome = session.go_on(&run_id).await.unwrap().unwrap();
        assert_eq!(outcome.text(), Some("done: refunded 5"), "{name}");
        assert_eq!(refunds.load(Ordering::SeqCst), 1, "{name}");
    }
}

#[tokio::test]
async fn a_paused_run_can_be_discarded_and_the_session_goes_on() {
    for (name, store) in support::stores("a_paused_run_can_be_discarded").await {
        let (agent, refunds) = agent();
        let session = agent.session(store, id("s"));
        let (run_id, _) = paused(&session.run([Message::user("refund 9")]).await.unwrap());
        assert!(
            session.go_on(&run_id).await.unwrap().is_none(),
            "{name}: it still waits"
        );
        session.discard(&run_id).await.unwrap();
        assert!(matches!(
            session.discard(&run_id).await.unwrap_err(),
            SessionError::NoRun { .. }
        ));
        let outcome = session.run([Message::user("hi")]).await.unwrap();
        assert_eq!(outcome.text(), Some("heard 1: hi"), "{name}");
        assert_eq!(refunds.load(Ordering::SeqCst), 0, "{name}");
    }
}

#[tokio::test]
async fn two_runs_of_one_session_at_once_write_one_and_refuse_the_other() {
    for (name, store) in support::stores("two_runs_of_one_session_at_once").await {
        let (agent, _) = agent();
        let session = agent.session(store.clone(), id("s"));
        session.run([Message::user("first")]).await.unwrap();
        // Both read the session; one writes first.
        let loaded = store.load(&id("s")).await.unwrap();
        session.run([Message::user("second")]).await.unwrap();
        let late = Commit {
            messages: Some(behest::run::session::Change::Append(&loaded.messages)),
            run: None,
        };
        assert!(store
            .commit(&id("s"), loaded.version, late)
            .await
            .unwrap_err()
            .is_conflict());
        assert_eq!(session.history().await.unwrap().len(), 4, "{name}");
    }
}

#[tokio::test]
async fn a_compacted_run_leaves_the_session_compacted() {
    for (name, store) in support::stores("a_compacted_run_leaves").await {
        let (agent, _) = agent();
        let agent = agent.context(
            ContextPolicy::new(60)
                .compact_at(0.5)
                .compaction(Compaction::DropOldTurns { keep: 2 }),
        );
        let session = agent.session(store, id("s"));
        for at in 0..6 {
            session
                .run([Message::user(format!(
                    "message number {at} with some words in it"
                ))])
                .await
                .unwrap();
        }
        let history = session.history().await.unwrap();
        assert!(
            history.len() < 12,
            "{name}: {} messages kept",
            history.len()
        );
        // The user's first message stays, and the latest turn.
        assert!(
            matches!(&history[0], Message::User { text } if text.contains("number 0")),
            "{name}"
        );
        assert!(
            matches!(history.last(), Some(Message::Assistant(reply)) if reply.text.as_deref().is_some_and(|text| text.contains("number 5"))),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_failed_run_writes_nothing() {
    for (name, store) in support::stores("a_failed_run_writes_nothing").await {
        let (agent, _) = agent();
        agent
            .session(store.clone(), id("s"))
            .run([Message::user("hi")])
            .await
            .unwrap();
        // A model with no turn left to give fails the run.
        let failing = behest::Agent::new(
            behest::ScriptedModel::new(Vec::<behest::run::ScriptedTurn>::new()),
            behest::ToolRuntime::new(behest::ToolRegistry::new()),
        );
        let session = failing.session(store, id("s"));
        let outcome = session.run([Message::user("and now?")]).await.unwrap();
        assert!(
            matches!(outcome, RunOutcome::Failed { .. }),
            "{name}: {outcome:?}"
        );
        assert_eq!(session.history().await.unwrap().len(), 2, "{name}");
    }
}

#[tokio::test]
async fn bad_run_ids_are_refused_before_the_store_is_asked() {
    let (agent, _) = agent();
    let session = agent.session(Arc::new(behest::run::MemoryStore::new()), id("s"));
    for bad in ["", "a\u{1b}[31m", &"r".repeat(300)] {
        let error = session.approve(bad, "c1").await.unwrap_err();
        assert!(
            matches!(error, SessionError::BadId { what: "run", .. }),
            "{error}"
        );
    }
    let error = session.approve("r-1", "c1").await.unwrap_err();
    assert!(
        error.to_string().contains("has no paused run `r-1`"),
        "{error}"
    );
}

#[tokio::test]
async fn instructions_given_after_a_handoff_are_not_kept_either() {
    use behest::run::ScriptedTurn;
    use behest::{ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    for (name, store) in support::stores("instructions_given_after_a_handoff").await {
        let billing = behest::Agent::new(
            ScriptedModel::new([ScriptedTurn::text("one"), ScriptedTurn::text("two")]),
            ToolRuntime::new(ToolRegistry::new()),
        )
        .instructions("You handle billing.");
        let hand_on =
            || ScriptedTurn::tool_calls([ToolCall::new("h", "transfer_to_billing", "{}")]);
        let triage = behest::Agent::new(
            ScriptedModel::new([hand_on(), hand_on()]),
            ToolRuntime::new(ToolRegistry::new()),
        )
        .handoff("billing", "Billing questions.", billing);
        let session = triage.session(store.clone(), id("s"));
        assert_eq!(
            session.run([Message::user("a")]).await.unwrap().text(),
            Some("one"),
            "{name}"
        );
        assert_eq!(
            session.run([Message::user("b")]).await.unwrap().text(),
            Some("two"),
            "{name}"
        );
        let loaded = store.load(&id("s")).await.unwrap();
        assert!(
            !loaded
                .messages
                .iter()
                .any(|message| matches!(message, Message::System { .. })),
            "{name}: {:?}",
            loaded.messages
        );
        // Each run appended what it added: nothing was replaced.
        assert_eq!((loaded.messages.len(), loaded.version), (8, 2), "{name}");
    }
}

#[tokio::test]
async fn a_run_gone_on_from_its_waits_that_fails_keeps_what_it_did() {
    use behest::run::ScriptedTurn;
    use behest::{ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    for (name, store) in support::stores("a_run_gone_on_that_fails").await {
        let refunds = Arc::new(AtomicUsize::new(0));
        // The model calls the refund, then has nothing more to say: the
        // run fails once the refund has run.
        let agent = behest::Agent::new(
            ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
                "c1",
                "refund",
                r#"{"order": 3}"#,
            )])]),
            ToolRuntime::new(
                ToolRegistry::new()
                    .with(support::agent::Refund(refunds.clone()))
                    .unwrap(),
            ),
        )
        .require_approval("refund");
        // A lease as long as the clock allows.
        let session = agent.session(store.clone(), id("s")).lease(Duration::MAX);
        let (run_id, _) = paused(&session.run([Message::user("refund 3")]).await.unwrap());
        let outcome = session.approve(&run_id, "c1").await.unwrap().unwrap();
        assert!(
            matches!(outcome, RunOutcome::Failed { .. }),
            "{name}: {outcome:?}"
        );
        assert_eq!(refunds.load(Ordering::SeqCst), 1, "{name}");
        let loaded = store.load(&id("s")).await.unwrap();
        assert!(loaded.paused.is_empty(), "{name}");
        let refunded = loaded.messages.iter().any(|message| {
            matches!(message, Message::ToolResult(result) if result.content == "refunded 3")
        });
        assert!(refunded, "{name}: {:?}", loaded.messages);
    }
}

/// A refund that takes a while; counts its runs.
struct SlowRefund(Arc<AtomicUsize>);

impl behest::Tool for SlowRefund {
    fn name(&self) -> &str {
        "refund"
    }

    fn spec(&self) -> behest::ToolSpec {
        behest::ToolSpec::new(
            "refund",
            "Refund an order.",
            serde_json::json!({"type": "object"}),
        )
    }

    async fn execute(&self, _: serde_json::Value) -> behest::ToolResult<ToolOutput> {
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(ToolOutput::text("refunded"))
    }
}

/// An agent that calls the slow refund (with an approval), then says
/// "done"; and the count of its refunds.
fn slow_refunder() -> (behest::Agent, Arc<AtomicUsize>) {
    use behest::run::ScriptedTurn;
    use behest::{ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    let refunds = Arc::new(AtomicUsize::new(0));
    let agent = behest::Agent::new(
        ScriptedModel::new([
            ScriptedTurn::tool_calls([ToolCall::new("c1", "refund", "{}")]),
            ScriptedTurn::text("done"),
        ]),
        ToolRuntime::new(
            ToolRegistry::new()
                .with(SlowRefund(refunds.clone()))
                .unwrap(),
        ),
    )
    .require_approval("refund");
    (agent, refunds)
}

#[tokio::test]
async fn a_run_claimed_by_an_answer_whose_caller_stops_waiting_still_ends() {
    for (name, store) in support::stores("a_run_claimed_by_an_answer_whose_caller").await {
        let (agent, refunds) = slow_refunder();
        let session = agent.session(store.clone(), id("s"));
        let (run_id, _) = paused(&session.run([Message::user("refund")]).await.unwrap());
        // The request that approves is dropped while the refund runs.
        let approving =
            tokio::time::timeout(Duration::from_millis(50), session.approve(&run_id, "c1"));
        assert!(
            approving.await.is_err(),
            "{name}: the approval returned before the refund ran"
        );
        until_written(&store, name).await;
        assert_eq!(refunds.load(Ordering::SeqCst), 1, "{name}");
        let loaded = store.load(&id("s")).await.unwrap();
        assert!(loaded.paused.is_empty(), "{name}");
        assert!(
            matches!(loaded.messages.last(), Some(Message::Assistant(reply)) if reply.text.as_deref() == Some("done")),
            "{name}: {:?}",
            loaded.messages
        );
    }
}

/// Waits (up to 10 s) until the session `s` holds no paused run.
async fn until_written(store: &Arc<dyn behest::run::SessionStore>, name: &str) {
    for _ in 0..200 {
        if store.load(&id("s")).await.unwrap().paused.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{name}: the run was never finished");
}

#[tokio::test]
async fn a_claim_is_renewed_while_a_long_finish_goes_on() {
    for (name, one, two) in support::replicas("a_claim_is_renewed").await {
        let (agent, refunds) = slow_refunder();
        // A lease shorter than the refund takes.
        let lease = Duration::from_millis(120);
        let first = agent.session(one, id("s")).lease(lease);
        let (run_id, _) = paused(&first.run([Message::user("refund")]).await.unwrap());
        let finishing = {
            let first = first.clone();
            let run_id = run_id.clone();
            tokio::spawn(async move { first.approve(&run_id, "c1").await })
        };
        // Past the lease, while the refund runs: another replica finds the
        // run still held.
        tokio::time::sleep(Duration::from_millis(200)).await;
        let second = agent.session(two, id("s")).lease(lease);
        let error = second.go_on(&run_id).await.unwrap_err();
        assert!(
            matches!(error, SessionError::Claimed { .. }),
            "{name}: {error}"
        );
        let outcome = finishing.await.unwrap().unwrap().unwrap();
        assert_eq!(outcome.text(), Some("done"), "{name}");
        assert_eq!(refunds.load(Ordering::SeqCst), 1, "{name}");
    }
}

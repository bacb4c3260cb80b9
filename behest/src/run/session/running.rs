//! Running an agent in a session: the history loaded, the run, what it
//! added written back in one commit; a run that waits kept in the session
//! until whichever process gets its answers finishes it.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::id::check_id;
use super::{Change, Commit, Loaded, PausedRun, RunChange, SessionError, SessionId, SessionStore};
use crate::conversation::Message;
use crate::run::events::Handler;
use crate::run::handoff::Targets;
use crate::run::{
    Agent, ControlError, Envelope, RunControl, RunOutcome, RunState, RuntimeInvocation,
};
use crate::tool::ToolOutput;

/// How many times an answer is given again when another answer to the
/// same run was committed first.
const ANSWER_ATTEMPTS: usize = 32;

impl Agent {
    /// This agent's runs in the session `id` of `store` (see [`Session`]).
    pub fn session(&self, store: Arc<dyn SessionStore>, id: SessionId) -> Session {
        Session {
            agent: self.clone(),
            store,
            id,
            lease: Duration::from_secs(600),
            observers: Vec::new(),
        }
    }
}

/// An agent's runs in one session of a [`SessionStore`]: each
/// [`run`](Self::run) reads the conversation so far, runs the agent on it
/// and the new messages, and writes what the run added, in one commit.
///
/// A run that needs an approval or an external answer stops at its waits
/// ([`RuntimeInvocation::pause_at_waits`](crate::run::RuntimeInvocation::pause_at_waits))
/// and is kept in the session as its [`RunState`]; the session takes no
/// other run until it is answered. Answers ([`approve`](Self::approve),
/// [`deny`](Self::deny), [`resolve`](Self::resolve)) may come to any
/// process that shares the store, days later; the one that gives the last
/// answer claims the run and finishes it, so its tools run once.
///
/// What is written: a completed run's messages, after those it read, or,
/// when the agent's [`context`](Agent::context) policy compacted the
/// conversation (or a handoff's filter changed it), the conversation as
/// the run left it in place of the old one. The instructions a run puts
/// first are never kept. A new run that failed or was cancelled writes
/// nothing; one that went on from its waits and then failed keeps what
/// it did (its approved calls may have run).
///
/// ```
/// use std::sync::Arc;
/// use behest::run::{MemoryStore, ScriptedTurn, SessionId};
/// use behest::{Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), behest::run::SessionError> {
/// let agent = Agent::new(
///     ScriptedModel::new([ScriptedTurn::text("Hi Ada."), ScriptedTurn::text("You are Ada.")]),
///     ToolRuntime::new(ToolRegistry::new()),
/// );
/// let store = Arc::new(MemoryStore::new());
/// let session = agent.session(store, SessionId::new("user-1")?);
/// session.run([Message::user("I am Ada.")]).await?;
/// let outcome = session.run([Message::user("Who am I?")]).await?;
/// assert_eq!(outcome.text(), Some("You are Ada."));
/// assert_eq!(session.history().await?.len(), 4);
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Session {
    agent: Agent,
    store: Arc<dyn SessionStore>,
    id: SessionId,
    lease: Duration,
    observers: Vec<Handler>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("lease", &self.lease)
            .field("observers", &self.observers.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// How long a process that finishes a paused run holds it before
    /// another may take it over, the first one having stopped. Default 10
    /// minutes. The process renews its claim every third of the lease
    /// while the run goes on, so a long finish is not overtaken; a
    /// process that stopped loses its claim one lease after its last
    /// renewal.
    #[must_use]
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// Subscribes `handler` to every run this session starts or goes on
    /// with, as [`RuntimeInvocation::on`](crate::run::RuntimeInvocation::on)
    /// does for one run (beside the handlers subscribed before): a chat
    /// front end streams a run's events as it goes, a
    /// [`RunLog`](crate::run::RunLog) writes them. A run paused here and
    /// finished by another process is observed there, by that process's
    /// handlers.
    #[must_use]
    pub fn on(mut self, handler: impl Fn(Envelope, RunControl) + Send + Sync + 'static) -> Self {
        self.observers.push(Arc::new(handler));
        self
    }

    /// The invocation of a run with the session's observer subscribed,
    /// stopping at its waits.
    fn observed(&self, invocation: RuntimeInvocation) -> RuntimeInvocation {
        let invocation = invocation.pause_at_waits();
        for observer in &self.observers {
            let observer = observer.clone();
            invocation.on(move |envelope, control| observer(envelope, control));
        }
        invocation
    }

    /// The session's id.
    pub fn id(&self) -> &SessionId {
        &self.id
    }

    /// The conversation so far.
    pub async fn history(&self) -> Result<Vec<Message>, SessionError> {
        Ok(self.store.load(&self.id).await?.messages)
    }

    /// The runs paused in the session, with the calls they wait for.
    pub async fn paused(&self) -> Result<Vec<PausedRun>, SessionError> {
        Ok(self.store.load(&self.id).await?.paused)
    }

    /// Runs the agent on the conversation so far and `input`, and writes
    /// what the run added. A run that stops at its waits ends
    /// [`Paused`](RunOutcome::Paused) and is kept in the session.
    ///
    /// [`SessionError::Busy`] while a run of the session is paused;
    /// [`SessionError::Conflict`] when another run of the session wrote
    /// first: nothing of this run was written, and running `input` again
    /// runs it on the conversation as it is now.
    pub async fn run(
        &self,
        input: impl IntoIterator<Item = Message>,
    ) -> Result<RunOutcome, SessionError> {
        let loaded = self.store.load(&self.id).await?;
        if let Some(paused) = loaded.paused.first() {
            return Err(SessionError::Busy {
                session: self.id.to_string(),
                run_id: paused.run_id().to_owned(),
            });
        }
        let mut conversation = loaded.messages.clone();
        conversation.extend(input);
        let outcome = self.observed(self.agent.invoke(conversation)).await;
        self.settle(&loaded.messages, loaded.version, None, outcome)
            .await
    }

    /// Approves the call `call_id` of the paused run `run_id`. When it was
    /// the run's last wait, the run goes on here and its outcome is given;
    /// otherwise the approval is kept and `None` is given.
    pub async fn approve(
        &self,
        run_id: &str,
        call_id: &str,
    ) -> Result<Option<RunOutcome>, SessionError> {
        self.answer(run_id, |state| state.approve(call_id).map(|()| true))
            .await
    }

    /// Denies the call `call_id` of the paused run `run_id`; the model
    /// reads `reason`. Goes on as [`approve`](Self::approve) does.
    pub async fn deny(
        &self,
        run_id: &str,
        call_id: &str,
        reason: &str,
    ) -> Result<Option<RunOutcome>, SessionError> {
        self.answer(run_id, |state| state.deny(call_id, reason).map(|()| true))
            .await
    }

    /// Answers the external call `call_id` of the paused run `run_id`:
    /// its output, or an error the model reads. Goes on as
    /// [`approve`](Self::approve) does.
    pub async fn resolve(
        &self,
        run_id: &str,
        call_id: &str,
        result: Result<ToolOutput, String>,
    ) -> Result<Option<RunOutcome>, SessionError> {
        self.answer(run_id, |state| {
            state.resolve(call_id, result.clone()).map(|()| true)
        })
        .await
    }

    /// Finishes the paused run `run_id` if every wait has its answer and
    /// no process holds it: for a run whose finishing process stopped
    /// before it was done, once its [`lease`](Self::lease) has passed.
    /// `None` while it still waits.
    pub async fn go_on(&self, run_id: &str) -> Result<Option<RunOutcome>, SessionError> {
        self.answer(run_id, |_| Ok(false)).await
    }

    /// Forgets the paused run `run_id` without going on: the session
    /// takes runs again, and the run's calls never run.
    pub async fn discard(&self, run_id: &str) -> Result<(), SessionError> {
        check_id("run", run_id)?;
        let loaded = self.store.load(&self.id).await?;
        self.free_run(&loaded, run_id)?;
        let commit = Commit {
            messages: None,
            run: Some(RunChange::Remove(run_id)),
        };
        self.store
            .commit(&self.id, loaded.version, commit)
            .await
            .map(drop)
    }

    /// Gives an answer to a paused run (`give` says whether it changed
    /// the state), again while other answers to it are committed first;
    /// goes on once it has them all.
    async fn answer(
        &self,
        run_id: &str,
        give: impl Fn(&mut RunState) -> Result<bool, ControlError>,
    ) -> Result<Option<RunOutcome>, SessionError> {
        check_id("run", run_id)?;
        let mut attempts = 0;
        loop {
            let loaded = self.store.load(&self.id).await?;
            let mut run = self.free_run(&loaded, run_id)?.clone();
            let changed = give(&mut run.state)?;
            let result = if run.state.is_waiting() {
                if !changed {
                    return Ok(None);
                }
                let commit = Commit {
                    messages: None,
                    run: Some(RunChange::Save(&run)),
                };
                self.store
                    .commit(&self.id, loaded.version, commit)
                    .await
                    .map(|_| None)
            } else {
                self.finish_detached(loaded, run).await.map(Some)
            };
            match result {
                Err(error) if error.is_conflict() && attempts < ANSWER_ATTEMPTS => attempts += 1,
                done => return done,
            }
        }
    }

    /// The paused run `run_id`, if no process holds it now.
    fn free_run<'a>(
        &self,
        loaded: &'a Loaded,
        run_id: &str,
    ) -> Result<&'a PausedRun, SessionError> {
        let run = loaded
            .paused
            .iter()
            .find(|run| run.run_id() == run_id)
            .ok_or_else(|| SessionError::NoRun {
                session: self.id.to_string(),
                run_id: run_id.to_owned(),
            })?;
        match run.claimed_until {
            Some(until) if until > SystemTime::now() => Err(SessionError::Claimed {
                run_id: run_id.to_owned(),
            }),
            _ => Ok(run),
        }
    }

    /// [`finish`](Self::finish) on a task of its own: once claimed, the
    /// run goes on to its end and writes it even if the caller stops
    /// waiting (an HTTP request dropped, say), rather than staying claimed
    /// until its lease passes.
    async fn finish_detached(
        &self,
        loaded: Loaded,
        run: PausedRun,
    ) -> Result<RunOutcome, SessionError> {
        let session = self.clone();
        tokio::spawn(async move { session.finish(loaded, run).await })
            .await
            .map_err(|error| SessionError::Backend(Box::new(error)))?
    }

    /// Claims a run with every answer, goes on with it and writes its end.
    async fn finish(&self, loaded: Loaded, mut run: PausedRun) -> Result<RunOutcome, SessionError> {
        run.claimed_until = Some(self.lease_end());
        let claim = Commit {
            messages: None,
            run: Some(RunChange::Save(&run)),
        };
        let claimed = self.store.commit(&self.id, loaded.version, claim).await?;
        // The claim is renewed while the run goes on, so that a long finish
        // is not overtaken; the version it was last written at is the one
        // the end is written against.
        let version = Arc::new(tokio::sync::Mutex::new(claimed));
        let renewing = tokio::spawn(self.clone().renew(run.clone(), version.clone()));
        let run_id = run.run_id().to_owned();
        let outcome = self.observed(self.agent.resume(run.state)).await;
        // Held from here: no renewal is half-written when it stops.
        let version = version.lock().await;
        renewing.abort();
        self.settle(&loaded.messages, *version, Some(&run_id), outcome)
            .await
    }

    /// Renews the claim on `run` every third of the lease, until stopped
    /// or until someone else wrote the session (the end's write then says
    /// so).
    async fn renew(self, mut run: PausedRun, version: Arc<tokio::sync::Mutex<u64>>) {
        let every = (self.lease / 3).max(Duration::from_millis(10));
        loop {
            tokio::time::sleep(every).await;
            let mut version = version.lock().await;
            run.claimed_until = Some(self.lease_end());
            let renewal = Commit {
                messages: None,
                run: Some(RunChange::Save(&run)),
            };
            match self.store.commit(&self.id, *version, renewal).await {
                Ok(renewed) => *version = renewed,
                Err(_) => return,
            }
        }
    }

    /// When a claim made now ends; a lease too long for the clock holds
    /// for as long as it can.
    fn lease_end(&self) -> SystemTime {
        SystemTime::now()
            .checked_add(self.lease)
            .unwrap_or(SystemTime::UNIX_EPOCH + Duration::from_secs(u64::from(u32::MAX) * 64))
    }

    /// Writes how a run ended: a completed run's messages, a paused run's
    /// state; the run it went on from, if any, is forgotten.
    async fn settle(
        &self,
        history: &[Message],
        expected: u64,
        resumed: Option<&str>,
        outcome: RunOutcome,
    ) -> Result<RunOutcome, SessionError> {
        let forget = resumed.map(RunChange::Remove);
        let paused;
        let commit = match &outcome {
            RunOutcome::Completed { transcript, .. } => Commit {
                messages: Some(change(
                    history,
                    self.without_instructions(history, transcript),
                )),
                run: forget,
            },
            RunOutcome::Paused { state } => {
                paused = PausedRun {
                    state: (**state).clone(),
                    claimed_until: None,
                };
                Commit {
                    messages: None,
                    run: Some(RunChange::Save(&paused)),
                }
            }
            // A run that went on from its waits and then failed or was
            // cancelled: its approved calls may have run, so what it did
            // is kept (and the paused run forgotten), not lost.
            RunOutcome::Failed { transcript, .. } | RunOutcome::Cancelled { transcript, .. }
                if forget.is_some() =>
            {
                Commit {
                    messages: Some(change(
                        history,
                        self.without_instructions(history, transcript),
                    )),
                    run: forget,
                }
            }
            _ => return Ok(outcome),
        };
        self.store.commit(&self.id, expected, commit).await?;
        Ok(outcome)
    }
}

impl Session {
    /// `transcript` without the instructions a run puts first (the
    /// agent's, or, after a handoff, those of the agent that holds it):
    /// each run puts them there again, so a session never keeps them, and
    /// a change of instructions holds from the next run. A system message
    /// that `history` begins with is the session's own, and stays.
    fn without_instructions<'a>(
        &self,
        history: &[Message],
        transcript: &'a [Message],
    ) -> &'a [Message] {
        let options = &self.agent.options;
        let instructed =
            options.instructions.is_some() || options.features.get::<Targets>().is_some();
        match transcript.first() {
            Some(first @ Message::System { .. })
                if instructed && history.first() != Some(first) =>
            {
                &transcript[1..]
            }
            _ => transcript,
        }
    }
}

/// What a run's `transcript` makes of a session that held `history`: the
/// messages after it, or, when the run compacted it, the whole transcript.
fn change<'a>(history: &[Message], transcript: &'a [Message]) -> Change<'a> {
    if transcript.starts_with(history) {
        Change::Append(&transcript[history.len()..])
    } else {
        Change::Replace(transcript)
    }
}

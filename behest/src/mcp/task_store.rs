//! The tasks of one server (and every clone of it): each a call running
//! in its own task, its status, the questions it waits on and, once it
//! ends, its result, kept until its time to live runs out.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use rmcp::model::{
    CreateTaskResult, DetailedTask, GetTaskResult, InputRequest, InputResponses, Task, TaskPayload,
    TaskStatus,
};
use rmcp::ErrorData;
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::ask::McpAskError;
use super::rounds::{finished, InFlight, Next, Signal};
use super::task_backend::{now, McpTaskEnd, McpTaskStatus, McpTaskView};
use super::tasks::McpTasks;
use crate::runtime::ToolCallResult;
use crate::sync::lock;

/// A question of a task's tool, waiting for `tasks/update`.
struct Pending {
    request: InputRequest,
    answer: oneshot::Sender<Result<Value, McpAskError>>,
}

struct Entry {
    /// Who started it: only they may see or change it.
    caller: Option<String>,
    created_at: String,
    updated_at: String,
    created: Instant,
    pending: BTreeMap<String, Pending>,
    ended: Option<McpTaskEnd>,
    /// Cancels the tool.
    token: CancellationToken,
}

impl Entry {
    fn status(&self) -> TaskStatus {
        match (&self.ended, self.pending.is_empty()) {
            (Some(McpTaskEnd::Completed(_)), _) => TaskStatus::Completed,
            (Some(McpTaskEnd::Failed(_)), _) => TaskStatus::Failed,
            (Some(McpTaskEnd::Cancelled), _) => TaskStatus::Cancelled,
            (None, false) => TaskStatus::InputRequired,
            (None, true) => TaskStatus::Working,
        }
    }

    fn touch(&mut self) {
        self.updated_at = now();
    }
}

/// The tasks of a server.
#[derive(Default)]
pub(crate) struct TaskStore {
    tasks: Mutex<HashMap<String, Entry>>,
    /// Keys of questions, unique over the server's life.
    asked: std::sync::atomic::AtomicU64,
    /// Whether the sweeper of expired tasks runs.
    sweeping: std::sync::atomic::AtomicBool,
}

/// How often the sweeper drops the tasks whose time to live ran out (a
/// task past it is unknown to `tasks/*` at once, swept or not).
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// A store dropped (its server and every clone gone) cancels the tools it
/// still runs.
impl Drop for TaskStore {
    fn drop(&mut self) {
        let tasks = self
            .tasks
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for entry in tasks.values() {
            entry.token.cancel();
        }
    }
}

/// The error a client gets for a task id it may not use: unknown, expired
/// or someone else's look the same.
pub(crate) fn unknown(id: &str) -> ErrorData {
    ErrorData::invalid_params(
        format!("no task `{id}`: it never was, or its time to live ran out"),
        None,
    )
}

impl TaskStore {
    /// Makes `call` (a call of `tool` by `caller`) a task: kept before this
    /// returns, so a `tasks/get` right after the answer finds it.
    pub(crate) fn start(
        self: &Arc<Self>,
        call: InFlight,
        tool: &str,
        caller: Option<String>,
        config: &McpTasks,
    ) -> Result<CreateTaskResult, ErrorData> {
        let id = super::rounds::fresh_handle();
        let stamp = now();
        let token = call.token.clone();
        {
            let mut tasks = lock(&self.tasks);
            let ttl = config.ttl_of();
            drop_expired(&mut tasks, ttl);
            // A caller past its share makes room among its own tasks, so
            // that one caller cannot keep the others out.
            let theirs = |entry: &Entry| entry.caller == caller;
            let mine = tasks.values().filter(|entry| theirs(entry)).count();
            let refusal = if mine >= config.most_per_caller()
                && !drop_oldest_ended(&mut tasks, theirs)
            {
                Some(format!(
                    "this caller has {mine} tasks, the most one caller may, and none has ended; cancel one or try again later"
                ))
            } else if tasks.len() >= config.most() && !drop_oldest_ended(&mut tasks, |_| true) {
                Some(format!(
                    "the server keeps {} tasks, the most it may, and none has ended; try again later",
                    config.most()
                ))
            } else {
                None
            };
            if let Some(refusal) = refusal {
                token.cancel();
                return Err(ErrorData::internal_error(refusal, None));
            }
            tasks.insert(
                id.clone(),
                Entry {
                    caller,
                    created_at: stamp.clone(),
                    updated_at: stamp.clone(),
                    created: Instant::now(),
                    pending: BTreeMap::new(),
                    ended: None,
                    token,
                },
            );
        }
        let store = Arc::downgrade(self);
        tokio::spawn(drive(store.clone(), id.clone(), call, tool.to_owned()));
        let ttl = config.ttl_of();
        self.sweep(ttl);
        let seed = Task::new(id, TaskStatus::Working, stamp.clone(), stamp)
            .with_ttl_ms(millis(ttl))
            .with_poll_interval_ms(millis(config.poll_interval_of()));
        Ok(CreateTaskResult::new(seed))
    }

    /// `tasks/get`: the task's status and what goes with it.
    pub(crate) fn get(
        &self,
        id: &str,
        caller: Option<&str>,
        config: &McpTasks,
    ) -> Result<GetTaskResult, ErrorData> {
        let mut tasks = lock(&self.tasks);
        let entry = callers(&mut tasks, id, caller, config)?;
        // A question its tool stopped waiting for (it gave up, or asked
        // again) is no longer asked.
        let before = entry.pending.len();
        entry
            .pending
            .retain(|_, pending| !pending.answer.is_closed());
        if entry.pending.len() != before {
            entry.touch();
        }
        let task = Task::new(
            id,
            entry.status(),
            entry.created_at.clone(),
            entry.updated_at.clone(),
        )
        .with_ttl_ms(millis(config.ttl_of()))
        .with_poll_interval_ms(millis(config.poll_interval_of()));
        let payload = match &entry.ended {
            Some(McpTaskEnd::Completed(result)) => TaskPayload::Completed {
                result: result.clone(),
            },
            Some(McpTaskEnd::Failed(error)) => TaskPayload::Failed {
                error: error.clone(),
            },
            Some(McpTaskEnd::Cancelled) => TaskPayload::Cancelled,
            None if entry.pending.is_empty() => TaskPayload::Working,
            None => TaskPayload::InputRequired {
                input_requests: entry
                    .pending
                    .iter()
                    .map(|(key, pending)| (key.clone(), pending.request.clone()))
                    .collect(),
            },
        };
        Ok(GetTaskResult::new(DetailedTask::new(task, payload)))
    }

    /// `tasks/update`: the answers to questions the task waits on. Keys it
    /// does not wait on are passed over, as the extension asks.
    pub(crate) fn update(
        &self,
        id: &str,
        caller: Option<&str>,
        mut answers: InputResponses,
        config: &McpTasks,
    ) -> Result<(), ErrorData> {
        let mut tasks = lock(&self.tasks);
        let entry = callers(&mut tasks, id, caller, config)?;
        let answered: Vec<String> = entry
            .pending
            .keys()
            .filter(|key| answers.contains_key(*key))
            .cloned()
            .collect();
        if answered.is_empty() {
            return Ok(());
        }
        for key in answered {
            if let (Some(pending), Some(answer)) =
                (entry.pending.remove(&key), answers.remove(&key))
            {
                // A tool that stopped waiting needs no answer.
                let _ = pending.answer.send(Ok(answer));
            }
        }
        entry.touch();
        Ok(())
    }

    /// `tasks/cancel`: the task is cancelled now (the tool gets its grace
    /// and its result is not kept); a task that ended stays as it ended.
    pub(crate) fn cancel(
        &self,
        id: &str,
        caller: Option<&str>,
        config: &McpTasks,
    ) -> Result<(), ErrorData> {
        let mut tasks = lock(&self.tasks);
        let entry = callers(&mut tasks, id, caller, config)?;
        if entry.ended.is_none() {
            entry.ended = Some(McpTaskEnd::Cancelled);
            // Its questions go with it: the tool's waits end with an error.
            entry.pending.clear();
            entry.token.cancel();
            entry.touch();
        }
        Ok(())
    }

    /// Starts the sweeper, once: every [`SWEEP_EVERY`] it drops the tasks
    /// whose time to live ran out, cancelling the tools that still run,
    /// until the store is gone.
    fn sweep(self: &Arc<Self>, ttl: Duration) {
        if self
            .sweeping
            .swap(true, std::sync::atomic::Ordering::SeqCst)
        {
            return;
        }
        let store = Arc::downgrade(self);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SWEEP_EVERY.min(ttl)).await;
                let Some(store) = store.upgrade() else {
                    return;
                };
                let mut tasks = lock(&store.tasks);
                drop_expired(&mut tasks, ttl);
            }
        });
    }

    /// Keeps a question of task `id`'s tool; false when the task is gone
    /// or ended (the question then goes unanswered).
    fn wait_on(&self, id: &str, pending: Pending) -> bool {
        let key = format!(
            "input-{}",
            self.asked
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let mut tasks = lock(&self.tasks);
        match tasks.get_mut(id) {
            Some(entry) if entry.ended.is_none() => {
                entry.pending.insert(key, pending);
                entry.touch();
                true
            }
            _ => false,
        }
    }

    /// Keeps how task `id` ended, unless it was cancelled first.
    fn settle(&self, id: &str, tool: &str, result: Result<ToolCallResult, String>) {
        let ended = McpTaskEnd::of(&finished(tool, result));
        let mut tasks = lock(&self.tasks);
        if let Some(entry) = tasks.get_mut(id) {
            if entry.ended.is_none() {
                entry.ended = Some(ended);
                entry.pending.clear();
                entry.touch();
            }
        }
    }

    /// How many tasks are kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        lock(&self.tasks).len()
    }
}

/// Runs task `id`'s call to its end: its questions kept for `tasks/update`,
/// its result for `tasks/get`.
async fn drive(store: Weak<TaskStore>, id: String, mut call: InFlight, tool: String) {
    loop {
        match call.next().await {
            Next::Finished(result) => {
                if let Some(store) = store.upgrade() {
                    store.settle(&id, &tool, result);
                }
                return;
            }
            Next::Signal(Signal::Ask(ask)) => {
                let ask = *ask;
                let pending = Pending {
                    request: ask.request,
                    answer: ask.answer,
                };
                let kept = store
                    .upgrade()
                    .is_some_and(|store| store.wait_on(&id, pending));
                if !kept {
                    // Gone: nobody will answer, and nobody will read the
                    // result.
                    call.token.cancel();
                }
            }
            // It is a task already.
            Next::Signal(Signal::ContinueAsTask(answer)) => {
                let _ = answer.send(true);
            }
        }
    }
}

/// A backend's task as the protocol's `Task`, with `config`'s time to
/// live and poll interval.
pub(crate) fn wire_task(view: &McpTaskView, config: &McpTasks) -> Task {
    let status = match view.status {
        McpTaskStatus::Working => TaskStatus::Working,
        McpTaskStatus::Completed => TaskStatus::Completed,
        McpTaskStatus::Failed => TaskStatus::Failed,
        McpTaskStatus::Cancelled => TaskStatus::Cancelled,
    };
    Task::new(
        view.id.clone(),
        status,
        view.created_at.clone(),
        view.updated_at.clone(),
    )
    .with_ttl_ms(millis(config.ttl_of()))
    .with_poll_interval_ms(millis(config.poll_interval_of()))
}

/// A backend's task as `tasks/get` answers it.
pub(crate) fn wire_detailed(view: &McpTaskView, config: &McpTasks) -> GetTaskResult {
    let payload = match (view.status, &view.result, &view.error) {
        (McpTaskStatus::Completed, Some(result), _) => TaskPayload::Completed {
            result: result.clone(),
        },
        (McpTaskStatus::Failed | McpTaskStatus::Completed, _, error) => TaskPayload::Failed {
            error: error.clone().unwrap_or_else(|| {
                super::task_backend::error_object(-32603, "the task ended without its result")
            }),
        },
        (McpTaskStatus::Cancelled, _, _) => TaskPayload::Cancelled,
        _ => TaskPayload::Working,
    };
    GetTaskResult::new(DetailedTask::new(wire_task(view, config), payload))
}

/// Drops, among the tasks `which` picks, the oldest (by creation) that
/// has ended; false when none of them has.
fn drop_oldest_ended(tasks: &mut HashMap<String, Entry>, which: impl Fn(&Entry) -> bool) -> bool {
    let oldest = tasks
        .iter()
        .filter(|(_, entry)| entry.ended.is_some() && which(entry))
        .min_by_key(|(_, entry)| entry.created)
        .map(|(id, _)| id.clone());
    oldest.is_some_and(|id| tasks.remove(&id).is_some())
}

/// Task `id` of `caller`, alive: one unknown, expired or someone else's
/// is the same error.
fn callers<'a>(
    tasks: &'a mut HashMap<String, Entry>,
    id: &str,
    caller: Option<&str>,
    config: &McpTasks,
) -> Result<&'a mut Entry, ErrorData> {
    tasks
        .get_mut(id)
        .filter(|entry| entry.caller.as_deref() == caller && !expired(entry, config.ttl_of()))
        .ok_or_else(|| unknown(id))
}

/// Drops the tasks whose time to live ran out, cancelling the tools that
/// still run.
fn drop_expired(tasks: &mut HashMap<String, Entry>, ttl: Duration) {
    tasks.retain(|_, entry| {
        let keep = !expired(entry, ttl);
        if !keep {
            entry.token.cancel();
        }
        keep
    });
}

/// Whether `entry`'s time to live ran out.
fn expired(entry: &Entry, ttl: Duration) -> bool {
    entry.created.elapsed() >= ttl
}

/// Whole milliseconds, at least one.
fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis())
        .unwrap_or(u64::MAX)
        .max(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::log::ClientLog;
    use crate::mcp::rounds::question;
    use crate::mcp::tasks::TaskSupport;
    use crate::tool::ToolError;
    use crate::ToolOutput;

    fn said(text: &str) -> ToolCallResult {
        ToolCallResult {
            call_id: "c0".to_owned(),
            tool_name: "job".to_owned(),
            outcome: Ok(ToolOutput::text(text)),
        }
    }

    fn config() -> McpTasks {
        McpTasks::new().tool("job", TaskSupport::Optional)
    }

    /// A call that asks `questions` questions at once and says the names
    /// given, or "cancelled" once its token fires (then `cancelled` hears).
    fn asking(questions: usize, cancelled: Option<oneshot::Sender<()>>) -> InFlight {
        let token = CancellationToken::new();
        let seen = token.clone();
        InFlight::start(
            |asker| {
                Box::pin(async move {
                    let asks = (0..questions).map(|_| asker.ask(question()));
                    tokio::select! {
                        biased;
                        () = seen.cancelled() => {
                            if let Some(cancelled) = cancelled {
                                let _ = cancelled.send(());
                            }
                            said("cancelled")
                        }
                        answers = futures::future::join_all(asks) => {
                            let names: Vec<String> = answers
                                .into_iter()
                                .map(|answer| match answer {
                                    Ok(value) => value["content"]["name"].as_str().unwrap_or("?").to_owned(),
                                    Err(error) => error.to_string(),
                                })
                                .collect();
                            said(&names.join(" and "))
                        }
                    }
                })
            },
            token,
            Arc::new(ClientLog::default()),
        )
    }

    /// A call that gives `result` after `after`.
    fn giving(
        after: Duration,
        result: impl FnOnce() -> ToolCallResult + Send + 'static,
    ) -> InFlight {
        InFlight::start(
            move |_| {
                Box::pin(async move {
                    tokio::time::sleep(after).await;
                    result()
                })
            },
            CancellationToken::new(),
            Arc::new(ClientLog::default()),
        )
    }

    async fn settled(store: &TaskStore, id: &str, caller: Option<&str>) -> GetTaskResult {
        for _ in 0..200 {
            let got = store.get(id, caller, &config()).unwrap();
            if got.task.status().is_terminal() {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("task {id} did not end");
    }

    async fn input_required(store: &TaskStore, id: &str, keys: usize) -> Vec<String> {
        for _ in 0..200 {
            let got = store.get(id, None, &config()).unwrap();
            if let TaskPayload::InputRequired { input_requests } = got.task.payload {
                if input_requests.len() == keys {
                    return input_requests.keys().cloned().collect();
                }
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("task {id} did not ask {keys} questions");
    }

    fn accept(name: &str) -> Value {
        serde_json::json!({"action": "accept", "content": {"name": name}})
    }

    /// A task is kept before its creation is answered, works, and ends
    /// with the tool's result inlined; only its own caller sees it.
    #[tokio::test]
    async fn a_task_is_seen_at_once_by_its_caller_only_and_ends_with_its_result() {
        let store = Arc::new(TaskStore::default());
        let call = giving(Duration::from_millis(50), || said("done"));
        let created = store
            .start(call, "job", Some("ada".into()), &config())
            .unwrap();
        let id = created.task.task_id.clone();
        assert_eq!(created.task.status, TaskStatus::Working);
        assert_eq!(created.task.ttl_ms, Some(3_600_000));
        let now = store.get(&id, Some("ada"), &config()).unwrap();
        assert_eq!(now.task.status(), TaskStatus::Working);
        for other in [Some("bob"), None] {
            let refused = store.get(&id, other, &config()).unwrap_err();
            assert_eq!(refused.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert!(store.cancel(&id, other, &config()).is_err());
        }
        let ended = settled(&store, &id, Some("ada")).await;
        let TaskPayload::Completed { result } = ended.task.payload else {
            panic!("completed");
        };
        assert_eq!(result["content"][0]["text"], "done");
        assert_eq!(result["isError"], false);
    }

    /// Questions asked together wait in the task; an answer to some keeps
    /// the rest waiting, keys it does not wait on are passed over, and the
    /// last answer lets the tool finish.
    #[tokio::test]
    async fn questions_wait_in_the_task_until_each_is_answered() {
        let store = Arc::new(TaskStore::default());
        let id = store
            .start(asking(2, None), "job", None, &config())
            .unwrap()
            .task
            .task_id;
        let keys = input_required(&store, &id, 2).await;
        let first = InputResponses::from([
            (keys[0].clone(), accept("Ada")),
            ("no-such-key".to_owned(), accept("nobody")),
        ]);
        store.update(&id, None, first, &config()).unwrap();
        let left = input_required(&store, &id, 1).await;
        assert_eq!(left, [keys[1].clone()]);
        store
            .update(
                &id,
                None,
                InputResponses::from([(keys[1].clone(), accept("Bob"))]),
                &config(),
            )
            .unwrap();
        let TaskPayload::Completed { result } = settled(&store, &id, None).await.task.payload
        else {
            panic!("completed");
        };
        assert_eq!(result["content"][0]["text"], "Ada and Bob");
    }

    /// Cancelling cancels the tool and ends the task as cancelled, at
    /// once and for good: a second cancel changes nothing, and the tool's
    /// own last word is not kept.
    #[tokio::test]
    async fn a_cancelled_task_stays_cancelled_and_its_tool_hears() {
        let store = Arc::new(TaskStore::default());
        let (cancelled, heard) = oneshot::channel();
        let id = store
            .start(asking(1, Some(cancelled)), "job", None, &config())
            .unwrap()
            .task
            .task_id;
        input_required(&store, &id, 1).await;
        store.cancel(&id, None, &config()).unwrap();
        assert_eq!(
            store.get(&id, None, &config()).unwrap().task.status(),
            TaskStatus::Cancelled
        );
        heard.await.unwrap();
        store.cancel(&id, None, &config()).unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        let after = store.get(&id, None, &config()).unwrap();
        assert!(matches!(after.task.payload, TaskPayload::Cancelled));
    }

    /// A tool that panics fails its task with a JSON-RPC error, not a
    /// result.
    #[tokio::test]
    async fn a_panic_fails_the_task_with_an_error() {
        let store = Arc::new(TaskStore::default());
        let call = giving(Duration::ZERO, || ToolCallResult {
            call_id: "c0".to_owned(),
            tool_name: "job".to_owned(),
            outcome: Err(ToolError::Panicked {
                payload: "boom".to_owned(),
                reveal: true,
            }),
        });
        let id = store
            .start(call, "job", None, &config())
            .unwrap()
            .task
            .task_id;
        let TaskPayload::Failed { error } = settled(&store, &id, None).await.task.payload else {
            panic!("failed");
        };
        assert_eq!(error["code"], -32603);
        assert!(
            error["message"].as_str().unwrap().contains("boom"),
            "{error:?}"
        );
    }

    /// Past the most tasks, the oldest that ended makes room; when none
    /// has ended, a new task is refused with an error that says why, and
    /// its tool is cancelled.
    #[tokio::test]
    async fn past_the_most_tasks_an_ended_one_makes_room_or_the_new_one_is_refused() {
        let store = Arc::new(TaskStore::default());
        let config = config().most_tasks(2);
        let quick = store
            .start(
                giving(Duration::ZERO, || said("quick")),
                "job",
                None,
                &config,
            )
            .unwrap()
            .task
            .task_id;
        settled(&store, &quick, None).await;
        store.start(asking(1, None), "job", None, &config).unwrap();
        store.start(asking(1, None), "job", None, &config).unwrap();
        assert!(
            store.get(&quick, None, &config).is_err(),
            "the ended task made room"
        );
        let (cancelled, heard) = oneshot::channel();
        let refused = store
            .start(asking(1, Some(cancelled)), "job", None, &config)
            .unwrap_err();
        assert!(
            refused.message.contains("none has ended"),
            "{}",
            refused.message
        );
        heard.await.unwrap();
        assert_eq!(store.len(), 2);
    }

    /// One caller past its share makes room among its own ended tasks, or
    /// is refused, while another caller still starts tasks.
    #[tokio::test]
    async fn one_caller_cannot_keep_the_others_out() {
        let store = Arc::new(TaskStore::default());
        let config = config().most_tasks_per_caller(2);
        let ada = || Some("ada".to_owned());
        let ended = store
            .start(
                giving(Duration::ZERO, || said("quick")),
                "job",
                ada(),
                &config,
            )
            .unwrap()
            .task
            .task_id;
        settled(&store, &ended, Some("ada")).await;
        store.start(asking(1, None), "job", ada(), &config).unwrap();
        store.start(asking(1, None), "job", ada(), &config).unwrap();
        assert!(
            store.get(&ended, Some("ada"), &config).is_err(),
            "made room"
        );
        let refused = store
            .start(asking(1, None), "job", ada(), &config)
            .unwrap_err();
        assert!(
            refused.message.contains("most one caller may"),
            "{}",
            refused.message
        );
        store
            .start(asking(1, None), "job", Some("bob".to_owned()), &config)
            .unwrap();
    }

    /// A question its tool stopped waiting for is no longer asked.
    #[tokio::test]
    async fn a_question_the_tool_gave_up_on_is_no_longer_asked() {
        let store = Arc::new(TaskStore::default());
        let token = CancellationToken::new();
        let call = InFlight::start(
            |asker| {
                Box::pin(async move {
                    let gave_up =
                        tokio::time::timeout(Duration::from_millis(50), asker.ask(question()))
                            .await;
                    assert!(gave_up.is_err());
                    tokio::time::sleep(Duration::from_secs(600)).await;
                    said("never")
                })
            },
            token,
            Arc::new(ClientLog::default()),
        );
        let id = store
            .start(call, "job", None, &config())
            .unwrap()
            .task
            .task_id;
        input_required(&store, &id, 1).await;
        for _ in 0..200 {
            let got = store.get(&id, None, &config()).unwrap();
            if got.task.status() == TaskStatus::Working {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("the stale question is still asked");
    }

    /// A task is dropped when its time to live runs out, and a tool still
    /// running is cancelled.
    #[tokio::test(start_paused = true)]
    async fn a_task_past_its_time_to_live_is_gone_and_its_tool_cancelled() {
        let store = Arc::new(TaskStore::default());
        let config = config().ttl(Duration::from_secs(5));
        let (cancelled, heard) = oneshot::channel();
        let id = store
            .start(asking(1, Some(cancelled)), "job", None, &config)
            .unwrap()
            .task
            .task_id;
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(store.get(&id, None, &config).is_ok());
        tokio::time::sleep(Duration::from_secs(2)).await;
        heard.await.unwrap();
        let gone = store.get(&id, None, &config).unwrap_err();
        assert!(gone.message.contains("time to live"), "{}", gone.message);
        assert_eq!(store.len(), 0);
    }
}

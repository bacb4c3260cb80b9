//! A run's events written to a file as they come, one JSON object per
//! line: the record a viewer reads, while the run goes on or later.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use super::control::RunControl;
use super::events::Envelope;
use super::outcome::RunOutcome;

/// Writes every event of the runs it is subscribed to as a line of JSON,
/// flushed as it comes (a viewer can follow the file while the run goes
/// on), and the runs' outcomes once they end:
///
/// ```text
/// {"run_id":"run_…","sequence":1,"at_ms":1765000000000,"event":{"type":"state","value":"awaiting_model"}}
/// {"run_id":"run_…","outcome":"completed","text":"…","usage":{…},"at_ms":…}
/// ```
///
/// ```
/// use behest::run::{RunLog, ScriptedTurn};
/// use behest::{Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let path = std::env::temp_dir().join(format!("behest-doc-{}.jsonl", std::process::id()));
/// let log = RunLog::create(&path)?;
/// let agent = Agent::new(
///     ScriptedModel::new([ScriptedTurn::text("Hello.")]),
///     ToolRuntime::new(ToolRegistry::new()),
/// );
/// let run = agent.invoke([Message::user("Hi")]);
/// run.on(log.handler());
/// let run_id = run.run_id();
/// let outcome = run.await;
/// log.outcome(&run_id, &outcome)?;
/// let text = std::fs::read_to_string(&path)?;
/// assert!(text.lines().count() > 3);
/// # std::fs::remove_file(&path)
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct RunLog {
    path: PathBuf,
    file: Arc<Mutex<BufWriter<File>>>,
}

impl RunLog {
    /// A log in a new file at `path` (an old one is replaced).
    pub fn create(path: impl AsRef<Path>) -> std::io::Result<Self> {
        Self::open(path.as_ref(), File::create(path.as_ref())?)
    }

    /// A log that adds to the file at `path`: several runs in one file.
    pub fn append(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path.as_ref())?;
        Self::open(path.as_ref(), file)
    }

    fn open(path: &Path, file: File) -> std::io::Result<Self> {
        Ok(Self {
            path: path.to_owned(),
            file: Arc::new(Mutex::new(BufWriter::new(file))),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handler for [`RuntimeInvocation::on`](super::RuntimeInvocation::on)
    /// or [`Session::on`](super::Session::on) that writes each event. A
    /// write that fails is logged (`tracing`), and the run goes on.
    pub fn handler(&self) -> impl Fn(Envelope, RunControl) + Send + Sync + 'static {
        let log = self.clone();
        move |envelope, _| {
            if let Err(error) = log.record(&envelope) {
                tracing::warn!(path = %log.path.display(), %error, "the run log could not be written");
            }
        }
    }

    /// Writes one event.
    pub fn record(&self, envelope: &Envelope) -> std::io::Result<()> {
        self.write(json!({
            "run_id": &*envelope.run_id,
            "sequence": envelope.sequence,
            "at_ms": millis(envelope.timestamp),
            "event": envelope.kind,
        }))
    }

    /// Writes how the run `run_id` ended: its outcome, its answer or
    /// error, and what it spent. A paused run's state is not written (it
    /// is the caller's to keep), only the paths of the calls it waits for.
    pub fn outcome(&self, run_id: &str, outcome: &RunOutcome) -> std::io::Result<()> {
        let (name, detail) = match outcome {
            RunOutcome::Completed { text, .. } => ("completed", json!({ "text": text })),
            RunOutcome::Failed { error, .. } => ("failed", json!({ "error": error.to_string() })),
            RunOutcome::Cancelled { .. } => ("cancelled", json!({})),
            RunOutcome::Paused { state } => (
                "paused",
                json!({ "waiting": state.waits_by_path().iter().map(|(path, _)| path).collect::<Vec<_>>() }),
            ),
        };
        let mut line = json!({
            "run_id": run_id,
            "outcome": name,
            "usage": outcome.usage(),
            "at_ms": millis(SystemTime::now()),
        });
        if let (Value::Object(line), Value::Object(detail)) = (&mut line, detail) {
            line.extend(detail);
        }
        self.write(line)
    }

    fn write(&self, line: Value) -> std::io::Result<()> {
        let mut file = crate::sync::lock(&self.file);
        serde_json::to_writer(&mut *file, &line)?;
        file.write_all(b"\n")?;
        file.flush()
    }
}

fn millis(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH).map_or(0, |since| {
        u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
    })
}

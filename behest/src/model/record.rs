//! Record a model once, replay it offline: [`Recorder`] wraps any model and
//! keeps each turn (what the model was given and what it answered);
//! [`ScriptedModel::from_recording`] plays the turns back in a test, with
//! no network and no key.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use super::contract::{Model, ModelError, ModelRequest};
use super::scripted::{ScriptedModel, ScriptedTurn};
use crate::conversation::{AssistantMessage, Message};
use crate::tool::ToolSpec;

/// One recorded turn: the conversation the model was given, the names of
/// the tools it was offered, and its answer. No key or header is kept:
/// the recording is made above the HTTP layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedTurn {
    /// The conversation the model was given.
    pub conversation: Vec<Message>,
    /// The names of the tools it was offered, in order.
    pub tools: Vec<String>,
    /// Its answer.
    pub reply: AssistantMessage,
}

/// The turns of one or more runs, in order: a JSON file to commit next to
/// the tests that replay it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Recording {
    /// The turns.
    pub turns: Vec<RecordedTurn>,
    /// Whether the recorded model answered typed runs in the answer's
    /// shape ([`Model::supports_structured_output`]), so that a replay is offered
    /// the same tools.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structured_output: bool,
}

impl Recording {
    /// Reads a recording from a JSON file.
    pub fn load(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let text = std::fs::read_to_string(path)?;
        serde_json::from_str(&text).map_err(std::io::Error::other)
    }

    /// Writes the recording as pretty JSON.
    pub fn save(&self, path: impl AsRef<Path>) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}

/// A model that records every turn of another one.
///
/// ```
/// use behest::run::{Recorder, ScriptedTurn};
/// use behest::{Model, Message, ScriptedModel};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // Any model: a real client in practice.
/// let recorder = Recorder::new(ScriptedModel::new([ScriptedTurn::text("hello")]));
/// recorder.respond(&[Message::user("hi")], &[]).await.unwrap();
///
/// // Later, offline: the same answers, checked against the same tools.
/// let replay = ScriptedModel::from_recording(&recorder.recording());
/// let again = replay.respond(&[Message::user("hi")], &[]).await.unwrap();
/// assert_eq!(again.text.as_deref(), Some("hello"));
/// # }
/// ```
#[derive(Debug)]
pub struct Recorder<M> {
    inner: M,
    recording: Mutex<Recording>,
    file: Option<PathBuf>,
}

impl<M: Model> Recorder<M> {
    /// Records the turns of `inner` in memory.
    pub fn new(inner: M) -> Self {
        let recording = Recording {
            structured_output: inner.supports_structured_output(),
            ..Recording::default()
        };
        Self {
            inner,
            recording: Mutex::new(recording),
            file: None,
        }
    }

    /// Records the turns of `inner` and writes the recording to `path`
    /// after every turn, so a run that stops keeps what it recorded.
    pub fn to_file(inner: M, path: impl Into<PathBuf>) -> Self {
        Self {
            file: Some(path.into()),
            ..Self::new(inner)
        }
    }

    /// The turns recorded so far.
    pub fn recording(&self) -> Recording {
        self.lock().clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recording> {
        crate::sync::lock(&self.recording)
    }

    fn record(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
        reply: &Result<AssistantMessage, ModelError>,
    ) -> Result<(), ModelError> {
        let Ok(reply) = reply else {
            return Ok(());
        };
        let mut recording = self.lock();
        recording.turns.push(RecordedTurn {
            conversation: conversation.to_vec(),
            tools: tools.iter().map(|spec| spec.name.clone()).collect(),
            reply: reply.clone(),
        });
        if let Some(path) = &self.file {
            recording.save(path).map_err(|error| {
                ModelError::new(format!(
                    "the recording could not be written to {}: {error}",
                    path.display()
                ))
            })?;
        }
        Ok(())
    }
}

impl<M: Model> Model for Recorder<M> {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let reply = self.inner.complete(request).await;
        self.record(request.conversation, request.tools, &reply)?;
        reply
    }

    fn supports_structured_output(&self) -> bool {
        self.inner.supports_structured_output()
    }
}

impl ScriptedModel {
    /// A model that plays a recording back: each turn answers as recorded
    /// and checks that it is offered the same tools.
    pub fn from_recording(recording: &Recording) -> Self {
        Self::new(
            recording.turns.iter().map(|turn| {
                ScriptedTurn::reply(turn.reply.clone()).expect_tools(turn.tools.clone())
            }),
        )
        .with_structured_output(recording.structured_output)
    }

    /// [`from_recording`](Self::from_recording) of a recording file.
    pub fn from_file(path: impl AsRef<Path>) -> std::io::Result<Self> {
        Ok(Self::from_recording(&Recording::load(path)?))
    }
}

//! The AI SDK's UI message stream: what `useChat` (the `ai` package's
//! `DefaultChatTransport`) reads, and the request it sends.
//!
//! A run's events become the stream's chunks (`start`, `start-step`,
//! `text-*`, `reasoning-*`, `tool-input-*`, `tool-approval-request`,
//! `tool-output-*`, `data-*`, `finish-step`, `finish`, `error`, `abort`),
//! each sent as `data: {json}` and the stream ended by `data: [DONE]`.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::input::{approval_id, tool_value, Answer, Turn, UiInputError};
use super::parts::{Parts, Piece};
use crate::conversation::{AssistantMessage, ContentPart, Message, ModelDelta};
use crate::run::{Envelope, EventKind, GuardrailAction, RunOutcome, RunPhase, ToolStreamEvent};
use crate::tool::ToolCallResult;

/// The header that tells a reader the body is a UI message stream.
pub const STREAM_HEADER: (&str, &str) = ("x-vercel-ai-ui-message-stream", "v1");

/// One chunk of the UI message stream, serialized as the `ai` package's
/// `uiMessageChunkSchema` reads it (`{"type": "text-delta", "id": …,
/// "delta": …}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
#[allow(missing_docs)] // the fields are the protocol's, named by their variants
pub enum UiChunk {
    /// The answer's message begins (or goes on, when it names one).
    Start { message_id: String },
    /// A model turn begins.
    StartStep,
    /// A model turn, and its calls, ended.
    FinishStep,
    /// What the step showed is void: the turn is asked for again.
    ResetStep,
    /// A text part begins.
    TextStart { id: String },
    /// More of a text part.
    TextDelta { id: String, delta: String },
    /// A text part ended.
    TextEnd { id: String },
    /// A reasoning part begins.
    ReasoningStart { id: String },
    /// More of a reasoning part.
    ReasoningDelta { id: String, delta: String },
    /// A reasoning part ended.
    ReasoningEnd { id: String },
    /// A tool call's input begins to stream.
    ToolInputStart {
        tool_call_id: String,
        tool_name: String,
    },
    /// More of a tool call's input, as JSON text.
    ToolInputDelta {
        tool_call_id: String,
        input_text_delta: String,
    },
    /// A call that streamed and then did not come in the whole message
    /// (renamed, or dropped): its part ends with `error_text`.
    ToolInputError {
        tool_call_id: String,
        tool_name: String,
        input: Value,
        error_text: String,
    },
    /// A tool call's whole input.
    ToolInputAvailable {
        tool_call_id: String,
        tool_name: String,
        input: Value,
    },
    /// The call waits for a person's approval, answered by `approval_id`.
    ToolApprovalRequest {
        approval_id: String,
        tool_call_id: String,
    },
    /// The call's output.
    ToolOutputAvailable { tool_call_id: String, output: Value },
    /// The call failed.
    ToolOutputError {
        tool_call_id: String,
        error_text: String,
    },
    /// The person denied the call.
    ToolOutputDenied { tool_call_id: String },
    /// The answer's message ended.
    Finish {
        finish_reason: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        message_metadata: Option<Value>,
    },
    /// The run failed: the front end shows `error_text`.
    Error { error_text: String },
    /// The run was stopped.
    Abort { reason: String },
    /// A `data-{name}` part (behest's `progress`, `guardrail`, `handoff`,
    /// `compacted`, `output` and `model-notice`).
    #[serde(untagged)]
    Data(DataChunk),
}

/// A `data-{name}` chunk: a part of the front end's own kind.
#[derive(Debug, Clone, PartialEq)]
pub struct DataChunk {
    /// The part's kind, after `data-`.
    pub name: &'static str,
    /// Its id: a later chunk of the same id replaces its data.
    pub id: Option<String>,
    /// Its data.
    pub data: Value,
    /// Whether it is told to the page without being kept in the message.
    pub transient: bool,
}

impl Serialize for DataChunk {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("type", &format_args!("data-{}", self.name))?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("data", &self.data)?;
        if self.transient {
            map.serialize_entry("transient", &true)?;
        }
        map.end()
    }
}

/// What `useChat` posts: the chat's id, its messages, and why it sends.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ChatRequest {
    /// The chat's id: the session it runs in.
    pub id: String,
    /// The chat's messages as the front end keeps them.
    pub messages: Vec<UiMessage>,
    /// `submit-message` or `regenerate-message`.
    #[serde(default)]
    pub trigger: Option<String>,
    /// The message the answer continues, when it goes on with one.
    #[serde(default)]
    pub message_id: Option<String>,
}

/// One message of the front end: its id, role and parts.
#[derive(Debug, Clone, Deserialize)]
#[non_exhaustive]
pub struct UiMessage {
    /// Its id.
    pub id: String,
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// Its parts, as the `ai` package keeps them (`text`, `file`,
    /// `tool-{name}`, …).
    #[serde(default)]
    pub parts: Vec<Value>,
}

impl ChatRequest {
    /// What the request asks of the run: a user's new message, or the
    /// answers to the approvals the last answer asked for.
    pub(super) fn turn(&self) -> Result<Turn, UiInputError> {
        if self.trigger.as_deref() == Some("regenerate-message") {
            return Err(UiInputError::Unsupported(
                "regenerating an answer: send the message again instead".to_owned(),
            ));
        }
        let last = self.messages.last().ok_or(UiInputError::NoMessage)?;
        match last.role.as_str() {
            "user" => Ok(Turn::Say(user_message(last)?)),
            "assistant" => {
                let answers: Vec<Answer> = last.parts.iter().filter_map(answer).collect();
                if answers.is_empty() {
                    return Err(UiInputError::NothingNew);
                }
                Ok(Turn::Answer(answers))
            }
            role => Err(UiInputError::Role(role.to_owned())),
        }
    }
}

/// A user's message from its parts: text, and images or documents given
/// as data URLs.
fn user_message(message: &UiMessage) -> Result<Message, UiInputError> {
    let mut parts = Vec::new();
    for part in &message.parts {
        match part["type"].as_str() {
            Some("text") => {
                let text = part["text"]
                    .as_str()
                    .ok_or(UiInputError::Part("a text part without its text"))?;
                parts.push(ContentPart::text(text));
            }
            Some("file") => parts.push(super::input::file_part(
                part["mediaType"].as_str(),
                part["url"].as_str(),
            )?),
            // Steps, sources and data parts are the front end's own.
            _ => {}
        }
    }
    super::input::user_message(parts)
}

/// The answer an assistant message's tool part carries, once the user
/// approved or denied it.
fn answer(part: &Value) -> Option<Answer> {
    if part["state"] != "approval-responded" {
        return None;
    }
    let approval = &part["approval"];
    Some(Answer {
        id: approval["id"].as_str()?.to_owned(),
        approved: approval["approved"].as_bool()?,
        reason: approval["reason"].as_str().map(str::to_owned),
    })
}

/// Turns a run's events into UI message chunks, in order.
#[derive(Debug)]
pub struct UiMessageStream {
    message_id: String,
    /// This stream's number in the process: a message continued by a
    /// later stream gets parts of new ids.
    stream: u64,
    /// The streaming turn's parts.
    parts: Parts,
    /// The open text part's id.
    text: Option<String>,
    /// The open reasoning part's id.
    reasoning: Option<String>,
    /// Whether a step was started and not finished.
    in_step: bool,
    /// Parts made so far, for their ids.
    made: u64,
    /// The final answer's text as the step showed it.
    shown: String,
    /// Nested agents' calls shown to the user, by their paths.
    nested: HashSet<String>,
    /// Whether the open step holds nested agents' approvals only.
    nested_step: bool,
}

impl UiMessageStream {
    /// A stream for the assistant message `message_id`. A request that
    /// goes on with an answer names its message again, so the front end
    /// adds to it.
    pub fn new(message_id: impl Into<String>) -> Self {
        static STREAMS: AtomicU64 = AtomicU64::new(0);
        Self {
            message_id: message_id.into(),
            stream: STREAMS.fetch_add(1, Ordering::Relaxed),
            parts: Parts::default(),
            text: None,
            reasoning: None,
            in_step: false,
            made: 0,
            shown: String::new(),
            nested: HashSet::new(),
            nested_step: false,
        }
    }

    /// Tells the stream that its request answers the call at `call_path`,
    /// a nested agent's call an earlier stream of the same message showed:
    /// its result then ends its part here.
    pub fn answered(&mut self, call_path: &str) {
        if call_path.contains('/') {
            self.nested.insert(call_path.to_owned());
        }
    }

    /// The first chunk.
    pub fn start(&self) -> Vec<UiChunk> {
        vec![UiChunk::Start {
            message_id: self.message_id.clone(),
        }]
    }

    /// The chunks one event of the run makes (none for most of them).
    pub fn event(&mut self, envelope: &Envelope) -> Vec<UiChunk> {
        let (run_id, kind) = (&*envelope.run_id, &envelope.kind);
        let mut out = Vec::new();
        match kind {
            EventKind::State(RunPhase::AwaitingModel) => {
                self.close_step(&mut out);
                out.push(UiChunk::StartStep);
                self.in_step = true;
                // The answer is what the last turn says.
                self.shown.clear();
                self.parts.reset();
            }
            EventKind::State(phase) if phase.is_final() || *phase == RunPhase::Paused => {
                self.close_step(&mut out)
            }
            EventKind::ModelDelta(delta) => self.delta(delta, &mut out),
            EventKind::ModelMessage(message) => self.message(message, &mut out),
            EventKind::Tool(event) => self.tool(run_id, event, None, &mut out),
            EventKind::Agent(_) => {
                // A nested agent's approvals and their calls are the user's
                // to answer: they show as the root's calls, by their path.
                if let (Some(path), Some(event)) = (kind.call_path(), nested_tool(kind)) {
                    self.tool(run_id, event, Some(&path), &mut out);
                } else if let Some(result) = nested_result(kind) {
                    // Only a call the user saw ends in the message: the
                    // reader knows no other.
                    let path = result_path(kind);
                    if self.nested.contains(&path) {
                        out.push(self.result(&path, result));
                    }
                }
            }
            EventKind::Guardrail(event) if event.action != GuardrailAction::Allowed => {
                out.push(self.data("guardrail", json!(event)));
            }
            EventKind::Handoff { to } => out.push(self.data("handoff", json!({ "to": to }))),
            EventKind::Compacted { before, after } => {
                out.push(self.data("compacted", json!({ "before": before, "after": after })))
            }
            EventKind::Output(output) if *output != self.shown => {
                // A typed answer, or one a guardrail rewrote: the text the
                // step showed is not the answer.
                let value = serde_json::from_str(output).unwrap_or_else(|_| json!(output));
                out.push(self.data("output", value));
            }
            _ => {}
        }
        out
    }

    /// The last chunks, for how the run ended.
    pub fn finish(&mut self, outcome: &RunOutcome) -> Vec<UiChunk> {
        let mut out = Vec::new();
        self.close_step(&mut out);
        match outcome {
            RunOutcome::Completed { usage, .. } => out.push(UiChunk::Finish {
                finish_reason: "stop",
                message_metadata: Some(json!({ "usage": usage })),
            }),
            RunOutcome::Paused { state } => out.push(UiChunk::Finish {
                finish_reason: "tool-calls",
                message_metadata: Some(json!({ "runId": state.run_id() })),
            }),
            RunOutcome::Failed { error, .. } => {
                out.push(UiChunk::Error {
                    error_text: error.to_string(),
                });
                out.push(UiChunk::Finish {
                    finish_reason: "error",
                    message_metadata: None,
                });
            }
            RunOutcome::Cancelled { .. } => out.push(UiChunk::Abort {
                reason: "the run was cancelled".to_owned(),
            }),
        }
        out
    }

    /// The end of a request whose answers were kept while the run waits
    /// for others: nothing ran.
    pub fn kept(&mut self) -> Vec<UiChunk> {
        let mut out = Vec::new();
        self.close_step(&mut out);
        out.push(UiChunk::Finish {
            finish_reason: "tool-calls",
            message_metadata: None,
        });
        out
    }

    /// The chunks for a request that failed once the stream began: an
    /// error the front end shows.
    pub fn refused(&mut self, error: &str) -> Vec<UiChunk> {
        let mut out = Vec::new();
        self.close_step(&mut out);
        out.push(UiChunk::Error {
            error_text: error.to_owned(),
        });
        out.push(UiChunk::Finish {
            finish_reason: "error",
            message_metadata: None,
        });
        out
    }

    fn delta(&mut self, delta: &ModelDelta, out: &mut Vec<UiChunk>) {
        for piece in self.parts.delta(delta) {
            self.piece(piece, out);
        }
    }

    /// The chunks of one piece of the streaming turn.
    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<UiChunk>) {
        match piece {
            Piece::TextStart => {
                let id = self.part_id("text");
                out.push(UiChunk::TextStart { id: id.clone() });
                self.text = Some(id);
            }
            Piece::Text(text) => {
                self.shown.push_str(text);
                out.push(UiChunk::TextDelta {
                    id: self.text.clone().unwrap_or_default(),
                    delta: text.to_owned(),
                });
            }
            Piece::TextEnd => {
                if let Some(id) = self.text.take() {
                    out.push(UiChunk::TextEnd { id });
                }
            }
            Piece::ReasoningStart => {
                let id = self.part_id("reasoning");
                out.push(UiChunk::ReasoningStart { id: id.clone() });
                self.reasoning = Some(id);
            }
            Piece::Reasoning(text) => out.push(UiChunk::ReasoningDelta {
                id: self.reasoning.clone().unwrap_or_default(),
                delta: text.to_owned(),
            }),
            Piece::ReasoningEnd => {
                if let Some(id) = self.reasoning.take() {
                    out.push(UiChunk::ReasoningEnd { id });
                }
            }
            Piece::CallStart { id, name } => out.push(UiChunk::ToolInputStart {
                tool_call_id: id.to_owned(),
                tool_name: name.to_owned(),
            }),
            Piece::CallArguments { index, arguments } => out.push(UiChunk::ToolInputDelta {
                tool_call_id: self.parts.call_id(index).to_owned(),
                input_text_delta: arguments.to_owned(),
            }),
            Piece::Restart => {
                // What the failed stream showed is void; the turn comes again.
                self.parts.reset();
                self.text = None;
                self.reasoning = None;
                self.shown.clear();
                out.push(UiChunk::ResetStep);
            }
            // A retry or a fallback: told to the page as it happens, not kept
            // in the message.
            Piece::Notice(notice) => out.push(UiChunk::Data(DataChunk {
                name: "model-notice",
                id: None,
                data: json!(notice),
                transient: true,
            })),
        }
    }

    fn message(&mut self, message: &AssistantMessage, out: &mut Vec<UiChunk>) {
        self.close_parts(out);
        if let (false, Some(text)) = (self.parts.streamed_text(), &message.text) {
            if !text.is_empty() {
                let id = self.part_id("text");
                out.push(UiChunk::TextStart { id: id.clone() });
                out.push(UiChunk::TextDelta {
                    id: id.clone(),
                    delta: text.clone(),
                });
                out.push(UiChunk::TextEnd { id });
                self.shown = text.clone();
            }
        }
        for call in &message.tool_calls {
            out.push(UiChunk::ToolInputAvailable {
                tool_call_id: call.call_id.clone(),
                tool_name: call.tool_name.clone(),
                input: tool_value(&call.arguments),
            });
        }
        // A call streamed under an id the whole message does not keep (the
        // run renames an id the model used before): its part ends here.
        for (id, tool) in self.parts.take_calls() {
            if !message.tool_calls.iter().any(|call| call.call_id == id) {
                out.push(UiChunk::ToolInputError {
                    tool_call_id: id,
                    tool_name: tool,
                    input: Value::Null,
                    error_text: "the call came under another id".to_owned(),
                });
            }
        }
        self.parts.reset();
    }

    /// A call's life: `path` names a nested agent's call by its path.
    fn tool(
        &mut self,
        run_id: &str,
        event: &ToolStreamEvent,
        path: Option<&str>,
        out: &mut Vec<UiChunk>,
    ) {
        match event {
            ToolStreamEvent::ApprovalRequested { call } => {
                let call_id = path.unwrap_or(&call.call_id);
                if path.is_some() {
                    // In a step of their own, so that the step's parts are
                    // all answered once they are (the AI SDK's
                    // `lastAssistantMessageIsCompleteWithApprovalResponses`
                    // looks at the last step), the calling agent's call
                    // still going on in the step before.
                    if !self.nested_step {
                        self.close_step(out);
                        out.push(UiChunk::StartStep);
                        self.in_step = true;
                        self.nested_step = true;
                    }
                    self.nested.insert(call_id.to_owned());
                    out.push(UiChunk::ToolInputAvailable {
                        tool_call_id: call_id.to_owned(),
                        tool_name: call.tool_name.clone(),
                        input: tool_value(&call.arguments),
                    });
                }
                out.push(UiChunk::ToolApprovalRequest {
                    approval_id: approval_id(run_id, call_id),
                    tool_call_id: call_id.to_owned(),
                });
            }
            ToolStreamEvent::Progress { call_id, progress } if path.is_none() => {
                out.push(UiChunk::Data(DataChunk {
                    name: "progress",
                    id: Some(call_id.clone()),
                    data: json!({ "toolCallId": call_id, "progress": progress }),
                    transient: false,
                }));
            }
            ToolStreamEvent::Result { result } if path.is_none() => {
                out.push(self.result(&result.call_id, result))
            }
            _ => {}
        }
    }

    fn result(&self, call_id: &str, result: &ToolCallResult) -> UiChunk {
        let tool_call_id = call_id.to_owned();
        match &result.outcome {
            Ok(output) => UiChunk::ToolOutputAvailable {
                tool_call_id,
                output: super::input::output_value(output),
            },
            Err(crate::tool::ToolError::ApprovalDenied { .. }) => {
                UiChunk::ToolOutputDenied { tool_call_id }
            }
            Err(error) => UiChunk::ToolOutputError {
                tool_call_id,
                error_text: error.to_string(),
            },
        }
    }

    fn data(&mut self, name: &'static str, data: Value) -> UiChunk {
        UiChunk::Data(DataChunk {
            name,
            id: Some(self.part_id(name)),
            data,
            transient: false,
        })
    }

    fn part_id(&mut self, kind: &str) -> String {
        self.made += 1;
        format!("{}-{}-{kind}-{}", self.message_id, self.stream, self.made)
    }

    /// Ends the open text or reasoning part.
    fn close_parts(&mut self, out: &mut Vec<UiChunk>) {
        for piece in self.parts.close() {
            self.piece(piece, out);
        }
    }

    fn close_step(&mut self, out: &mut Vec<UiChunk>) {
        self.close_parts(out);
        self.nested_step = false;
        if std::mem::take(&mut self.in_step) {
            out.push(UiChunk::FinishStep);
        }
    }
}

/// The tool event at the bottom of a nested agent's event, if it asks the
/// user (an approval).
fn nested_tool(kind: &EventKind) -> Option<&ToolStreamEvent> {
    match kind {
        EventKind::Agent(event) => nested_tool(&event.kind),
        EventKind::Tool(event @ ToolStreamEvent::ApprovalRequested { .. }) => Some(event),
        _ => None,
    }
}

/// A nested agent's call result.
fn nested_result(kind: &EventKind) -> Option<&ToolCallResult> {
    match kind {
        EventKind::Agent(event) => match &*event.kind {
            EventKind::Tool(ToolStreamEvent::Result { result }) => Some(result),
            nested @ EventKind::Agent(_) => nested_result(nested),
            _ => None,
        },
        _ => None,
    }
}

/// The path a nested call's result is shown by: the agents' calls above
/// it, then the call (`billing#c3/refund#c1`), as its approval named it.
fn result_path(kind: &EventKind) -> String {
    let mut path = String::new();
    let mut kind = kind;
    while let EventKind::Agent(event) = kind {
        path.push_str(&format!("{}#{}/", event.agent, event.call_id));
        kind = &event.kind;
    }
    if let EventKind::Tool(ToolStreamEvent::Result { result }) = kind {
        path.push_str(&format!("{}#{}", result.tool_name, result.call_id));
    }
    path
}

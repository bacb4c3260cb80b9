//! AG-UI: the events an AG-UI client (`@ag-ui/client`'s `HttpAgent`,
//! CopilotKit) reads, and the `RunAgentInput` it posts.
//!
//! A run is `RUN_STARTED`, a `STATE_SNAPSHOT`, then per model turn a
//! step with its text, reasoning and tool calls, each call's
//! `TOOL_CALL_RESULT`, `STATE_DELTA`s as the run moves, and
//! `RUN_FINISHED` (its outcome an `interrupt` while approvals wait) or
//! `RUN_ERROR`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::input::{approval_id, output_text, Answer, Turn, UiInputError};
use super::parts::{Parts, Piece};
use crate::conversation::{AssistantMessage, ContentPart, Message, ModelDelta};
use crate::run::{
    Envelope, EventKind, GuardrailAction, RunOutcome, RunPhase, RunState, ToolStreamEvent, WaitKind,
};
use crate::tool::ToolCall;

/// What an AG-UI client posts to run the agent.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RunAgentInput {
    /// The thread: the session it runs in.
    pub thread_id: String,
    /// The client's id for this run, said back in `RUN_STARTED`.
    pub run_id: String,
    /// The thread's messages as the client keeps them.
    #[serde(default)]
    pub messages: Vec<Value>,
    /// Answers to the interrupts the last run ended with.
    #[serde(default)]
    pub resume: Vec<ResumeEntry>,
}

/// An answer to one interrupt.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResumeEntry {
    /// The interrupt's id.
    pub interrupt_id: String,
    /// `resolved` or `cancelled`.
    pub status: String,
    /// What the person answered: `{"approved": bool, "reason": "…"}`.
    #[serde(default)]
    pub payload: Value,
}

impl RunAgentInput {
    /// What the input asks: answers to interrupts, else the user's last
    /// message.
    pub(super) fn turn(&self) -> Result<Turn, UiInputError> {
        if !self.resume.is_empty() {
            let answers = self.resume.iter().map(|entry| {
                // A cancelled interrupt, or one resolved without a yes, is
                // a denial: a call runs only on a clear approval.
                let approved =
                    entry.status == "resolved" && entry.payload["approved"] == Value::Bool(true);
                let reason = entry.payload["reason"]
                    .as_str()
                    .map(str::to_owned)
                    .or_else(|| {
                        (entry.status == "cancelled").then(|| "the person cancelled".to_owned())
                    });
                Answer {
                    id: entry.interrupt_id.clone(),
                    approved,
                    reason,
                }
            });
            return Ok(Turn::Answer(answers.collect()));
        }
        let last = self.messages.last().ok_or(UiInputError::NoMessage)?;
        match last["role"].as_str() {
            Some("user") => Ok(Turn::Say(user_message(&last["content"])?)),
            Some(role) => Err(UiInputError::Role(role.to_owned())),
            None => Err(UiInputError::Part("a message without its role")),
        }
    }
}

/// A user's message from its content: a string, or parts.
fn user_message(content: &Value) -> Result<Message, UiInputError> {
    if let Some(text) = content.as_str() {
        return super::input::user_message(vec![ContentPart::text(text)]);
    }
    let parts = content
        .as_array()
        .ok_or(UiInputError::Part("a user's content is text or parts"))?;
    let mut read = Vec::new();
    for part in parts {
        match part["type"].as_str() {
            Some("text") => read.push(ContentPart::text(
                part["text"]
                    .as_str()
                    .ok_or(UiInputError::Part("a text part without its text"))?,
            )),
            Some("image" | "document") => {
                let source = &part["source"];
                let media = source["mimeType"].as_str();
                let url = match source["type"].as_str() {
                    Some("data") => source["value"]
                        .as_str()
                        .map(|data| format!("data:{};base64,{data}", media.unwrap_or(""))),
                    Some("url") => source["value"].as_str().map(str::to_owned),
                    _ => None,
                };
                read.push(super::input::file_part(media, url.as_deref())?);
            }
            _ => return Err(UiInputError::Part("a part of a kind the agent cannot read")),
        }
    }
    super::input::user_message(read)
}

/// One AG-UI event, serialized as `@ag-ui/core`'s schemas read it
/// (`{"type": "TEXT_MESSAGE_CONTENT", "messageId": …, "delta": …}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "type",
    rename_all = "SCREAMING_SNAKE_CASE",
    rename_all_fields = "camelCase"
)]
#[non_exhaustive]
#[allow(missing_docs)] // the fields are the protocol's, named by their variants
pub enum AgUiEvent {
    /// The run began.
    RunStarted { thread_id: String, run_id: String },
    /// The run ended: `outcome` is `success`, `interrupt` (with the
    /// approvals it waits for) or `cancelled`.
    RunFinished {
        thread_id: String,
        run_id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        outcome: Value,
        #[serde(skip_serializing_if = "Option::is_none")]
        usage: Option<Value>,
    },
    /// The run failed.
    RunError { message: String },
    /// A model turn began.
    StepStarted { step_name: String },
    /// A model turn, and its calls, ended.
    StepFinished { step_name: String },
    /// The assistant's text message begins.
    TextMessageStart {
        message_id: String,
        role: &'static str,
    },
    /// More of it.
    TextMessageContent { message_id: String, delta: String },
    /// It ended.
    TextMessageEnd { message_id: String },
    /// A reasoning phase begins.
    ReasoningStart { message_id: String },
    /// Its message begins.
    ReasoningMessageStart {
        message_id: String,
        role: &'static str,
    },
    /// More of it.
    ReasoningMessageContent { message_id: String, delta: String },
    /// Its message ended.
    ReasoningMessageEnd { message_id: String },
    /// The reasoning phase ended.
    ReasoningEnd { message_id: String },
    /// A tool call begins.
    ToolCallStart {
        tool_call_id: String,
        tool_call_name: String,
        parent_message_id: String,
    },
    /// More of its arguments, as JSON text.
    ToolCallArgs { tool_call_id: String, delta: String },
    /// Its arguments are whole.
    ToolCallEnd { tool_call_id: String },
    /// Its result (an error's text for a call that failed).
    ToolCallResult {
        message_id: String,
        tool_call_id: String,
        content: String,
        role: &'static str,
    },
    /// The run's state: its `phase` and the calls `waiting` for approval.
    StateSnapshot { snapshot: Value },
    /// A change of the state, as a JSON Patch.
    StateDelta { delta: Value },
    /// behest's own events (`behest.progress`, `behest.guardrail`,
    /// `behest.handoff`, `behest.compacted`, `behest.retry`,
    /// `behest.fallback`).
    Custom { name: &'static str, value: Value },
}

/// Turns a run's events into AG-UI events, in the order the client
/// verifies.
#[derive(Debug)]
pub struct AgUiStream {
    thread_id: String,
    run_id: String,
    /// Ids made so far.
    made: u64,
    /// The model turn's message id.
    message: Option<String>,
    /// The streaming turn's parts.
    parts: Parts,
    /// The calls begun (`TOOL_CALL_START`) and not yet ended.
    begun: Vec<String>,
    /// The open reasoning message's id.
    reasoning: Option<String>,
    /// The open step's name.
    step: Option<String>,
    turns: u64,
    /// Approvals asked this run, as interrupts.
    interrupts: Vec<Value>,
}

impl AgUiStream {
    /// A stream for the client's thread and run.
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        Self {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            made: 0,
            message: None,
            parts: Parts::default(),
            begun: Vec::new(),
            reasoning: None,
            step: None,
            turns: 0,
            interrupts: Vec::new(),
        }
    }

    /// The first events: the run started, and the state it starts in.
    pub fn start(&self) -> Vec<AgUiEvent> {
        vec![
            AgUiEvent::RunStarted {
                thread_id: self.thread_id.clone(),
                run_id: self.run_id.clone(),
            },
            AgUiEvent::StateSnapshot {
                snapshot: json!({ "phase": "started", "waiting": [] }),
            },
        ]
    }

    /// The events one of the run's events makes.
    pub fn event(&mut self, envelope: &Envelope) -> Vec<AgUiEvent> {
        let (run_id, kind) = (&*envelope.run_id, &envelope.kind);
        let mut out = Vec::new();
        match kind {
            EventKind::State(phase) => {
                if *phase == RunPhase::AwaitingModel {
                    self.close_step(&mut out);
                    self.turns += 1;
                    let name = format!("turn {}", self.turns);
                    out.push(AgUiEvent::StepStarted {
                        step_name: name.clone(),
                    });
                    self.step = Some(name);
                    self.message = Some(self.id("message"));
                } else if phase.is_final() || *phase == RunPhase::Paused {
                    self.close_step(&mut out);
                }
                out.push(AgUiEvent::StateDelta {
                    delta: json!([{ "op": "replace", "path": "/phase", "value": phase }]),
                });
            }
            EventKind::ModelDelta(delta) => self.delta(delta, &mut out),
            EventKind::ModelMessage(message) => self.message(message, &mut out),
            EventKind::Tool(ToolStreamEvent::Result { result }) => {
                let content = match &result.outcome {
                    Ok(output) => output_text(output),
                    Err(error) => error.to_string(),
                };
                out.push(AgUiEvent::ToolCallResult {
                    message_id: self.id("result"),
                    tool_call_id: result.call_id.clone(),
                    content,
                    role: "tool",
                });
            }
            EventKind::Tool(ToolStreamEvent::Progress { call_id, progress }) => out.push(custom(
                "behest.progress",
                json!({ "toolCallId": call_id, "progress": progress }),
            )),
            EventKind::Guardrail(event) if event.action != GuardrailAction::Allowed => {
                out.push(custom("behest.guardrail", json!(event)))
            }
            EventKind::Handoff { to } => out.push(custom("behest.handoff", json!({ "to": to }))),
            EventKind::Compacted { before, after } => out.push(custom(
                "behest.compacted",
                json!({ "before": before, "after": after }),
            )),
            _ => {}
        }
        // An approval, the run's own or a nested agent's: the person answers
        // it when the run has paused, as an interrupt.
        if let (Some(path), Some(call)) = (kind.call_path(), approval(kind)) {
            let id = approval_id(run_id, &path);
            let arguments = super::input::tool_value(&call.arguments);
            out.push(AgUiEvent::StateDelta {
                delta: json!([{ "op": "add", "path": "/waiting/-", "value": {
                    "id": id,
                    "toolCallId": path,
                    "tool": call.tool_name,
                    "arguments": arguments,
                }}]),
            });
            let mut interrupt = interrupt(&id, &call.tool_name);
            interrupt["metadata"] = json!({ "tool": call.tool_name, "arguments": arguments });
            if path == call.call_id {
                interrupt["toolCallId"] = json!(call.call_id);
            }
            self.interrupts.push(interrupt);
        }
        out
    }

    /// The last events, for how the run ended.
    pub fn finish(&mut self, outcome: &RunOutcome) -> Vec<AgUiEvent> {
        let mut out = Vec::new();
        self.close_step(&mut out);
        match outcome {
            RunOutcome::Completed { text, usage, .. } => {
                let usage = json!([{
                    "inputTokens": usage.tokens.input_tokens,
                    "outputTokens": usage.tokens.output_tokens,
                    "totalTokens": usage.tokens.input_tokens.saturating_add(usage.tokens.output_tokens),
                    "reasoningTokens": usage.tokens.reasoning_tokens,
                    "cachedInputTokens": usage.tokens.cached_tokens,
                }]);
                out.push(self.finished(
                    json!({ "type": "success" }),
                    Some(json!(text)),
                    Some(usage),
                ));
            }
            RunOutcome::Paused { state } => {
                // Approvals asked before this request (another client's)
                // are waited for too: each is an interrupt.
                self.remember_waits(state);
                out.push(self.paused());
            }
            RunOutcome::Failed { error, .. } => out.push(AgUiEvent::RunError {
                message: error.to_string(),
            }),
            RunOutcome::Cancelled { .. } => {
                out.push(self.finished(json!({ "type": "cancelled" }), None, None))
            }
        }
        out
    }

    /// The end of a request whose answers were kept while the run, as
    /// `state` says, still waits for others: the interrupts that remain.
    pub fn kept(&mut self, state: &RunState) -> Vec<AgUiEvent> {
        self.remember_waits(state);
        vec![self.paused()]
    }

    /// Adds the approvals `state` waits for that this stream did not see
    /// asked (another request's) to its interrupts. Calls of external
    /// tools are the service's to answer, not a person's: they are left
    /// out.
    fn remember_waits(&mut self, state: &RunState) {
        let run_id = state.run_id();
        for (path, wait) in state.waits_by_path() {
            let id = approval_id(run_id, &path);
            if wait.kind == WaitKind::Approval
                && !wait.is_answered()
                && !self.interrupts.iter().any(|asked| asked["id"] == id)
            {
                let mut asked = interrupt(&id, &wait.call.tool_name);
                asked["metadata"] = json!({
                    "tool": wait.call.tool_name,
                    "arguments": super::input::tool_value(&wait.call.arguments),
                });
                if path == wait.call.call_id {
                    asked["toolCallId"] = json!(wait.call.call_id);
                }
                self.interrupts.push(asked);
            }
        }
    }

    /// `RUN_FINISHED` of a paused run: its interrupts.
    fn paused(&mut self) -> AgUiEvent {
        let interrupts = std::mem::take(&mut self.interrupts);
        let outcome = if interrupts.is_empty() {
            json!({ "type": "success" })
        } else {
            json!({ "type": "interrupt", "interrupts": interrupts })
        };
        self.finished(outcome, None, None)
    }

    /// The end of a request refused once the stream began.
    pub fn refused(&mut self, error: &str) -> Vec<AgUiEvent> {
        let mut out = Vec::new();
        self.close_step(&mut out);
        out.push(AgUiEvent::RunError {
            message: error.to_owned(),
        });
        out
    }

    fn finished(&self, outcome: Value, result: Option<Value>, usage: Option<Value>) -> AgUiEvent {
        AgUiEvent::RunFinished {
            thread_id: self.thread_id.clone(),
            run_id: self.run_id.clone(),
            result,
            outcome,
            usage,
        }
    }

    fn delta(&mut self, delta: &ModelDelta, out: &mut Vec<AgUiEvent>) {
        for piece in self.parts.delta(delta) {
            self.piece(piece, out);
        }
    }

    /// The events of one piece of the streaming turn: its text is the
    /// turn's message, its calls name that message as their parent.
    fn piece(&mut self, piece: Piece<'_>, out: &mut Vec<AgUiEvent>) {
        match piece {
            Piece::TextStart => out.push(AgUiEvent::TextMessageStart {
                message_id: self.turn_message(),
                role: "assistant",
            }),
            Piece::Text(text) => out.push(AgUiEvent::TextMessageContent {
                message_id: self.turn_message(),
                delta: text.to_owned(),
            }),
            Piece::TextEnd => out.push(AgUiEvent::TextMessageEnd {
                message_id: self.turn_message(),
            }),
            Piece::ReasoningStart => {
                let id = self.id("reasoning");
                out.push(AgUiEvent::ReasoningStart {
                    message_id: id.clone(),
                });
                out.push(AgUiEvent::ReasoningMessageStart {
                    message_id: id.clone(),
                    role: "reasoning",
                });
                self.reasoning = Some(id);
            }
            Piece::Reasoning(text) => out.push(AgUiEvent::ReasoningMessageContent {
                message_id: self.reasoning.clone().unwrap_or_default(),
                delta: text.to_owned(),
            }),
            Piece::ReasoningEnd => {
                if let Some(id) = self.reasoning.take() {
                    out.push(AgUiEvent::ReasoningMessageEnd {
                        message_id: id.clone(),
                    });
                    out.push(AgUiEvent::ReasoningEnd { message_id: id });
                }
            }
            // A call shows as it begins; its arguments come whole with the
            // turn's message. AG-UI adds each piece of arguments to the
            // call of that id and cannot take one back, and a stream the
            // provider restarts sends the same call again.
            Piece::CallStart { id, name } => {
                if !self.begun.iter().any(|begun| begun == id) {
                    self.begun.push(id.to_owned());
                    out.push(AgUiEvent::ToolCallStart {
                        tool_call_id: id.to_owned(),
                        tool_call_name: name.to_owned(),
                        parent_message_id: self.turn_message(),
                    });
                }
            }
            Piece::CallArguments { .. } => {}
            Piece::Restart => {
                // What streamed stays shown: the rest goes to a new message.
                for piece in self.parts.close() {
                    self.piece(piece, out);
                }
                self.parts.reset();
                self.message = Some(self.id("message"));
            }
            Piece::Notice(notice @ ModelDelta::Fallback { .. }) => {
                out.push(custom("behest.fallback", json!(notice)))
            }
            Piece::Notice(notice) => out.push(custom("behest.retry", json!(notice))),
        }
    }

    fn message(&mut self, message: &AssistantMessage, out: &mut Vec<AgUiEvent>) {
        let id = self.turn_message();
        for piece in self.parts.close() {
            self.piece(piece, out);
        }
        if let (false, Some(text)) = (self.parts.streamed_text(), &message.text) {
            if !text.is_empty() {
                out.push(AgUiEvent::TextMessageStart {
                    message_id: id.clone(),
                    role: "assistant",
                });
                out.push(AgUiEvent::TextMessageContent {
                    message_id: id.clone(),
                    delta: text.clone(),
                });
                out.push(AgUiEvent::TextMessageEnd {
                    message_id: id.clone(),
                });
            }
        }
        let begun = std::mem::take(&mut self.begun);
        for call in &message.tool_calls {
            if !begun.contains(&call.call_id) {
                out.push(AgUiEvent::ToolCallStart {
                    tool_call_id: call.call_id.clone(),
                    tool_call_name: call.tool_name.clone(),
                    parent_message_id: id.clone(),
                });
            }
            out.push(AgUiEvent::ToolCallArgs {
                tool_call_id: call.call_id.clone(),
                delta: super::input::arguments_text(&call.arguments),
            });
            out.push(AgUiEvent::ToolCallEnd {
                tool_call_id: call.call_id.clone(),
            });
        }
        // Calls begun under ids the whole message does not keep.
        for begun in begun {
            if !message.tool_calls.iter().any(|call| call.call_id == begun) {
                out.push(AgUiEvent::ToolCallEnd {
                    tool_call_id: begun,
                });
            }
        }
        self.parts.reset();
    }

    fn turn_message(&mut self) -> String {
        match &self.message {
            Some(id) => id.clone(),
            None => {
                let id = self.id("message");
                self.message = Some(id.clone());
                id
            }
        }
    }

    fn id(&mut self, kind: &str) -> String {
        self.made += 1;
        format!("{}-{kind}-{}", self.run_id, self.made)
    }

    /// Ends the open text or reasoning, and the calls begun (in the order
    /// they began): the turn's parts are forgotten.
    fn close_parts(&mut self, out: &mut Vec<AgUiEvent>) {
        for piece in self.parts.close() {
            self.piece(piece, out);
        }
        for tool_call_id in std::mem::take(&mut self.begun) {
            out.push(AgUiEvent::ToolCallEnd { tool_call_id });
        }
        self.parts.reset();
    }

    fn close_step(&mut self, out: &mut Vec<AgUiEvent>) {
        self.close_parts(out);
        if let Some(step_name) = self.step.take() {
            out.push(AgUiEvent::StepFinished { step_name });
        }
    }
}

fn custom(name: &'static str, value: Value) -> AgUiEvent {
    AgUiEvent::Custom { name, value }
}

/// An interrupt asking a person to approve the call of `tool`.
fn interrupt(id: &str, tool: &str) -> Value {
    json!({
        "id": id,
        "reason": "tool_approval",
        "message": format!("Approve the call of `{tool}`?"),
        "responseSchema": {
            "type": "object",
            "properties": {
                "approved": { "type": "boolean" },
                "reason": { "type": "string" },
            },
            "required": ["approved"],
        },
    })
}

/// The call an approval event asks about, at any depth.
fn approval(kind: &EventKind) -> Option<&ToolCall> {
    match kind {
        EventKind::Agent(event) => approval(&event.kind),
        EventKind::Tool(ToolStreamEvent::ApprovalRequested { call }) => Some(call),
        _ => None,
    }
}

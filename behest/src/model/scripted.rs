//! A model that replays a script: for tests and examples, with no network
//! and no key. Each turn can check what the model was given.

use std::collections::VecDeque;
use std::sync::Mutex;

use super::contract::{Model, ModelError, ModelRequest};
use crate::conversation::{AssistantMessage, Message, ToolResultMessage};
use crate::tool::ToolCall;
use crate::tool::ToolSpec;

/// One scripted model turn: the reply, and what the model expects to have
/// been given before it.
#[derive(Debug, Clone)]
pub struct ScriptedTurn {
    reply: AssistantMessage,
    /// The turn fails with this instead of replying.
    error: Option<ModelError>,
    expected_tools: Option<Vec<String>>,
    expected_results: Vec<ExpectedResult>,
}

#[derive(Debug, Clone)]
struct ExpectedResult {
    call_id: String,
    is_error: bool,
    contains: String,
}

impl ScriptedTurn {
    /// A turn that answers with text: the run completes.
    pub fn text(text: impl Into<String>) -> Self {
        Self::reply(AssistantMessage::text(text))
    }

    /// A turn that calls tools.
    pub fn tool_calls(calls: impl IntoIterator<Item = ToolCall>) -> Self {
        Self::reply(AssistantMessage::tool_calls(calls))
    }

    /// A turn with any reply.
    pub fn reply(reply: AssistantMessage) -> Self {
        Self {
            reply,
            error: None,
            expected_tools: None,
            expected_results: Vec::new(),
        }
    }

    /// A turn that fails with `error` (a rate limit, an overloaded
    /// provider), as a client behind an API would.
    pub fn error(error: ModelError) -> Self {
        Self {
            error: Some(error),
            ..Self::reply(AssistantMessage::default())
        }
    }

    /// Checks that the model is offered exactly these tools, in this order.
    #[must_use]
    pub fn expect_tools<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.expected_tools = Some(names.into_iter().map(Into::into).collect());
        self
    }

    /// Checks that the conversation holds a successful result of `call_id`
    /// whose text contains `contains`.
    #[must_use]
    pub fn expect_ok(mut self, call_id: impl Into<String>, contains: impl Into<String>) -> Self {
        self.expected_results.push(ExpectedResult {
            call_id: call_id.into(),
            is_error: false,
            contains: contains.into(),
        });
        self
    }

    /// Checks that the conversation holds a failed result of `call_id`
    /// whose message contains `contains`.
    #[must_use]
    pub fn expect_error(mut self, call_id: impl Into<String>, contains: impl Into<String>) -> Self {
        self.expected_results.push(ExpectedResult {
            call_id: call_id.into(),
            is_error: true,
            contains: contains.into(),
        });
        self
    }

    fn check(
        &self,
        turn: usize,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> Result<(), ModelError> {
        let fail = |what: String| {
            Err(ModelError::new(format!(
                "scripted model, turn {turn}: {what}"
            )))
        };
        if let Some(expected) = &self.expected_tools {
            let offered: Vec<&str> = tools.iter().map(|spec| spec.name.as_str()).collect();
            if offered != *expected {
                return fail(format!(
                    "expected the tools {expected:?}, was offered {offered:?}"
                ));
            }
        }
        for expected in &self.expected_results {
            let Some(found) = last_result(conversation, &expected.call_id) else {
                return fail(format!(
                    "expected a result of call `{}`, found none",
                    expected.call_id
                ));
            };
            let kind = |is_error: bool| if is_error { "an error" } else { "a success" };
            if found.is_error != expected.is_error || !found.content.contains(&expected.contains) {
                return fail(format!(
                    "expected {} of call `{}` containing {:?}, got {}: {:?}",
                    kind(expected.is_error),
                    expected.call_id,
                    expected.contains,
                    kind(found.is_error),
                    found.content
                ));
            }
        }
        Ok(())
    }
}

fn last_result<'c>(conversation: &'c [Message], call_id: &str) -> Option<&'c ToolResultMessage> {
    conversation.iter().rev().find_map(|message| match message {
        Message::ToolResult(result) if result.call_id == call_id => Some(result),
        _ => None,
    })
}

/// A [`Model`] that replays its turns in order and checks, at each, what it
/// was given. A check that fails, or a call past the last turn, is a
/// [`ModelError`] that fails the run with the reason.
///
/// ```
/// use behest::run::{ScriptedModel, ScriptedTurn};
/// use behest::ToolCall;
///
/// let model = ScriptedModel::new([
///     ScriptedTurn::tool_calls([ToolCall::new("call_1", "get_weather", r#"{"city": "Paris"}"#)])
///         .expect_tools(["get_weather"]),
///     ScriptedTurn::text("It is sunny in Paris.").expect_ok("call_1", "sunny"),
/// ]);
/// assert_eq!(model.remaining(), 2);
/// ```
#[derive(Debug)]
pub struct ScriptedModel {
    turns: Mutex<VecDeque<ScriptedTurn>>,
    total: usize,
    structured_output: bool,
    /// Streams each reply in pieces of this many characters.
    chunk: Option<usize>,
}

impl ScriptedModel {
    /// A model that plays `turns`.
    pub fn new(turns: impl IntoIterator<Item = ScriptedTurn>) -> Self {
        let turns: VecDeque<ScriptedTurn> = turns.into_iter().collect();
        Self {
            total: turns.len(),
            turns: Mutex::new(turns),
            structured_output: false,
            chunk: None,
        }
    }

    /// Plays a model that [answers typed runs in the answer's
    /// shape](Model::supports_structured_output): a typed run offers it no
    /// `final_answer` tool and reads its final text as the answer.
    #[must_use]
    pub fn with_structured_output(mut self, structured_output: bool) -> Self {
        self.structured_output = structured_output;
        self
    }

    /// Streams each reply to the run as a model behind an API does: its
    /// text, then each tool call's arguments, in pieces of `chars`
    /// characters ([`ModelDelta`](crate::ModelDelta)s), before the whole
    /// message.
    #[must_use]
    pub fn with_streaming(mut self, chars: usize) -> Self {
        self.chunk = Some(chars.max(1));
        self
    }

    /// How many turns are left.
    pub fn remaining(&self) -> usize {
        self.turns.lock().map_or(0, |turns| turns.len())
    }
}

impl Model for ScriptedModel {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let turn = {
            let mut turns = self
                .turns
                .lock()
                .map_err(|_| ModelError::new("scripted model: the script lock is poisoned"))?;
            turns.pop_front()
        };
        let Some(turn) = turn else {
            return Err(ModelError::new(format!(
                "scripted model: called again after its {} turns",
                self.total
            )));
        };
        let number = self.total - self.remaining();
        turn.check(number, request.conversation, request.tools)?;
        if let Some(error) = turn.error {
            return Err(error);
        }
        if let Some(chunk) = self.chunk {
            stream(&turn.reply, chunk, &request);
        }
        Ok(turn.reply)
    }

    fn supports_structured_output(&self) -> bool {
        self.structured_output
    }
}

/// Sends `reply` to `request`'s deltas in pieces of `chunk` characters.
fn stream(reply: &AssistantMessage, chunk: usize, request: &ModelRequest<'_>) {
    let pieces = |text: &str| -> Vec<String> {
        let chars: Vec<char> = text.chars().collect();
        chars
            .chunks(chunk)
            .map(|piece| piece.iter().collect())
            .collect()
    };
    if let Some(text) = &reply.text {
        for piece in pieces(text) {
            request.send_delta(crate::ModelDelta::Text(piece));
        }
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let arguments = match &call.arguments {
            serde_json::Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let mut first = true;
        for piece in pieces(&arguments) {
            request.send_delta(crate::ModelDelta::ToolCall {
                index,
                id: first.then(|| call.call_id.clone()),
                name: first.then(|| call.tool_name.clone()),
                arguments: piece,
            });
            first = false;
        }
    }
}

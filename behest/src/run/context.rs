//! Keeping a run's conversation within its model's context window: when
//! it nears the window, a [`Compaction`] trims it (old tool outputs, old
//! turns), summarises it with a model, or applies your own policy, always
//! leaving every tool result beside its call.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::part::{Looping, Run};
use super::stage::{Decided, Flow, Stage};
use super::{Agent, RunOutcome};
use crate::conversation::{AssistantMessage, ContentPart, Message, ToolResultMessage};
use crate::model::Model;
use crate::runtime::ToolCall;

/// The context windows of current OpenAI, Anthropic and Gemini models, in
/// tokens (for GPT-5, the input it takes), found by the longest id that
/// begins a model's name.
///
/// ```
/// use behest::run::context_window_of;
///
/// assert_eq!(context_window_of("gpt-4o-2024-08-06"), Some(128_000));
/// assert_eq!(context_window_of("claude-sonnet-4-5-20250929"), Some(200_000));
/// assert_eq!(context_window_of("my-own-model"), None);
/// ```
pub fn context_window_of(model: &str) -> Option<u64> {
    const WINDOWS: &[(&str, u64)] = &[
        ("gpt-5", 272_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-4o", 128_000),
        ("o3", 200_000),
        ("o4-mini", 200_000),
        ("claude-opus-4", 200_000),
        ("claude-sonnet-4", 200_000),
        ("claude-haiku-4", 200_000),
        ("claude-3-5-haiku", 200_000),
        ("gemini-2.5", 1_048_576),
        ("gemini-2.0", 1_048_576),
    ];
    WINDOWS
        .iter()
        .filter(|(id, _)| model.starts_with(id))
        .max_by_key(|(id, _)| id.len())
        .map(|(_, tokens)| *tokens)
}

/// Your own compaction: the conversation in, the one to go on with out.
pub type CompactFn = Arc<dyn Fn(Vec<Message>) -> BoxFuture<'static, Vec<Message>> + Send + Sync>;

/// How a conversation near its window is made smaller.
#[derive(Clone)]
#[non_exhaustive]
pub enum Compaction {
    /// The outputs of all but the last `keep` tool results are replaced by
    /// a short note; every call keeps its result, so the conversation's
    /// shape is unchanged. The results of the
    /// [`kept_tools`](ContextPolicy::kept_tools) are neither dropped nor
    /// counted among the last.
    DropToolOutputs {
        /// How many of the latest results keep their output.
        keep: usize,
    },
    /// Whole turns go, oldest first: the system messages and the user's
    /// first message stay, and the last `keep` messages, the cut moved
    /// earlier to the model turn that begins them, so that no result loses
    /// its call. The turns that called one of the
    /// [`kept_tools`](ContextPolicy::kept_tools) stay too, with their
    /// results; when nothing else would go, nothing is compacted.
    DropOldTurns {
        /// How many of the latest messages stay, at least.
        keep: usize,
    },
    /// As [`DropOldTurns`](Self::DropOldTurns), with what goes summarised
    /// by `model` and the summary added to the user's first message.
    Summarize {
        /// The model that writes the summary.
        model: Arc<dyn Model>,
        /// How many of the latest messages stay, at least.
        keep: usize,
    },
    /// Your own policy. What it returns must keep each tool result beside
    /// its call; the run checks, and fails (`RunError::Context`) if not.
    Custom(CompactFn),
}

impl std::fmt::Debug for Compaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::DropToolOutputs { keep } => write!(f, "DropToolOutputs {{ keep: {keep} }}"),
            Self::DropOldTurns { keep } => write!(f, "DropOldTurns {{ keep: {keep} }}"),
            Self::Summarize { keep, .. } => write!(f, "Summarize {{ keep: {keep} }}"),
            Self::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// When and how a run's conversation is compacted ([`Agent::context`](super::Agent::context)).
///
/// ```
/// use behest::run::{context_window_of, Compaction, ContextPolicy};
///
/// let window = context_window_of("gpt-4o").unwrap_or(128_000);
/// let policy = ContextPolicy::new(window)
///     .compact_at(0.75)
///     .compaction(Compaction::DropToolOutputs { keep: 3 });
/// # let _ = policy;
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ContextPolicy {
    /// The model's context window, in tokens.
    pub window: u64,
    /// The share of the window past which the conversation is compacted
    /// before the next request. Default 0.8.
    pub compact_at: f64,
    /// How. Default: drop old tool outputs, keeping the last 2.
    pub compaction: Compaction,
    /// The tools whose exchanges every compaction but your own keeps:
    /// their outputs are never dropped, and when old turns go, the model
    /// turns that called them stay, with their results (the outputs of the
    /// other calls of those turns dropped). Default: `search_tools`, whose
    /// results say which deferred tools a run may call
    /// ([`ToolSearch`](super::ToolSearch)).
    pub kept_tools: Vec<String>,
}

impl ContextPolicy {
    /// A window of `window` tokens, compacted past 80% by dropping old tool
    /// outputs.
    pub fn new(window: u64) -> Self {
        Self {
            window,
            compact_at: 0.8,
            compaction: Compaction::DropToolOutputs { keep: 2 },
            kept_tools: vec![super::tool_search::SEARCH_TOOLS.to_owned()],
        }
    }

    /// Keeps the exchanges of the tool `name` through every compaction but
    /// your own, as [`kept_tools`](Self::kept_tools) says: for a tool whose
    /// results the run still needs, however old.
    #[must_use]
    pub fn keep_tool(mut self, name: impl Into<String>) -> Self {
        self.kept_tools.push(name.into());
        self
    }

    /// Compacts past this share of the window (0 to 1).
    #[must_use]
    pub fn compact_at(mut self, share: f64) -> Self {
        self.compact_at = share.clamp(0.0, 1.0);
        self
    }

    /// Compacts this way.
    #[must_use]
    pub fn compaction(mut self, compaction: Compaction) -> Self {
        self.compaction = compaction;
        self
    }

    /// The token count past which the conversation is compacted.
    pub(crate) fn threshold(&self) -> u64 {
        (self.window as f64 * self.compact_at) as u64
    }
}

/// What the note in place of a dropped tool output says.
pub(crate) const DROPPED_OUTPUT: &str = "[output dropped to save context]";

/// About how many tokens `conversation` takes: the last model turn's
/// count of what it read and wrote, plus about a token for each four
/// bytes of what came after it (of all of it, when no turn was counted,
/// or when `compacted` since the last: that count is of what was there
/// before).
pub(crate) fn estimate(conversation: &[Message], compacted: bool) -> u64 {
    let counted = conversation
        .iter()
        .rposition(|message| matches!(message, Message::Assistant(reply) if reply.usage.is_some()));
    let counted = counted.filter(|_| !compacted);
    let (base, rest) = match counted {
        Some(at) => {
            let Message::Assistant(reply) = &conversation[at] else {
                unreachable!("rposition found an assistant message")
            };
            let usage = reply.usage.unwrap_or_default();
            let base = usage
                .input_tokens
                .saturating_add(usage.cached_tokens)
                .saturating_add(usage.cache_write_tokens)
                .saturating_add(usage.output_tokens);
            (base, &conversation[at + 1..])
        }
        None => (0, conversation),
    };
    let bytes: usize = rest.iter().map(message_bytes).sum();
    base.saturating_add((bytes / 4) as u64)
}

fn message_bytes(message: &Message) -> usize {
    match message {
        Message::System { text } | Message::User { text } => text.len(),
        Message::UserParts { parts } => parts
            .iter()
            .map(|part| match part {
                ContentPart::Text { text } => text.len(),
                // An image or a document: a rough share.
                _ => 4_000,
            })
            .sum(),
        Message::Assistant(reply) => {
            reply.text.as_ref().map_or(0, String::len)
                + reply
                    .tool_calls
                    .iter()
                    .map(|call| call.tool_name.len() + call.arguments.to_string().len())
                    .sum::<usize>()
        }
        Message::ToolResult(result) => result.content.len(),
    }
}

/// `conversation` with all but the last `keep` tool results' outputs
/// replaced by a note, the results of the `kept_tools` left out of both
/// (never dropped, not counted among the last): how many were dropped.
pub(crate) fn drop_tool_outputs(
    conversation: &mut [Message],
    keep: usize,
    kept_tools: &[String],
) -> usize {
    let mut results: Vec<&mut ToolResultMessage> = conversation
        .iter_mut()
        .filter_map(|message| match message {
            Message::ToolResult(result) if !kept_tools.contains(&result.tool_name) => Some(result),
            _ => None,
        })
        .collect();
    let old = results.len().saturating_sub(keep);
    results[..old]
        .iter_mut()
        .map(|result| drop_output(result))
        .filter(|dropped| *dropped)
        .count()
}

/// Replaces `result`'s output by the note that says it was dropped:
/// whether it had not been already.
fn drop_output(result: &mut ToolResultMessage) -> bool {
    if result.content == DROPPED_OUTPUT {
        return false;
    }
    result.content = DROPPED_OUTPUT.to_owned();
    result.structured = None;
    result.images.clear();
    result.documents.clear();
    true
}

/// Where old turns may be cut from `conversation`: the messages kept at
/// its head (system messages and the user's first message), and the start
/// of the kept tail (a model turn, so no result loses its call and the
/// tail follows a user message). `None` when there is nothing to cut.
pub(crate) fn cut(conversation: &[Message], keep: usize) -> Option<(usize, usize)> {
    let first_user = conversation
        .iter()
        .position(|message| matches!(message, Message::User { .. } | Message::UserParts { .. }))?;
    let head = first_user + 1;
    // The latest model turn and its results stay, at least.
    let mut tail = conversation.len().saturating_sub(keep.max(1)).max(head);
    while tail > head && !matches!(conversation.get(tail), Some(Message::Assistant(_))) {
        tail -= 1;
    }
    (tail > head).then_some((head, tail))
}

/// Which of the messages between `head` and `tail` go when old turns are
/// dropped, one flag each: all but the model turns that called one of the
/// `kept_tools`, and their results.
pub(crate) fn going(
    conversation: &[Message],
    head: usize,
    tail: usize,
    kept_tools: &[String],
) -> Vec<bool> {
    let range = &conversation[head..tail];
    // The calls of the turns that stay (a run's call ids are unique).
    let staying: HashSet<&str> = range
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(reply)
                if reply
                    .tool_calls
                    .iter()
                    .any(|call| kept_tools.contains(&call.tool_name)) =>
            {
                Some(reply.tool_calls.iter().map(|call| call.call_id.as_str()))
            }
            _ => None,
        })
        .flatten()
        .collect();
    range
        .iter()
        .map(|message| match message {
            Message::Assistant(reply) => !reply
                .tool_calls
                .iter()
                .any(|call| staying.contains(call.call_id.as_str())),
            Message::ToolResult(result) => !staying.contains(result.call_id.as_str()),
            _ => true,
        })
        .collect()
}

/// Where old turns may go, as [`cut`] finds it, and which messages after
/// the head go ([`going`]); `None` when none would, since the turns there
/// are kept ones.
fn old_turns(
    conversation: &[Message],
    keep: usize,
    kept_tools: &[String],
) -> Option<(usize, Vec<bool>)> {
    let (head, tail) = cut(conversation, keep)?;
    let going = going(conversation, head, tail, kept_tools);
    going.contains(&true).then_some((head, going))
}

/// `conversation` without the messages from `head` on that `going` (as
/// [`going`] gives it) says go, with `note` (a summary) added to the user's
/// first message. The results of the other tools than the `kept_tools` in
/// the turns that stay have their outputs dropped. (What the dropped turns
/// used stays in the run's books.)
pub(crate) fn drop_turns(
    conversation: Vec<Message>,
    head: usize,
    going: &[bool],
    note: Option<String>,
    kept_tools: &[String],
) -> Vec<Message> {
    let gone = going.iter().filter(|goes| **goes).count();
    let mut out: Vec<Message> = Vec::with_capacity(conversation.len() - gone);
    for (at, mut message) in conversation.into_iter().enumerate() {
        // Past the head, only kept turns stay, their other outputs dropped.
        if let Some(goes) = at.checked_sub(head).and_then(|at| going.get(at)) {
            if *goes {
                continue;
            }
            if let Message::ToolResult(result) = &mut message {
                if !kept_tools.contains(&result.tool_name) {
                    drop_output(result);
                }
            }
        }
        out.push(message);
    }
    if let Some(note) = note {
        let note = format!("\n\n(Earlier in this conversation, summarised: {note})");
        match out.get_mut(head - 1) {
            Some(Message::User { text }) => text.push_str(&note),
            Some(Message::UserParts { parts }) => parts.push(ContentPart::Text { text: note }),
            _ => {}
        }
    }
    out
}

/// The conversation as plain text, for a model to summarise.
pub(crate) fn as_text<'a>(conversation: impl IntoIterator<Item = &'a Message>) -> String {
    let mut text = String::new();
    for message in conversation {
        let line = match message {
            Message::System { text } => format!("system: {text}"),
            Message::User { text } => format!("user: {text}"),
            Message::UserParts { parts } => {
                let said: Vec<&str> = parts
                    .iter()
                    .filter_map(|part| match part {
                        ContentPart::Text { text } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                format!("user: {}", said.join(" "))
            }
            Message::Assistant(reply) => {
                let calls: Vec<String> = reply
                    .tool_calls
                    .iter()
                    .map(|call| format!("{}({})", call.tool_name, call.arguments))
                    .collect();
                format!(
                    "assistant: {}{}",
                    reply.text.as_deref().unwrap_or_default(),
                    if calls.is_empty() {
                        String::new()
                    } else {
                        format!(" [calls {}]", calls.join(", "))
                    }
                )
            }
            Message::ToolResult(result) => {
                format!("{} returned: {}", result.tool_name, result.content)
            }
        };
        text.push_str(&line);
        text.push('\n');
    }
    text
}

/// Why `conversation` would be refused by a provider: a tool result
/// without its call before it, or a call without its result.
pub(crate) fn broken_pairs(conversation: &[Message]) -> Option<String> {
    let first = conversation
        .iter()
        .find(|message| !matches!(message, Message::System { .. }));
    if let Some(first) = first {
        if !matches!(first, Message::User { .. } | Message::UserParts { .. }) {
            return Some("the conversation does not begin with the user's message".to_owned());
        }
    }
    let mut open: Vec<&str> = Vec::new();
    for message in conversation {
        match message {
            Message::Assistant(reply) => {
                if let Some(id) = open.first() {
                    return Some(format!("the call `{id}` has no result"));
                }
                open = reply
                    .tool_calls
                    .iter()
                    .map(|call| call.call_id.as_str())
                    .collect();
            }
            Message::ToolResult(result) => match open.iter().position(|id| *id == result.call_id) {
                Some(at) => {
                    open.remove(at);
                }
                None => {
                    return Some(format!(
                        "the result of `{}` has no call before it",
                        result.call_id
                    ))
                }
            },
            _ => {
                if let Some(id) = open.first() {
                    return Some(format!("the call `{id}` has no result"));
                }
            }
        }
    }
    open.first()
        .map(|id| format!("the call `{id}` has no result"))
}

/// The stage of context management.
pub(super) struct Context;

impl Stage for Context {
    fn before_request<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
    ) -> Decided<'a, Flow> {
        Box::pin(async move {
            let Some(policy) = run.agent.options.features.get::<ContextPolicy>() else {
                return Flow::Go;
            };
            let compacted = looping.progress.compacted;
            match run
                .compact(&mut looping.transcript, policy, compacted)
                .await
            {
                Ok(done) => {
                    if done {
                        run.rewrote(&looping.transcript);
                    }
                    looping.progress.compacted |= done;
                    Flow::Go
                }
                Err(error) => Flow::End(RunOutcome::failed(error, looping.take())),
            }
        })
    }

    fn after_answer<'a>(
        &'a self,
        _run: &'a Run<'_>,
        looping: &'a mut Looping,
        reply: &'a AssistantMessage,
        _calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        // A turn the provider counted counts what the conversation is now.
        looping.progress.compacted &= reply.usage.is_none();
        Box::pin(std::future::ready(Flow::Go))
    }
}

impl Agent {
    /// Keeps each run's conversation within the model's context window:
    /// before each model request, when the conversation's size (the last
    /// turn's token count plus an estimate of what came after it) passes
    /// `policy`'s share of the window, it is compacted as `policy` says,
    /// every tool result left beside its call, and an
    /// [`EventKind::Compacted`](crate::EventKind::Compacted) event says how much. The run's transcript
    /// is the compacted conversation; its usage still counts what was
    /// dropped.
    ///
    /// ```
    /// use behest::run::{context_window_of, Compaction, ContextPolicy};
    /// use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// let window = context_window_of("gpt-4.1").unwrap();
    /// let agent = Agent::new(ScriptedModel::new([]), ToolRuntime::new(ToolRegistry::new()))
    ///     .context(ContextPolicy::new(window).compaction(Compaction::DropOldTurns { keep: 20 }));
    /// # let _ = agent;
    /// ```
    #[must_use]
    pub fn context(mut self, policy: ContextPolicy) -> Self {
        self.options_mut().features.set(policy);
        self
    }
}

impl Run<'_> {
    /// Compacts `transcript` as `policy` says when it is past the policy's
    /// share of the window: whether it did.
    async fn compact(
        &self,
        transcript: &mut Vec<Message>,
        policy: &ContextPolicy,
        compacted: bool,
    ) -> Result<bool, super::RunError> {
        let before = estimate(transcript, compacted);
        if before <= policy.threshold() {
            return Ok(false);
        }
        let context = |message: String| super::RunError::Context { message };
        match &policy.compaction {
            Compaction::DropToolOutputs { keep } => {
                if drop_tool_outputs(transcript, *keep, &policy.kept_tools) == 0 {
                    return Ok(false);
                }
            }
            Compaction::DropOldTurns { keep } => {
                let Some((head, going)) = old_turns(transcript, *keep, &policy.kept_tools) else {
                    return Ok(false);
                };
                *transcript = drop_turns(
                    std::mem::take(transcript),
                    head,
                    &going,
                    None,
                    &policy.kept_tools,
                );
            }
            Compaction::Summarize { model, keep } => {
                let Some((head, going)) = old_turns(transcript, *keep, &policy.kept_tools) else {
                    return Ok(false);
                };
                // What goes is summarised; the kept turns stay as they are.
                let gone = transcript[head..]
                    .iter()
                    .zip(&going)
                    .filter_map(|(message, goes)| goes.then_some(message));
                let ask = [
                    Message::system(
                        "Summarise the conversation below for the assistant that goes on with it: keep every fact, name, number, decision and open question; leave out greetings and repetition.",
                    ),
                    Message::user(as_text(gone)),
                ];
                const SUMMARISER: &str = "the model that summarises old turns";
                let summarise = async move {
                    let asked =
                        super::panics::caught_async(SUMMARISER, || model.respond_dyn(&ask, &[]));
                    match asked.await {
                        Ok(Ok(reply)) => {
                            serde_json::json!({"summary": reply.text, "usage": reply.usage})
                        }
                        Ok(Err(error)) => serde_json::json!({"error": error.to_string()}),
                        Err(super::RunError::Panicked { message, .. }) => {
                            serde_json::json!({ "panicked": message })
                        }
                        Err(error) => serde_json::json!({"error": error.to_string()}),
                    }
                };
                // Journaled: a run played again gets the summary it had.
                let summarised = self
                    .decide("summary of old turns", Box::pin(summarise))
                    .await;
                if let Some(message) = summarised["panicked"].as_str() {
                    return Err(super::RunError::Panicked {
                        part: SUMMARISER.to_owned(),
                        message: message.to_owned(),
                    });
                }
                if let Some(error) = summarised["error"].as_str() {
                    return Err(context(format!("the summary failed: {error}")));
                }
                // The summary's tokens are the run's, in its books.
                let spent: Option<crate::Usage> =
                    serde_json::from_value(summarised["usage"].clone())
                        .ok()
                        .flatten();
                if let Some(reached) = self.lineage.books.tokens(spent.as_ref()) {
                    return Err(reached.error());
                }
                let summary = summarised["summary"]
                    .as_str()
                    .filter(|text| !text.trim().is_empty())
                    .ok_or_else(|| context("the summary came back empty".to_owned()))?
                    .to_owned();
                *transcript = drop_turns(
                    std::mem::take(transcript),
                    head,
                    &going,
                    Some(summary),
                    &policy.kept_tools,
                );
            }
            Compaction::Custom(compact) => {
                let given = transcript.clone();
                let compacted = super::panics::caught_async("the context policy", || {
                    compact(std::mem::take(transcript))
                })
                .await
                .inspect_err(|_| *transcript = given)?;
                if let Some(why) = broken_pairs(&compacted) {
                    *transcript = compacted;
                    return Err(context(why));
                }
                *transcript = compacted;
            }
        }
        let after = estimate(transcript, true);
        tracing::info!(before, after, "the conversation was compacted");
        self.emit(super::events::EventKind::Compacted { before, after });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conversation::AssistantMessage;
    use crate::tool::ToolCall;

    fn round(n: usize) -> [Message; 2] {
        let id = format!("c{n}");
        [
            Message::Assistant(AssistantMessage::tool_calls([ToolCall::new(
                id.clone(),
                "look",
                "{}",
            )])),
            Message::ToolResult(ToolResultMessage::new(id, "look", "x".repeat(400))),
        ]
    }

    fn conversation(rounds: usize) -> Vec<Message> {
        let mut conversation = vec![Message::system("be brief"), Message::user("go")];
        for n in 0..rounds {
            conversation.extend(round(n));
        }
        conversation
    }

    #[test]
    fn every_cut_keeps_the_head_and_begins_the_tail_with_a_model_turn() {
        for rounds in 0..6 {
            for keep in 0..14 {
                let conversation = conversation(rounds);
                let latest = conversation.last().cloned();
                let Some((head, tail)) = cut(&conversation, keep) else {
                    continue;
                };
                assert_eq!(head, 2);
                assert!(matches!(conversation[tail], Message::Assistant(_)));
                let going = going(&conversation, head, tail, &[]);
                let kept = drop_turns(conversation, head, &going, Some("a summary".into()), &[]);
                assert_eq!(broken_pairs(&kept), None, "{rounds} rounds, keep {keep}");
                assert_eq!(kept.last().cloned(), latest, "the latest result stays");
                assert!(matches!(&kept[1], Message::User { text } if text.contains("a summary")));
            }
        }
    }

    #[test]
    fn dropping_outputs_keeps_the_latest_and_every_pair() {
        let mut conversation = conversation(5);
        assert_eq!(drop_tool_outputs(&mut conversation, 2, &[]), 3);
        assert_eq!(
            drop_tool_outputs(&mut conversation, 2, &[]),
            0,
            "dropped once"
        );
        assert_eq!(broken_pairs(&conversation), None);
        let kept: Vec<bool> = conversation
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content != DROPPED_OUTPUT),
                _ => None,
            })
            .collect();
        assert_eq!(kept, [false, false, false, true, true]);
    }

    /// An early model turn that called a kept tool (`search_tools`) beside
    /// another, in a conversation of five later rounds.
    fn with_a_search() -> Vec<Message> {
        let mut conversation = vec![
            Message::system("be brief"),
            Message::user("go"),
            Message::Assistant(AssistantMessage::tool_calls([
                ToolCall::new("s0", "search_tools", r#"{"query": "look"}"#),
                ToolCall::new("l0", "look", "{}"),
            ])),
            Message::ToolResult(ToolResultMessage::new("s0", "search_tools", "found: look")),
            Message::ToolResult(ToolResultMessage::new("l0", "look", "y".repeat(400))),
        ];
        for n in 1..=5 {
            conversation.extend(round(n));
        }
        conversation
    }

    #[test]
    fn the_exchanges_of_kept_tools_outlast_compaction() {
        let kept = ["search_tools".to_owned()];
        let output_of = |conversation: &[Message], id: &str| {
            conversation.iter().find_map(|message| match message {
                Message::ToolResult(result) if result.call_id == id => Some(result.content.clone()),
                _ => None,
            })
        };
        // Outputs dropped: the search's stays, and does not count among
        // the latest kept.
        let mut conversation = with_a_search();
        assert_eq!(drop_tool_outputs(&mut conversation, 2, &kept), 4);
        assert_eq!(output_of(&conversation, "s0").unwrap(), "found: look");
        assert_eq!(output_of(&conversation, "l0").unwrap(), DROPPED_OUTPUT);
        assert_eq!(output_of(&conversation, "c5").unwrap(), "x".repeat(400));
        // Old turns dropped: the turn that searched stays with both its
        // results, the other's output dropped; the rounds between go.
        for note in [None, Some("a summary".to_owned())] {
            let conversation = with_a_search();
            let (head, going) = old_turns(&conversation, 2, &kept).unwrap();
            let compacted = drop_turns(conversation, head, &going, note, &kept);
            assert_eq!(broken_pairs(&compacted), None);
            assert_eq!(output_of(&compacted, "s0").unwrap(), "found: look");
            assert_eq!(output_of(&compacted, "l0").unwrap(), DROPPED_OUTPUT);
            assert_eq!(output_of(&compacted, "c1"), None);
            assert_eq!(compacted.len(), 2 + 3 + 2);
        }
        // Nothing kept: the search goes with its turn.
        let conversation = with_a_search();
        let (head, going) = old_turns(&conversation, 2, &[]).unwrap();
        let compacted = drop_turns(conversation, head, &going, None, &[]);
        assert_eq!(output_of(&compacted, "s0"), None);
        assert_eq!(ContextPolicy::new(1_000).kept_tools, ["search_tools"]);
    }

    /// Searches in several turns, one beside other calls and one just
    /// before the kept tail: every cut keeps each search's turn whole and
    /// every result beside its call, and a cut where only kept turns would
    /// go is no cut at all.
    #[test]
    fn every_cut_keeps_the_kept_turns_whole() {
        let kept = ["search_tools".to_owned()];
        let search = |n: usize| {
            [
                Message::Assistant(AssistantMessage::tool_calls([
                    ToolCall::new(format!("s{n}"), "search_tools", "{}"),
                    ToolCall::new(format!("p{n}"), "look", "{}"),
                ])),
                Message::ToolResult(ToolResultMessage::new(
                    format!("s{n}"),
                    "search_tools",
                    "found",
                )),
                Message::ToolResult(ToolResultMessage::new(
                    format!("p{n}"),
                    "look",
                    "z".repeat(99),
                )),
            ]
        };
        let mut conversation = vec![Message::system("be brief"), Message::user("go")];
        for n in 0..6 {
            if n % 2 == 0 {
                conversation.extend(search(n));
            } else {
                conversation.extend(round(n));
            }
        }
        for keep in 0..conversation.len() + 2 {
            let Some((head, going)) = old_turns(&conversation, keep, &kept) else {
                continue;
            };
            let compacted = drop_turns(conversation.clone(), head, &going, None, &kept);
            assert_eq!(broken_pairs(&compacted), None, "keep {keep}");
            assert!(
                compacted.len() < conversation.len(),
                "keep {keep}: something went"
            );
            for n in [0, 2, 4] {
                assert!(
                    compacted.iter().any(|message| matches!(message,
                        Message::ToolResult(result) if result.call_id == format!("s{n}")
                            && result.content == "found")),
                    "keep {keep}: search {n} stays"
                );
            }
        }
        // Only the searches before the tail: nothing goes.
        let only_searches: Vec<Message> = [Message::system("be brief"), Message::user("go")]
            .into_iter()
            .chain(search(0))
            .chain(search(1))
            .chain(round(2))
            .collect();
        assert!(old_turns(&only_searches, 2, &kept).is_none());
        assert!(old_turns(&only_searches, 2, &[]).is_some());
    }

    #[test]
    fn a_result_without_its_call_is_found() {
        let mut conversation = conversation(2);
        conversation.remove(2);
        assert!(broken_pairs(&conversation).unwrap().contains("no call"));
        // A last call left without its result.
        let mut conversation = self::conversation(2);
        conversation.pop();
        assert!(broken_pairs(&conversation).unwrap().contains("no result"));
        // A conversation that begins with the model.
        let mut conversation = self::conversation(2);
        conversation.remove(1);
        assert!(broken_pairs(&conversation)
            .unwrap()
            .contains("begin with the user"));
        let mut conversation = self::conversation(2);
        conversation.remove(3);
        assert!(broken_pairs(&conversation).unwrap().contains("no result"));
    }

    #[test]
    fn the_estimate_starts_from_the_last_counted_turn() {
        let mut conversation = conversation(1);
        assert_eq!(estimate(&conversation, false), (8 + 2 + 4 + 2 + 400) / 4);
        if let Message::Assistant(reply) = &mut conversation[2] {
            reply.usage = Some(crate::Usage {
                input_tokens: 1_000,
                output_tokens: 10,
                ..crate::Usage::default()
            });
        }
        assert_eq!(estimate(&conversation, false), 1_010 + 100);
        assert_eq!(estimate(&conversation, true), (8 + 2 + 4 + 2 + 400) / 4);
    }
}

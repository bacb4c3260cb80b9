//! A run's transcript kept by reference to its journal. Nearly every
//! message a run adds is what one of its journal entries already holds: a
//! model turn's answer, or a call's result. Keeping those again in state
//! would double what Restate keeps (a state write is journaled, then
//! stored). So the run keeps, in its pages, [`Part`]s: "the next `count`
//! messages the journal's entries give, from the entry named `from`", or,
//! for a message no entry gives (a reminder, a call the runtime refused
//! before it ran), the message itself; and where the run changed its
//! transcript in place (instructions put first, a guardrail's rewrite, a
//! compaction), the change. The run's input is its invocation's input, in
//! the journal too.
//!
//! The writer ([`Kept`], in the run) and the reader ([`rebuild`], in the
//! client) make a journal entry's message with the same function
//! ([`Derive::message`]), from the same JSON: what one says, the other
//! reads back.

use std::collections::{HashMap, HashSet, VecDeque};

use behest::conversation::ToolResultMessage;
use behest::{AssistantMessage, Message, ToolCallResult};
use serde::{Deserialize, Serialize};

use crate::wire::JournaledResult;

/// A stretch of the transcript, as a page keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Part {
    /// The next `count` messages that journal entries give: from the entry
    /// named `from` (the first of that name past those already taken), or,
    /// without it, from the one after the last taken.
    Entries {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
        count: usize,
    },
    /// A message no entry gives.
    Message(Message),
    /// The run changed its transcript other than by adding to it
    /// (instructions put first, a guardrail's rewrite, a compaction, a
    /// handoff's filter): the messages from `at`, `remove` of them, are
    /// `insert`.
    Splice {
        at: usize,
        remove: usize,
        insert: Vec<Message>,
    },
}

/// The name of a model turn's entry in a run's journal, at the root.
pub(crate) fn model_turn_entry(index: usize) -> String {
    format!("model turn {index}")
}

/// The name of a call's entry in a run's journal, at the root; `attempt`
/// counts from 0.
pub(crate) fn call_entry(call_id: &str, attempt: usize) -> String {
    if attempt == 0 {
        format!("call {call_id}")
    } else {
        format!("call {call_id} (again, {attempt})")
    }
}

/// The name of the entry that keeps a call's result when the run was
/// cancelled while it ran.
pub(crate) fn after_cancel_entry(entry: &str) -> String {
    format!("{entry} (after the cancellation)")
}

/// Makes the messages that journal entries give, in the journal's order.
#[derive(Debug, Default)]
pub(crate) struct Derive {
    /// The tools of the calls the model asked for, by call id.
    tools: HashMap<String, String>,
}

impl Derive {
    /// The message that the entry `name`, holding `value` (its JSON), gives
    /// the transcript, if any: a root model turn's answer, or a root call's
    /// known result.
    pub(crate) fn message(&mut self, name: &str, value: &[u8]) -> Option<Message> {
        if name.strip_prefix("model turn ").is_some() {
            let turn: Result<AssistantMessage, String> = serde_json::from_slice(value).ok()?;
            let answer = turn.ok()?;
            for call in &answer.tool_calls {
                self.tools
                    .insert(call.call_id.clone(), call.tool_name.clone());
            }
            return Some(Message::Assistant(answer));
        }
        let call = name.strip_prefix("call ")?;
        let (call_id, tool_name) = self.call_of(call)?;
        let result: JournaledResult = serde_json::from_slice(value).ok()?;
        let result = ToolCallResult {
            call_id,
            tool_name,
            outcome: result.known()?,
        };
        Some(Message::ToolResult(ToolResultMessage::from(&result)))
    }

    /// The call (its id and tool) a call entry's name names, past `call `.
    fn call_of(&self, named: &str) -> Option<(String, String)> {
        let call_id = if self.tools.contains_key(named) {
            named
        } else if let Some(id) = named.strip_suffix(" (after the cancellation)") {
            self.call_of(id).map(|_| id)?
        } else {
            let (id, again) = named.rsplit_once(" (again, ")?;
            again.strip_suffix(')')?.parse::<usize>().ok()?;
            id
        };
        let tool_name = self.tools.get(call_id)?;
        Some((call_id.to_owned(), tool_name.clone()))
    }
}

/// How many messages entries gave that the run has not added are held
/// for it to add: past them, the oldest is passed over.
const HELD: usize = 64;

/// The writer's side: turns the run's journal entries and messages into
/// [`Part`]s.
#[derive(Debug, Default)]
pub(crate) struct Kept {
    derive: Derive,
    /// Messages entries gave that the run has not added yet, in the
    /// journal's order.
    given: VecDeque<Given>,
    /// The entries that failed here since the last message given.
    broken: Vec<String>,
    /// Whether the run has taken a message from the entries yet.
    taken: bool,
    /// The names of the entries between the last message taken and the
    /// first one held that the reader may take for a message (passed over
    /// here, or failed here): with any, the next part is named, and not
    /// from an entry named as one of them, which the reader would find
    /// first.
    passed: HashSet<String>,
    /// A digest of each message of the transcript the reader reads back,
    /// to tell where the run's own differs.
    seen: Vec<u64>,
}

/// A message an entry gave.
#[derive(Debug)]
struct Given {
    /// The entry's name.
    name: String,
    message: Message,
    /// The entries that failed here between it and the one before.
    broken_before: Vec<String>,
}

impl Kept {
    /// The transcript of a run given `input`.
    pub(crate) fn new(input: &[Message]) -> Self {
        Self {
            seen: input.iter().map(digest).collect(),
            ..Self::default()
        }
    }

    /// The length of the transcript the reader reads back.
    pub(crate) fn len(&self) -> usize {
        self.seen.len()
    }

    /// The run's transcript is `truth`: what the reader would read back
    /// otherwise is changed to it, in `parts`.
    pub(crate) fn settle(&mut self, truth: &[Message], parts: &mut Vec<Part>) {
        let digests: Vec<u64> = truth.iter().map(digest).collect();
        // Last first, so that each applies where the one before left
        // the places it names.
        for (at, remove, insert) in differences(&self.seen, &digests).into_iter().rev() {
            parts.push(Part::Splice {
                at,
                remove,
                insert: truth[insert].to_vec(),
            });
        }
        self.seen = digests;
    }

    /// The run journaled the entry `name`, holding `value`.
    pub(crate) fn entry(&mut self, name: &str, value: &[u8]) {
        if let Some(message) = self.derive.message(name, value) {
            self.given.push_back(Given {
                name: name.to_owned(),
                message,
                broken_before: std::mem::take(&mut self.broken),
            });
            if self.given.len() > HELD {
                self.pass_over(1);
            }
        }
    }

    /// The entry `name` failed here (a cancellation, say): the journal may
    /// yet hold a result for it that this run never read.
    pub(crate) fn broken(&mut self, name: &str) {
        self.broken.push(name.to_owned());
    }

    /// Passes over the `count` oldest messages given.
    fn pass_over(&mut self, count: usize) {
        for given in self.given.drain(..count) {
            self.passed.extend(given.broken_before);
            self.passed.insert(given.name);
        }
    }

    /// The run added `message`: taken from the entries when one gave it,
    /// added to `parts`.
    pub(crate) fn message(&mut self, message: Message, parts: &mut Vec<Part>) {
        self.seen.push(digest(&message));
        let Some(at) = self.given.iter().position(|given| given.message == message) else {
            parts.push(Part::Message(message));
            return;
        };
        self.pass_over(at);
        let given = self.given.pop_front().expect("found above");
        self.passed.extend(given.broken_before);
        let follows = self.taken && self.passed.is_empty();
        if !follows && self.passed.contains(&given.name) {
            // Named, it would be read as an entry passed over.
            parts.push(Part::Message(given.message));
            self.passed.insert(given.name);
            return;
        }
        self.passed.clear();
        self.taken = true;
        match parts.last_mut() {
            Some(Part::Entries { count, .. }) if follows => *count += 1,
            _ => parts.push(Part::Entries {
                from: (!follows).then_some(given.name),
                count: 1,
            }),
        }
    }
}

/// How far past a difference [`differences`] looks for the two
/// transcripts to agree again.
const LOOK_AHEAD: usize = 32;

/// What turns the messages digested as `from` into those digested as `to`:
/// `(at, remove, insert)`, each a place in `from`, how many of its
/// messages go, and which of `to`'s come instead; in order.
fn differences(from: &[u64], to: &[u64]) -> Vec<(usize, usize, std::ops::Range<usize>)> {
    let (mut i, mut j) = (0, 0);
    let mut changes = Vec::new();
    while i < from.len() || j < to.len() {
        if i < from.len() && j < to.len() && from[i] == to[j] {
            i += 1;
            j += 1;
            continue;
        }
        // The nearest place past which both go on alike.
        let again = (1..=2 * LOOK_AHEAD).find_map(|k| {
            (k.saturating_sub(LOOK_AHEAD)..=k.min(LOOK_AHEAD)).find_map(|skip| {
                let (a, b) = (i + skip, j + k - skip);
                (a < from.len() && b < to.len() && from[a] == to[b]).then_some((skip, k - skip))
            })
        });
        let (skip, take) = again.unwrap_or((from.len() - i, to.len() - j));
        changes.push((i, skip, j..j + take));
        i += skip;
        j += take;
    }
    changes
}

/// A digest of `message`, the same for equal messages.
fn digest(message: &Message) -> u64 {
    use std::hash::Hasher;

    /// Hashes what is written to it.
    struct Digest(std::collections::hash_map::DefaultHasher);
    impl std::io::Write for Digest {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.write(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut digest = Digest(std::collections::hash_map::DefaultHasher::new());
    // A message always serializes.
    let _ = serde_json::to_writer(&mut digest, message);
    digest.0.finish()
}

/// The reader's side: the transcript of a run whose input was `input`,
/// whose journal's entries are `entries` (names and JSON values, in the
/// journal's order, those that failed left out), and whose pages keep
/// `parts`. `Err` says what did not match.
pub(crate) fn rebuild(
    input: Vec<Message>,
    entries: impl IntoIterator<Item = (String, Vec<u8>)>,
    parts: impl IntoIterator<Item = Part>,
) -> Result<Vec<Message>, String> {
    let mut derive = Derive::default();
    let given: Vec<(String, Message)> = entries
        .into_iter()
        .filter_map(|(name, value)| derive.message(&name, &value).map(|message| (name, message)))
        .collect();
    let mut transcript = input;
    // The first message given not yet taken.
    let mut next = 0;
    for part in parts {
        match part {
            Part::Message(message) => transcript.push(message),
            Part::Splice { at, remove, insert } => {
                let end = at
                    .checked_add(remove)
                    .filter(|end| *end <= transcript.len())
                    .ok_or_else(|| {
                        format!(
                            "a change of messages {at}..+{remove} past the transcript's {}",
                            transcript.len()
                        )
                    })?;
                transcript.splice(at..end, insert);
            }
            Part::Entries { from, count } => {
                if let Some(from) = from {
                    next += given[next.min(given.len())..]
                        .iter()
                        .position(|(name, _)| *name == from)
                        .ok_or_else(|| format!("the journal has no entry `{from}` to read"))?;
                }
                let end = next.checked_add(count);
                let taken = end.and_then(|end| given.get(next..end)).ok_or_else(|| {
                    format!("the journal has fewer entries than the run read ({count} past {next})")
                })?;
                transcript.extend(taken.iter().map(|(_, message)| message.clone()));
                next += count;
            }
        }
    }
    Ok(transcript)
}

#[cfg(test)]
mod tests {
    use super::*;
    use behest::{ToolCall, ToolOutput};

    fn turn(calls: &[&str]) -> Vec<u8> {
        let answer = AssistantMessage::text("").with_tool_calls(
            calls
                .iter()
                .map(|id| ToolCall::new(*id, "tally", serde_json::json!({}))),
        );
        serde_json::to_vec(&Ok::<_, String>(answer)).unwrap()
    }

    fn result(text: &str) -> Vec<u8> {
        serde_json::to_vec(&JournaledResult::Output(ToolOutput::text(text))).unwrap()
    }

    /// Writes `entries` and `added` as a run would (each entry's message
    /// before `added[i]` is added when `after[i]` entries are journaled),
    /// then reads the transcript back.
    fn round_trip(entries: &[(String, Vec<u8>)], added: &[(usize, Message)]) -> Vec<Part> {
        let mut kept = Kept::default();
        let mut parts = Vec::new();
        let mut journaled = 0;
        for (after, message) in added {
            while journaled < *after {
                let (name, value) = &entries[journaled];
                kept.entry(name, value);
                journaled += 1;
            }
            kept.message(message.clone(), &mut parts);
        }
        parts
    }

    #[test]
    fn messages_the_journal_gives_are_kept_as_counts_and_read_back() {
        let entries = vec![
            (model_turn_entry(0), turn(&["c0", "c1"])),
            ("start call c0".to_owned(), b"null".to_vec()),
            (call_entry("c0", 0), result("1")),
            (call_entry("c1", 0), result("2")),
            (
                model_turn_entry(1),
                serde_json::to_vec(&Ok::<_, String>(AssistantMessage::text("done"))).unwrap(),
            ),
        ];
        let mut derive = Derive::default();
        let messages: Vec<Option<Message>> = entries
            .iter()
            .map(|(name, value)| derive.message(name, value))
            .collect();
        assert!(messages[1].is_none());
        let message = |i: usize| messages[i].clone().unwrap();
        let added = [
            (1, message(0)),
            (4, message(2)),
            (4, Message::user("a reminder")),
            (4, message(3)),
            (5, message(4)),
        ];
        let parts = round_trip(&entries, &added);
        assert_eq!(
            parts,
            [
                Part::Entries {
                    from: Some(model_turn_entry(0)),
                    count: 2
                },
                Part::Message(Message::user("a reminder")),
                Part::Entries {
                    from: None,
                    count: 2
                },
            ]
        );
        let input = vec![Message::user("count 2")];
        let transcript = rebuild(input.clone(), entries, parts).unwrap();
        let mut expected = input;
        expected.extend(added.into_iter().map(|(_, message)| message));
        assert_eq!(transcript, expected);
    }

    /// A message an entry gave that the run did not add (a result the run
    /// changed), and an entry that failed here but holds a result in the
    /// journal: what follows each is named.
    #[test]
    fn what_the_run_passed_over_is_skipped_by_name() {
        let entries = vec![
            (model_turn_entry(0), turn(&["c0", "c1"])),
            (call_entry("c0", 0), result("raw")),
            (call_entry("c1", 0), result("late")),
            (after_cancel_entry(&call_entry("c1", 0)), result("kept")),
        ];
        let mut derive = Derive::default();
        let given: Vec<Message> = entries
            .iter()
            .filter_map(|(name, value)| derive.message(name, value))
            .collect();
        assert_eq!(given.len(), 4, "{given:?}");
        let mut kept = Kept::default();
        let mut parts = Vec::new();
        kept.entry(&entries[0].0, &entries[0].1);
        kept.message(given[0].clone(), &mut parts);
        kept.entry(&entries[1].0, &entries[1].1);
        // Here the second call's entry failed (cancelled), though the
        // journal has its result; the run kept it in an entry of its own.
        kept.broken(&entries[2].0);
        kept.entry(&entries[3].0, &entries[3].1);
        kept.message(Message::user("changed"), &mut parts);
        kept.message(given[3].clone(), &mut parts);
        let transcript = rebuild(Vec::new(), entries, parts.clone()).unwrap();
        assert_eq!(
            transcript,
            [given[0].clone(), Message::user("changed"), given[3].clone()],
            "{parts:?}"
        );
    }

    /// Instructions put first and a rewritten answer cost those messages,
    /// not the transcript.
    #[test]
    fn a_change_in_place_keeps_only_what_changed() {
        let input = vec![Message::user("hello")];
        let mut kept = Kept::new(&input);
        let mut parts = Vec::new();
        let mut truth = input.clone();
        truth.insert(0, Message::system("be brief"));
        kept.settle(&truth, &mut parts);
        for at in 0..10 {
            let message = Message::user(format!("message {at}"));
            kept.message(message.clone(), &mut parts);
            truth.push(message);
        }
        *truth.last_mut().unwrap() = Message::user("redacted");
        kept.settle(&truth, &mut parts);
        let splices: Vec<&Part> = parts
            .iter()
            .filter(|part| matches!(part, Part::Splice { .. }))
            .collect();
        assert_eq!(
            splices,
            [
                &Part::Splice {
                    at: 0,
                    remove: 0,
                    insert: vec![Message::system("be brief")]
                },
                &Part::Splice {
                    at: 11,
                    remove: 1,
                    insert: vec![Message::user("redacted")]
                },
            ]
        );
        assert_eq!(rebuild(input, Vec::new(), parts), Ok(truth));
    }

    #[test]
    fn a_part_past_the_journal_is_an_error_not_a_panic() {
        let parts = [Part::Entries {
            from: None,
            count: 3,
        }];
        let error = rebuild(Vec::new(), Vec::new(), parts).unwrap_err();
        assert!(error.contains("fewer entries"), "{error}");
        let parts = [Part::Entries {
            from: None,
            count: usize::MAX,
        }];
        let error = rebuild(Vec::new(), Vec::new(), parts).unwrap_err();
        assert!(error.contains("fewer entries"), "{error}");
        let parts = [Part::Entries {
            from: Some("model turn 9".into()),
            count: 1,
        }];
        let error = rebuild(Vec::new(), Vec::new(), parts).unwrap_err();
        assert!(error.contains("model turn 9"), "{error}");
        let parts = [Part::Splice {
            at: 1,
            remove: usize::MAX,
            insert: Vec::new(),
        }];
        let error = rebuild(vec![Message::user("a")], Vec::new(), parts).unwrap_err();
        assert!(error.contains("past the transcript"), "{error}");
    }

    /// What a run does, for the property below.
    #[derive(Debug, Clone)]
    enum Step {
        /// A model turn asking for calls of these ids (from a few, so that
        /// ids repeat across turns).
        Turn(Vec<u8>),
        /// A call's entry; `seen` false when it failed here but the journal
        /// holds a result.
        Call {
            id: u8,
            attempt: u8,
            after_cancel: bool,
            text: u8,
            seen: bool,
        },
        /// The run adds a message an entry gave (one of those held, in any
        /// order), or a changed one.
        Add { pick: usize, changed: bool },
        /// The run adds a message of its own.
        Own(u8),
        /// The run changes its transcript in place: instructions put
        /// first, a message rewritten, messages dropped, or replaced by a
        /// summary.
        Rewrite { how: u8, at: usize, count: usize },
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            proptest::collection::vec(0..4u8, 0..3).prop_map(Step::Turn),
            (
                0..4u8,
                0..3u8,
                any::<bool>(),
                0..3u8,
                proptest::bool::weighted(0.8)
            )
                .prop_map(|(id, attempt, after_cancel, text, seen)| Step::Call {
                    id,
                    attempt,
                    after_cancel,
                    text,
                    seen
                }),
            (0..4usize, proptest::bool::weighted(0.2))
                .prop_map(|(pick, changed)| Step::Add { pick, changed }),
            (0..3u8).prop_map(Step::Own),
            (0..4u8, 0..40usize, 0..5usize).prop_map(|(how, at, count)| Step::Rewrite {
                how,
                at,
                count
            }),
        ]
    }

    proptest::proptest! {
        /// Whatever a run journals and adds, in whatever order, passing
        /// over what it likes, with entries failing here that the journal
        /// holds: the reader reads back the transcript the run added.
        #[test]
        fn the_reader_reads_back_what_the_run_added(
            steps in proptest::collection::vec(step(), 0..60),
        ) {
            let input = vec![Message::user("the input")];
            let mut kept = Kept::new(&input);
            let mut parts = Vec::new();
            let mut journal = Vec::new();
            let mut truth = input.clone();
            let mut turns = 0;
            for step in steps {
                match step {
                    Step::Turn(ids) => {
                        let ids: Vec<String> = ids.iter().map(|id| format!("c{id}")).collect();
                        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                        let name = model_turn_entry(turns);
                        turns += 1;
                        let value = turn(&ids);
                        kept.entry(&name, &value);
                        journal.push((name, value));
                    }
                    Step::Call { id, attempt, after_cancel, text, seen } => {
                        let mut name = call_entry(&format!("c{id}"), attempt.into());
                        if after_cancel {
                            name = after_cancel_entry(&name);
                        }
                        let value = result(&text.to_string());
                        if seen {
                            kept.entry(&name, &value);
                        } else {
                            kept.broken(&name);
                        }
                        journal.push((name, value));
                    }
                    Step::Add { pick, changed } => {
                        let Some(Given { message, .. }) = kept.given.get(pick % kept.given.len().max(1)) else {
                            continue;
                        };
                        let message = if changed {
                            Message::user(format!("changed {message:?}"))
                        } else {
                            message.clone()
                        };
                        kept.message(message.clone(), &mut parts);
                        truth.push(message);
                    }
                    Step::Own(text) => {
                        let message = Message::user(text.to_string());
                        kept.message(message.clone(), &mut parts);
                        truth.push(message);
                    }
                    Step::Rewrite { how, at, count } => {
                        let at = at % (truth.len() + 1);
                        let end = (at + count).min(truth.len());
                        match how {
                            0 => truth.insert(0, Message::system("instructions")),
                            1 if at < truth.len() => truth[at] = Message::user("rewritten"),
                            2 => {
                                truth.drain(at..end);
                            }
                            _ => {
                                truth.splice(at..end, [Message::user("a summary")]);
                            }
                        }
                        kept.settle(&truth, &mut parts);
                    }
                }
            }
            // The run's end settles its last word.
            kept.settle(&truth, &mut parts);
            proptest::prop_assert_eq!(kept.len(), truth.len());
            let read = rebuild(input, journal, parts.clone());
            proptest::prop_assert_eq!(read, Ok(truth), "{:?}", parts);
        }
    }
}

//! The call ids of a run, kept unique.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use crate::conversation::{AssistantMessage, Message, ReasoningPlace};

/// A new id, `{prefix}_{nanoseconds}_{count}`: unique in the process (the
/// count) and unlikely to meet another process's (the clock).
pub(crate) fn fresh_id(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_nanos());
    format!(
        "{prefix}_{nanos:x}_{}",
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// The call ids of a run, kept unique: answers and results are matched by
/// id, and a model may repeat one (or leave it empty) within a turn or
/// across turns. A repeated id gets a suffix, in the transcript too, so
/// that the provider sees each call answered once.
#[derive(Default)]
pub(super) struct CallIds {
    seen: HashSet<String>,
}

impl CallIds {
    /// The ids of a run whose conversation is `conversation`: those of its
    /// calls are taken.
    pub fn seeded(conversation: &[Message]) -> Self {
        let mut ids = Self::default();
        ids.seed(conversation);
        ids
    }

    /// Takes the ids of the calls already in `conversation` as used.
    fn seed(&mut self, conversation: &[Message]) {
        for message in conversation {
            if let Message::Assistant(reply) = message {
                self.seen
                    .extend(reply.tool_calls.iter().map(|call| call.call_id.clone()));
            }
        }
    }

    /// Renames repeated ids in `reply`, and the reasoning tied to a renamed
    /// call with it: the k-th call of an id keeps the k-th piece of
    /// reasoning placed on that id.
    pub fn make_unique(&mut self, reply: &mut AssistantMessage) {
        let mut renamed: Vec<(String, usize, String)> = Vec::new();
        let mut occurrences: HashMap<String, usize> = HashMap::new();
        for call in &mut reply.tool_calls {
            let original = call.call_id.clone();
            let nth = occurrences.entry(original.clone()).or_default();
            *nth += 1;
            if call.call_id.is_empty() {
                call.call_id = "call".to_owned();
            }
            if !self.seen.contains(&call.call_id) {
                self.seen.insert(call.call_id.clone());
            } else {
                let unique = (2..)
                    .map(|n| format!("{}_{n}", call.call_id))
                    .find(|id| !self.seen.contains(id))
                    .expect("an unused suffix exists");
                self.seen.insert(unique.clone());
                call.call_id = unique;
            }
            if call.call_id != original {
                renamed.push((original, *nth, call.call_id.clone()));
            }
        }
        let mut seen_places: HashMap<String, usize> = HashMap::new();
        for piece in &mut reply.reasoning {
            let ReasoningPlace::Call { call_id } = &mut piece.place else {
                continue;
            };
            let nth = seen_places.entry(call_id.clone()).or_default();
            *nth += 1;
            if let Some((_, _, unique)) = renamed
                .iter()
                .find(|(original, k, _)| original == call_id && k == nth)
            {
                call_id.clone_from(unique);
            }
        }
    }
}

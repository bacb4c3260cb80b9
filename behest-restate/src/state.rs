//! How a run's state is laid out in Restate, so that its journal grows
//! with the run, not with its square: a small header (where the run
//! stands and what it waits for), written when that changes, and pages of
//! what the steps added (their events, the transcript's new messages, the
//! step count after them), each written once: every few steps, and
//! whenever the run waits or ends. A status is
//! assembled from the header and the pages, by the `status` handler or,
//! while no service runs, from Restate's state through its admin API.

use std::collections::BTreeMap;

use behest::{Message, ToolCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::wire::{Pending, Status};

/// The state key of a run's [`Header`].
pub(crate) const HEADER: &str = "status";

/// The prefix of the state keys of a run's pages (`page.0`, `page.1`, ..).
pub(crate) const PAGE_PREFIX: &str = "page.";

/// The state key of page `index`.
pub(crate) fn page_key(index: usize) -> String {
    format!("{PAGE_PREFIX}{index}")
}

/// The page a state key names, if it names one.
pub(crate) fn page_index(key: &str) -> Option<usize> {
    key.strip_prefix(PAGE_PREFIX)?.parse().ok()
}

/// Where a run stands: rewritten whole when it changes, and small.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Header {
    /// As [`Status::state`].
    pub state: String,
    /// What the run waits for.
    pub pending: Vec<Waiting>,
}

/// A call the run waits for someone about.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Waiting {
    /// The call, its arguments validated.
    pub call: ToolCall,
    /// `answer`, `approval` or `outcome`.
    pub waits_for: String,
    /// The durable promise that the answer resolves: made for this wait
    /// alone, so that nothing said before it began can resolve it.
    pub promise: String,
}

/// What some steps added to a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub(crate) struct Page {
    /// The run's step count after it.
    pub steps: usize,
    /// Its events, as [`Status::events`] gives them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// The transcript messages it set, by their place (a later page's
    /// message at a place replaces an earlier one's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<(usize, Message)>,
    /// The transcript's length after it.
    pub length: usize,
    /// How the run ended, on its last page (`completed`, `failed`,
    /// `cancelled`): the header, written only when what the run waits for
    /// changes, is not written again at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

impl Page {
    /// Whether the page adds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty() && self.messages.is_empty() && self.ended.is_none()
    }
}

/// A run's status from its header and pages (in any order).
pub(crate) fn assemble(
    header: Option<Header>,
    pages: impl IntoIterator<Item = (usize, Page)>,
) -> Status {
    let header = header.unwrap_or_default();
    let pages: BTreeMap<usize, Page> = pages.into_iter().collect();
    let mut status = Status {
        state: header.state,
        pending: header
            .pending
            .into_iter()
            .map(|waiting| Pending {
                call: waiting.call,
                waits_for: waiting.waits_for,
            })
            .collect(),
        ..Status::default()
    };
    if status.state.is_empty() && !pages.is_empty() {
        status.state = "running".to_owned();
    }
    let mut transcript: BTreeMap<usize, Message> = BTreeMap::new();
    let mut length = 0;
    for page in pages.into_values() {
        status.steps = page.steps;
        status.events.extend(page.events);
        transcript.extend(page.messages);
        length = page.length;
        if let Some(ended) = page.ended {
            status.state = ended;
            status.pending.clear();
        }
    }
    status.transcript = transcript.into_values().take(length).collect();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Later pages replace earlier messages at the same place, and the
    /// last page's length cuts what is past it.
    #[test]
    fn pages_assemble_in_order_whatever_order_they_come_in() {
        let page = |steps, messages: Vec<(usize, &str)>, length| Page {
            steps,
            events: vec![serde_json::json!({"step": steps})],
            messages: messages
                .into_iter()
                .map(|(at, text)| (at, Message::user(text)))
                .collect(),
            length,
            ended: None,
        };
        let status = assemble(
            Some(Header {
                state: "running".into(),
                pending: Vec::new(),
            }),
            [
                (2, page(3, vec![(1, "b2"), (2, "c")], 3)),
                (0, page(0, vec![(0, "a")], 1)),
                (1, page(1, vec![(1, "b"), (2, "x")], 3)),
            ],
        );
        assert_eq!(status.steps, 3);
        assert_eq!(
            status.transcript,
            [Message::user("a"), Message::user("b2"), Message::user("c")]
        );
        assert_eq!(status.events.len(), 3);
        assert_eq!(status.events[0]["step"], 0);
        assert_eq!(page_index(&page_key(12)), Some(12));
        assert_eq!(page_index("status"), None);
    }
}

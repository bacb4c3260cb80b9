//! How a run's state is laid out in Restate, so that what it keeps grows
//! with the run, not with its square, and holds nothing twice: a small
//! header (where the run stands and what it waits for), written when that
//! changes, and pages of what the steps added that the journal does not
//! already hold (the step count after them, their events, how the
//! transcript goes on: `transcript.rs`), each written once: every few
//! steps, and whenever the run waits or ends. A status is assembled from
//! the header, the pages and the journal, from Restate's record through
//! its admin API.

use std::collections::BTreeMap;

use behest::ToolCall;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::transcript::Part;
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
    /// Its events that the transcript does not tell, as
    /// [`Status::events`] gives them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    /// How the transcript goes on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// How the run ended, on its last page (`completed`, `failed`,
    /// `cancelled`): the header, written only when what the run waits for
    /// changes, is not written again at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended: Option<String>,
}

impl Page {
    /// Whether the page adds nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.events.is_empty() && self.parts.is_empty() && self.ended.is_none()
    }
}

/// A run's status from its header and pages (in any order), but for its
/// transcript: the parts that make it, in order, for
/// [`rebuild`](crate::transcript::rebuild).
pub(crate) fn assemble(
    header: Option<Header>,
    pages: impl IntoIterator<Item = (usize, Page)>,
) -> (Status, Vec<Part>) {
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
    let mut parts = Vec::new();
    for page in pages.into_values() {
        status.steps = page.steps;
        status.events.extend(page.events);
        parts.extend(page.parts);
        if let Some(ended) = page.ended {
            status.state = ended;
            status.pending.clear();
        }
    }
    (status, parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use behest::Message;

    /// Pages come together in their order, whatever order they are read
    /// in; the last page's end stands.
    #[test]
    fn pages_assemble_in_order_whatever_order_they_come_in() {
        let page = |steps, text: &str, ended: Option<&str>| Page {
            steps,
            events: vec![serde_json::json!({"step": steps})],
            parts: vec![Part::Message(Message::user(text))],
            ended: ended.map(str::to_owned),
        };
        let (status, parts) = assemble(
            Some(Header {
                state: "running".into(),
                pending: Vec::new(),
            }),
            [
                (2, page(3, "c", Some("completed"))),
                (0, page(0, "a", None)),
                (1, page(1, "b", None)),
            ],
        );
        assert_eq!(status.steps, 3);
        assert_eq!(status.state, "completed");
        assert_eq!(
            parts,
            ["a", "b", "c"].map(|text| Part::Message(Message::user(text)))
        );
        assert_eq!(status.events.len(), 3);
        assert_eq!(status.events[0]["step"], 0);
        assert_eq!(page_index(&page_key(12)), Some(12));
        assert_eq!(page_index("status"), None);
    }
}

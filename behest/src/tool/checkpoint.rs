//! A call run in two parts by an engine that plays calls again after a
//! crash (behest-restate): the part that must happen once (starting
//! remote work), whose value the engine keeps, and the rest, which goes on
//! from that value and may run again. A tool that can be run so says it
//! ([`Tool::keeps_checkpoints`](crate::Tool::keeps_checkpoints)) and reads
//! [`ToolContext::call_part`].

use serde_json::Value;

use super::ToolContext;

/// Which part of a call the engine runs, given to the call as an
/// extension (see [`ToolContext::call_part`]). Without one, the whole
/// call runs, as anywhere else.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallPart {
    /// Only what must happen once: the tool answers with the value to
    /// keep, as its output's text (JSON).
    Start,
    /// The rest, from the value the start kept.
    Finish(Value),
}

impl ToolContext {
    /// The part of the call to run, when an engine runs it in two (a tool
    /// that [keeps checkpoints](crate::Tool::keeps_checkpoints)); `None`:
    /// the whole call.
    pub fn call_part(&self) -> Option<&CallPart> {
        self.extension::<CallPart>()
    }
}

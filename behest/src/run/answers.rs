//! Who answers the approvals and external calls of a tree of agents: the
//! root run, whose handlers, control, deadlines and pausing hold for the
//! calls of every agent it runs as a tool, each known by its call path.
//!
//! A call of the root is known by its id (`c1`); a call of a nested agent
//! by the path of the agents' calls down to it, each step `name#call_id`:
//! `billing#c3/refund#c1` is the call `c1` of the tool `refund`, made by the
//! agent `billing` that the root called as `c3`.

use std::time::Duration;

use super::control::RunControl;
use super::RunOptions;

/// The root run's answering, as a nested run sees it.
#[derive(Clone)]
pub(crate) struct Answers {
    /// The root's control: nested calls wait on it, by path.
    pub control: RunControl,
    /// How many handlers the root has.
    pub handlers: usize,
    /// The path of the call that runs this agent, with a closing `/`;
    /// empty at the root.
    pub prefix: String,
    /// The root's deadlines.
    pub approval_deadline: Duration,
    pub external_deadline: Duration,
    pub waiting_notice: Duration,
    /// Whether the root stops at its waits.
    pub pausing: bool,
}

impl Answers {
    /// The root's answering: its own control and rules.
    pub fn root(control: RunControl, handlers: usize, options: &RunOptions, pausing: bool) -> Self {
        Self {
            control,
            handlers,
            prefix: String::new(),
            approval_deadline: options.approval_deadline,
            external_deadline: options.external_deadline,
            waiting_notice: options.waiting_notice,
            pausing,
        }
    }

    /// The answering of the agent that the call `call_id` of the tool
    /// `agent` runs.
    pub fn below(&self, agent: &str, call_id: &str) -> Self {
        Self {
            prefix: format!("{}{}/", self.prefix, step(agent, call_id)),
            ..self.clone()
        }
    }

    /// Whether this is the root's.
    pub fn at_root(&self) -> bool {
        self.prefix.is_empty()
    }

    /// What the call `call_id` of `tool` is known by: its id at the root,
    /// its path below.
    pub fn path(&self, tool: &str, call_id: &str) -> String {
        if self.at_root() {
            call_id.to_owned()
        } else {
            format!("{}{}", self.prefix, step(tool, call_id))
        }
    }

    /// Whether someone can answer: a handler of the root, or a control
    /// handle of the root held outside the handlers.
    pub fn answerable(&self) -> bool {
        self.handlers > 0 || self.control.held_outside()
    }
}

/// One step of a path: `name#call_id`.
pub(crate) fn step(name: &str, call_id: &str) -> String {
    format!("{name}#{call_id}")
}

//! The books of a run: what it spent, kept in one place. Every model
//! request, every token (a fallback's set-aside turns, a summary, what a
//! filter or a compaction later drops) and every tool call is written
//! here once, as it is spent, into the run's ledger and the ledger of each
//! run above it in a tree of agents. The limits of every run of the chain
//! are checked against their own ledger, and a run's outcome reports its
//! ledger: what the limits counted is what the outcome says, by
//! construction.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use super::answers::Answers;
use super::events::Emitter;
use super::limits::{CountedCalls, Reached, RunUsage, UsageLimits};
use super::state::RunState;
use crate::usage::Usage;

/// A run's ledger and the ledgers above it. Cheap to clone.
#[derive(Clone, Debug)]
pub(crate) struct Books(Arc<Ledger>);

#[derive(Debug)]
struct Ledger {
    /// What the run (its nested agents included) spent.
    spent: Mutex<Spent>,
    /// The run's own limits.
    limits: UsageLimits,
    /// The books of the run that called this one as a tool.
    above: Option<Books>,
}

#[derive(Debug, Default)]
struct Spent {
    usage: RunUsage,
    /// Calls started and not yet ended: a limit of succeeded calls counts
    /// them as if they will succeed, so that parallel calls cannot pass it.
    running: RunUsage,
}

impl Books {
    /// The books of a run nobody called.
    pub(crate) fn root(limits: UsageLimits) -> Self {
        Self(Arc::new(Ledger {
            spent: Mutex::default(),
            limits,
            above: None,
        }))
    }

    /// The books of a run called by this one (an agent run as a tool):
    /// what it spends is this run's too.
    pub(crate) fn nested(&self, limits: UsageLimits) -> Self {
        Self(Arc::new(Ledger {
            spent: Mutex::default(),
            limits,
            above: Some(self.clone()),
        }))
    }

    /// This ledger and every one above it, nearest first.
    fn chain(&self) -> impl Iterator<Item = &Ledger> {
        std::iter::successors(Some(&*self.0), |ledger| {
            ledger.above.as_ref().map(|books| &*books.0)
        })
    }

    /// What the run has spent so far.
    pub(crate) fn spent(&self) -> RunUsage {
        crate::sync::lock(&self.0.spent).usage.clone()
    }

    /// Counts what a run spent before it stopped, as it goes on from its
    /// state (in this ledger alone: a run that stops has no caller).
    pub(crate) fn restore(&self, spent: &RunUsage) {
        let mut ledger = crate::sync::lock(&self.0.spent);
        ledger.usage.requests = ledger.usage.requests.saturating_add(spent.requests);
        ledger.usage.tokens = ledger.usage.tokens + spent.tokens;
        ledger.usage.add_calls(spent);
    }

    /// Counts one more model request, unless a limit of the chain would be
    /// passed by it (requests, or tokens and cost already spent).
    pub(crate) fn request(&self) -> Result<(), Reached> {
        for ledger in self.chain() {
            let spent = crate::sync::lock(&ledger.spent);
            if let Some(reached) = ledger.limits.before_request(&spent.usage) {
                return Err(reached);
            }
        }
        for ledger in self.chain() {
            let mut spent = crate::sync::lock(&ledger.spent);
            spent.usage.requests = spent.usage.requests.saturating_add(1);
        }
        Ok(())
    }

    /// Counts tokens spent (a turn, a summary): the first limit of the
    /// chain they pass, if any.
    pub(crate) fn tokens(&self, usage: Option<&Usage>) -> Option<Reached> {
        let mut reached = None;
        for ledger in self.chain() {
            let mut spent = crate::sync::lock(&ledger.spent);
            if let Some(usage) = usage {
                spent.usage.tokens = spent.usage.tokens + *usage;
            }
            if reached.is_none() {
                reached = ledger.limits.after_answer(&spent.usage);
            }
        }
        reached
    }

    /// Whether a limit of the chain counts tool calls (and so may refuse
    /// one).
    pub(crate) fn limits_calls(&self) -> bool {
        self.chain().any(|ledger| {
            ledger.limits.tool_calls.is_some() || !ledger.limits.tool_calls_per_tool.is_empty()
        })
    }

    /// A validated call of `tool` is about to start: counted, unless a
    /// limit of the chain would be passed by it. End it with
    /// [`ended`](Self::ended).
    pub(crate) fn call(&self, tool: &str) -> Result<(), Reached> {
        for ledger in self.chain() {
            let spent = crate::sync::lock(&ledger.spent);
            let mut counted = spent.usage.clone();
            counted.add_calls(&spent.running);
            if let Some(reached) = ledger.limits.before_calls(&counted, [tool]) {
                return Err(reached);
            }
        }
        for ledger in self.chain() {
            let mut spent = crate::sync::lock(&ledger.spent);
            match ledger.limits.counted_calls {
                CountedCalls::Run => spent.usage.called([tool]),
                CountedCalls::Succeeded => spent.running.called([tool]),
            }
        }
        Ok(())
    }

    /// A call started with [`call`](Self::call) ended, successfully or not.
    pub(crate) fn ended(&self, tool: &str, succeeded: bool) {
        for ledger in self.chain() {
            if ledger.limits.counted_calls != CountedCalls::Succeeded {
                continue;
            }
            let mut spent = crate::sync::lock(&ledger.spent);
            spent.running.uncalled(tool);
            if succeeded {
                spent.usage.called([tool]);
            }
        }
    }
}

/// Where a run stands in a tree of agents: its depth, and its books, which
/// an agent it runs as a tool writes into as it spends. A call of a run
/// carries it, so an agent run as a tool knows its caller.
#[derive(Clone)]
pub(crate) struct Lineage {
    pub(crate) depth: usize,
    pub(crate) max_depth: usize,
    /// The books of the run holding the call.
    pub(crate) books: Books,
    /// The calls of that run whose spending went into its books as it was
    /// spent (agents run as tools): their outputs' usage is not counted
    /// again. A journal's replay gives such an output back without running
    /// the agent, and then its usage is counted from the output.
    pub(crate) booked: Arc<Mutex<HashSet<String>>>,
    /// The caller's events, where the nested run's go.
    pub(crate) emitter: Arc<Emitter>,
    /// Who answers the tree's approvals and external calls: the root.
    pub(crate) answers: Answers,
    /// The states of the agents this run called as tools that stopped at
    /// their waits, by call: the run stops at those calls with them.
    pub(crate) stops: Arc<Mutex<HashMap<String, RunState>>>,
}

impl Lineage {
    /// Counts in the run's books what the output of its call `call_id`
    /// says it spent, unless that call's spending went in as it was spent:
    /// the first limit it passes, if any.
    pub(crate) fn output_spent(&self, call_id: &str, usage: Option<&Usage>) -> Option<Reached> {
        let booked = crate::sync::lock(&self.booked).remove(call_id);
        match usage {
            Some(usage) if !booked => self.books.tokens(Some(usage)),
            _ => None,
        }
    }

    /// The root of a tree: a run nobody called.
    pub(crate) fn root(
        max_depth: usize,
        books: Books,
        emitter: Arc<Emitter>,
        answers: Answers,
    ) -> Self {
        Self {
            depth: 0,
            max_depth,
            books,
            booked: Arc::default(),
            emitter,
            answers,
            stops: Arc::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(total: u64) -> Usage {
        Usage {
            input_tokens: total,
            ..Usage::default()
        }
    }

    #[test]
    fn a_nested_run_s_spending_is_its_callers_too() {
        let root = Books::root(UsageLimits::new().requests(2));
        let nested = root.nested(UsageLimits::new());
        assert!(nested.request().is_ok());
        assert!(nested.tokens(Some(&tokens(10))).is_none());
        assert!(root.request().is_ok());
        // The root's limit holds for the tree.
        assert!(nested.request().is_err());
        assert_eq!(root.spent().requests, 2);
        assert_eq!(root.spent().tokens.input_tokens, 10);
        assert_eq!(nested.spent().requests, 1);
    }

    #[test]
    fn succeeded_calls_count_once_ended_and_running_ones_hold_their_place() {
        let limits = UsageLimits::new()
            .tool_calls(1)
            .counted_calls(CountedCalls::Succeeded);
        let books = Books::root(limits);
        assert!(books.call("look").is_ok());
        // The first is still running: it may succeed.
        assert!(books.call("look").is_err());
        books.ended("look", false);
        assert_eq!(books.spent().tool_calls, 0);
        assert!(books.call("look").is_ok());
        books.ended("look", true);
        assert_eq!(books.spent().tool_calls, 1);
        assert!(books.call("look").is_err());
    }

    #[test]
    fn calls_that_run_count_when_they_start() {
        let books = Books::root(UsageLimits::new().tool_calls(1));
        assert!(books.call("look").is_ok());
        books.ended("look", false);
        assert_eq!(books.spent().tool_calls, 1);
        assert!(books.call("look").is_err());
    }
}

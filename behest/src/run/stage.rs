//! The stage seam: each feature of a run is a [`Stage`], asked at the
//! points of the loop (`driver.rs`) and of each call (`calls.rs`), in the
//! one order of `stages.rs`. The loop names no feature; a feature keeps its
//! state in its own part of the run's [`Progress`](super::state::Progress)
//! or of the [`Run`].
//!
//! The order is handoffs, guardrails, bounds, context, prepared tools,
//! answer; outputs are seen the other way round, as layers unwind. At each
//! point, the stages that act, in the order of the events users see:
//!
//! | point            | stages that act, in order                                     |
//! |------------------|---------------------------------------------------------------|
//! | offer            | handoffs (`transfer_to_…`), answer (`final_answer`)           |
//! | start            | guardrails (the user's message)                               |
//! | before a request | bounds (turns, deadline, requests), context, prepared tools   |
//! | after the answer | bounds (tokens), context, answer (stop reason, typed answer)  |
//! | on the outcome   | guardrails (the final answer)                                 |
//! | before the calls | handoffs, bounds (steps)                                      |
//! | on each call     | guardrails (the call), bounds (call limits: a call a guardrail refused is not counted) |
//! | on each output   | bounds (the call's end, what it spent), guardrails (the output) |
//!
//! Where a new feature goes: a file under `run/` with a unit struct that
//! implements [`Stage`] for the points it needs, its settings kept by their
//! own type in the agent's features, its builder methods in an
//! `impl Agent` of the same file, and its place in `stages.rs`.

use futures::future::BoxFuture;

use super::agent::Agent;
use super::part::{Looping, Offer, Run};
use super::RunOutcome;
use crate::conversation::{AssistantMessage, Message};
use crate::runtime::LocalRun;
use crate::tool::{ToolCall, ToolOutput, ToolResult};

/// What comes next, as a stage decides it.
pub(super) enum Flow {
    /// On to the next stage, then the loop's next step.
    Go,
    /// The model is asked again; the turn's calls, if any, were answered.
    Ask,
    /// The run goes on with another agent; the turn's calls were answered.
    HandOff(Passing),
    /// The run ends.
    End(RunOutcome),
}

/// How an agent's part of a run ends.
pub(super) enum Ending {
    /// The run ends.
    End(RunOutcome),
    /// The run goes on with another agent.
    HandOff(Passing),
}

/// A run handed to another agent: its name, the agent, and the
/// conversation as that agent gets it.
pub(super) struct Passing {
    pub name: String,
    pub agent: Agent,
    pub conversation: Vec<Message>,
}

impl Flow {
    /// The part's end this decides, if it ends it.
    pub(super) fn ending(self) -> Option<Ending> {
        match self {
            Self::Go | Self::Ask => None,
            Self::End(outcome) => Some(Ending::End(outcome)),
            Self::HandOff(to) => Some(Ending::HandOff(to)),
        }
    }
}

/// A boxed future of a stage's decision.
pub(super) type Decided<'a, T> = BoxFuture<'a, T>;

/// One feature of a run. Every point does nothing unless implemented.
pub(super) trait Stage: Sync {
    /// What the stage offers `agent`'s model beside its tools.
    fn offer(&self, agent: &Agent, offer: &mut Offer) {
        let _ = (agent, offer);
    }

    /// Once for each agent that holds the run, before its first request
    /// (the agent the run starts on, and each one it is handed to).
    fn start<'a>(&'a self, run: &'a Run<'_>, looping: &'a mut Looping) -> Decided<'a, Flow> {
        let _ = (run, looping);
        Box::pin(std::future::ready(Flow::Go))
    }

    /// Before each model request.
    fn before_request<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
    ) -> Decided<'a, Flow> {
        let _ = (run, looping);
        Box::pin(std::future::ready(Flow::Go))
    }

    /// After the model's answer `reply`, in the transcript already: `calls`
    /// are its calls still to run (a stage that answers one takes it out).
    fn after_answer<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        reply: &'a AssistantMessage,
        calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        let _ = (run, looping, reply, calls);
        Box::pin(std::future::ready(Flow::Go))
    }

    /// On the outcome the run would end with: the outcome (perhaps
    /// changed), or `None` to ask the model again, the transcript given
    /// back to `looping`.
    fn on_outcome<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        outcome: RunOutcome,
    ) -> Decided<'a, Option<RunOutcome>> {
        let _ = (run, looping);
        Box::pin(std::future::ready(Some(outcome)))
    }

    /// Before the round of `calls`; every way the model is asked again
    /// passes here (with no calls when it is only asked again).
    fn before_calls<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        let _ = (run, looping, calls);
        Box::pin(std::future::ready(Flow::Go))
    }

    /// Whether the stage must see the validated calls of `tool_name`
    /// ([`on_call`](Self::on_call)) before they run.
    fn sees_calls(&self, run: &Run<'_>, tool_name: &str) -> bool {
        let _ = (run, tool_name);
        false
    }

    /// On each validated call before it runs: the call to run (perhaps
    /// rewritten), or its error result.
    fn on_call<'a>(
        &'a self,
        run: &'a Run<'_>,
        call: ToolCall,
        local: LocalRun,
    ) -> Decided<'a, ToolResult<(ToolCall, LocalRun)>> {
        let _ = run;
        Box::pin(std::future::ready(Ok((call, local))))
    }

    /// On each call's outcome once it ran (or was answered): the outcome
    /// the model reads.
    fn on_output<'a>(
        &'a self,
        run: &'a Run<'_>,
        call: &'a ToolCall,
        outcome: ToolResult<ToolOutput>,
    ) -> Decided<'a, ToolResult<ToolOutput>> {
        let _ = (run, call);
        Box::pin(std::future::ready(outcome))
    }
}

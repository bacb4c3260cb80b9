//! The bounds of a run: its usage limits (requests, tokens, tool calls,
//! cost), its deadline, and its step and turn bounds. The agent a run
//! starts on sets them, they hold over the whole run (across handoffs),
//! and what they count is the run's books (`books.rs`).

use super::limits::Reached;
use super::part::{Looping, Run};
use super::stage::{Decided, Flow, Stage};
use super::{Agent, RunError, RunOutcome, UsageLimits};
use crate::conversation::AssistantMessage;
use crate::runtime::{LocalRun, ToolCall};
use crate::tool::{LimitKind, ToolError, ToolOutput, ToolResult};

/// The stage of the run's bounds.
pub(super) struct Bounds;

impl Stage for Bounds {
    fn before_request<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
    ) -> Decided<'a, Flow> {
        let turns = looping.progress.turns;
        let error = if let Some(max_turns) = run.first.max_turns.filter(|max| turns >= *max) {
            Some(RunError::MaxTurnsExceeded { max_turns })
        } else if run
            .deadline()
            .is_some_and(|at| tokio::time::Instant::now() >= at)
        {
            Some(run.past_deadline())
        } else {
            // Every run of the tree of agents counts the request.
            run.lineage.books.request().err().map(Reached::error)
        };
        let flow = match error {
            Some(error) => Flow::End(RunOutcome::failed(error, looping.take())),
            None => Flow::Go,
        };
        Box::pin(std::future::ready(flow))
    }

    fn after_answer<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        reply: &'a AssistantMessage,
        calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        let mut flow = Flow::Go;
        if let Some(reached) = run.lineage.books.tokens(reply.usage.as_ref()) {
            let error = reached.error();
            run.unrun(&mut looping.transcript, std::mem::take(calls), |_| {
                ToolError::execution(format!("not run: {error}"))
            });
            flow = Flow::End(RunOutcome::failed(error, looping.take()));
        }
        Box::pin(std::future::ready(flow))
    }

    fn before_calls<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
        calls: &'a mut Vec<ToolCall>,
    ) -> Decided<'a, Flow> {
        // Every way the model is asked again counts against the bound,
        // once, over the whole run.
        looping.progress.rounds = looping.progress.rounds.saturating_add(1);
        let (rounds, max_steps) = (looping.progress.rounds, run.first.max_steps);
        let mut flow = Flow::Go;
        if rounds > max_steps {
            run.unrun(&mut looping.transcript, std::mem::take(calls), |_| {
                ToolError::LimitExceeded {
                    kind: LimitKind::ToolRounds,
                    limit: max_steps,
                    actual: Some(rounds),
                }
            });
            let error = RunError::MaxStepsExceeded { max_steps };
            flow = Flow::End(RunOutcome::failed(error, looping.take()));
        }
        Box::pin(std::future::ready(flow))
    }

    fn sees_calls(&self, run: &Run<'_>, _tool_name: &str) -> bool {
        // A call a limit may refuse is counted before it starts.
        run.lineage.books.limits_calls()
    }

    fn on_call<'a>(
        &'a self,
        run: &'a Run<'_>,
        call: ToolCall,
        local: LocalRun,
    ) -> Decided<'a, ToolResult<(ToolCall, LocalRun)>> {
        let counted = match run.lineage.books.call(&call.tool_name) {
            Ok(()) => Ok((call, local)),
            Err(reached) => {
                let error = reached.error();
                let why = ToolError::execution(format!("not run: {error}"));
                // The run fails once the round's calls have their results.
                crate::sync::lock(&run.tripped).get_or_insert(error);
                Err(why)
            }
        };
        Box::pin(std::future::ready(counted))
    }

    fn on_output<'a>(
        &'a self,
        run: &'a Run<'_>,
        call: &'a ToolCall,
        outcome: ToolResult<ToolOutput>,
    ) -> Decided<'a, ToolResult<ToolOutput>> {
        let books = &run.lineage.books;
        books.ended(&call.tool_name, outcome.is_ok());
        // What a tool says it spent (a tool that asks a model of its own;
        // an agent's answer given back by a journal) is the run's too.
        let usage = outcome
            .as_ref()
            .ok()
            .and_then(|output| output.usage.as_ref());
        if let Some(reached) = run.lineage.output_spent(&call.call_id, usage) {
            // The run fails once the round's calls have their results.
            crate::sync::lock(&run.tripped).get_or_insert(reached.error());
        }
        Box::pin(std::future::ready(outcome))
    }
}

/// Counts a call of `tool_name` that starts at once (no limit can refuse
/// it: those calls are seen before they start).
pub(super) fn count_start(run: &Run<'_>, tool_name: &str) {
    let _counted = run.lineage.books.call(tool_name);
}

impl Run<'_> {
    /// When the run's deadline passes, if it has one.
    pub(super) fn deadline(&self) -> Option<tokio::time::Instant> {
        let limit = self.first.usage_limits.deadline?;
        self.started.checked_add(limit)
    }

    /// Waits until the run's deadline; forever without one.
    pub(super) async fn until_deadline(&self) {
        match self.deadline() {
            Some(deadline) => tokio::time::sleep_until(deadline).await,
            None => std::future::pending().await,
        }
    }

    /// The run's error for its passed deadline.
    pub(super) fn past_deadline(&self) -> RunError {
        Reached::deadline(&self.first.usage_limits, self.started.elapsed()).error()
    }
}

impl Agent {
    /// How many rounds of tool calls a run may make, counted over the
    /// whole run: the bound of the agent a run starts on holds across
    /// handoffs. A run past it fails with [`RunError::MaxStepsExceeded`].
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.options_mut().max_steps = steps;
        self
    }

    /// How many model turns a run may make in all, across handoffs (the
    /// OpenAI Agents SDK's `max_turns`); the bound of the agent a run
    /// starts on holds. A run that would ask its model once more fails
    /// with [`RunError::MaxTurnsExceeded`]. A turn asked again (a
    /// reminder, a refused answer) counts as one.
    #[must_use]
    pub fn max_turns(mut self, turns: usize) -> Self {
        self.options_mut().max_turns = Some(turns);
        self
    }

    /// What each run may spend: model requests, tokens, tool calls, cost
    /// and time. A run past a limit fails with [`RunError::UsageLimit`]
    /// before the request or the calls that would pass it; calls refused
    /// so get results that say why, so the transcript stays whole. The
    /// limits of the agent a run starts on hold across handoffs, and an
    /// agent run as a tool spends from its caller's limits too.
    ///
    /// ```
    /// use behest::run::{Price, UsageLimits};
    /// use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// let agent = Agent::new(ScriptedModel::new([]), ToolRuntime::new(ToolRegistry::new()))
    ///     .usage_limits(UsageLimits::new().requests(10).cost(0.25, Price::per_million(0.15, 0.60)));
    /// # let _ = agent;
    /// ```
    #[must_use]
    pub fn usage_limits(mut self, limits: UsageLimits) -> Self {
        self.options_mut().usage_limits = limits;
        self
    }
}

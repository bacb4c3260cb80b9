//! Tools prepared per step ([`Agent::prepare_tools`]): before each model
//! request, the agent's preparation picks or reshapes the tools offered;
//! a call of a tool not offered at its step is not run.

use std::sync::Arc;

use super::part::{Looping, Run};
use super::stage::{Decided, Flow, Stage};
use super::{Agent, Message, RunOutcome, RunUsage};

/// The stage of the tools prepared per step.
pub(super) struct Prepared;

impl Stage for Prepared {
    fn before_request<'a>(
        &'a self,
        run: &'a Run<'_>,
        looping: &'a mut Looping,
    ) -> Decided<'a, Flow> {
        let flow = match run.agent.options.features.get::<PrepareTools>() {
            None => Flow::Go,
            Some(prepare) => {
                let tools: Vec<crate::ToolSpec> =
                    run.agent.runtime.registry().specs().cloned().collect();
                let mut spent = run.lineage.books.spent();
                // The request about to be made is counted already.
                spent.requests = spent.requests.saturating_sub(1);
                let step = StepState {
                    turn: looping.progress.turns,
                    transcript: &looping.transcript,
                    usage: &spent,
                };
                match super::panics::caught("the preparation of the tools", || {
                    (prepare.0)(&step, tools)
                }) {
                    Ok(mut offered) => {
                        // The stages' own are offered whatever it returns.
                        offered.extend(run.offer.tools.iter().map(|offered| offered.spec.clone()));
                        *crate::sync::lock(&run.offered) =
                            Some(offered.iter().map(|spec| spec.name.clone()).collect());
                        looping.prepared = Some(offered);
                        Flow::Go
                    }
                    Err(error) => Flow::End(RunOutcome::failed(error, looping.take())),
                }
            }
        };
        Box::pin(std::future::ready(flow))
    }
}

impl Agent {
    /// Picks or reshapes the tools offered at each step: `prepare` gets the
    /// run's state ([`StepState`]: the turn, the conversation, what was
    /// spent) and the registry's tools, and returns those to offer (some of
    /// them, with descriptions changed, …). A call of a tool not offered at
    /// its step is not run: its error says so. A reshaped schema is what
    /// the model sees; the tool's own schema still validates the call.
    /// Handoffs and `final_answer` are offered beside them, whatever the
    /// preparation returns. It runs before each model request, so keep it
    /// quick (and, for durable runs, deterministic).
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{tool, Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// /// Look an order up.
    /// #[tool]
    /// fn look_up(order: u32) -> String { format!("order {order}") }
    ///
    /// /// Refund an order.
    /// #[tool]
    /// fn refund(order: u32) -> String { format!("refunded {order}") }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let model = ScriptedModel::new([ScriptedTurn::text("hello").expect_tools(["look_up"])]);
    /// let registry = ToolRegistry::new().with(LookUp).unwrap().with(Refund).unwrap();
    /// // No refunds before the model has looked the order up.
    /// let agent = Agent::new(model, ToolRuntime::new(registry)).prepare_tools(|step, tools| {
    ///     let looked_up = step.transcript.iter().any(|message| {
    ///         matches!(message, Message::ToolResult(result) if result.tool_name == "look_up")
    ///     });
    ///     tools.into_iter().filter(|tool| looked_up || tool.name != "refund").collect()
    /// });
    /// let outcome = agent.invoke([Message::user("hi")]).await;
    /// assert_eq!(outcome.text(), Some("hello"));
    /// # }
    /// ```
    #[must_use]
    pub fn prepare_tools(
        mut self,
        prepare: impl Fn(&StepState<'_>, Vec<crate::ToolSpec>) -> Vec<crate::ToolSpec>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.options_mut()
            .features
            .set(PrepareTools(Arc::new(prepare)));
        self
    }
}

/// What a run has done so far, for a preparation of the tools it offers
/// at its next step ([`Agent::prepare_tools`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct StepState<'a> {
    /// The model turn about to be asked for, from 0 (numbered across
    /// handoffs).
    pub turn: usize,
    /// The conversation so far.
    pub transcript: &'a [Message],
    /// What the run has spent so far.
    pub usage: &'a RunUsage,
}

type PrepareFn = dyn Fn(&StepState<'_>, Vec<crate::ToolSpec>) -> Vec<crate::ToolSpec> + Send + Sync;

/// An agent's preparation of the tools of each step.
#[derive(Clone)]
pub(crate) struct PrepareTools(pub(crate) Arc<PrepareFn>);

impl std::fmt::Debug for PrepareTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PrepareTools")
    }
}

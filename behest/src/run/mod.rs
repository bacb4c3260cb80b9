//! Runs: a model and its tools in a loop, observed and steered through a
//! [`RuntimeInvocation`].
//!
//! The loop: ask the model (`AwaitingModel`); if it calls tools, run them
//! concurrently through the [`ToolRuntime`](crate::ToolRuntime)
//! (`ExecutingTools`) and send every result back, in call order, argument
//! errors included, so the model can correct itself; repeat until it
//! answers (`Completed`), something fails (`Failed`) or the run is
//! cancelled (`Cancelled`).

mod agent;
mod agent_tool;
mod answer;
mod answers;
mod books;
mod bounds;
mod calls;
mod context;
mod control;
mod driver;
mod events;
mod guardrails;
mod handoff;
mod ids;
mod invocation;
mod limits;
mod log;
mod outcome;
mod output;
mod panics;
mod part;
mod partial;
mod prepare;
pub mod session;
mod stage;
mod stages;
mod state;
mod steps;
mod tool_search;

pub use crate::conversation::{
    AssistantMessage, DeltaSink, Message, ModelDelta, Reasoning, ReasoningPlace, StopKind,
    StopReason, ToolResultMessage, Usage,
};
pub use agent::MAX_AGENT_DEPTH;
pub use agent_tool::{AgentEvent, AgentInput, AgentTool};
pub use context::{context_window_of, CompactFn, Compaction, ContextPolicy};
pub use control::{ControlError, RunControl};
pub use events::{Envelope, EventKind, EventStream, RunPhase, ToolStreamEvent};
pub use guardrails::{GuardrailAction, GuardrailEvent, GuardrailStage, Verdict};
pub use handoff::{InputFilter, MAX_HANDOFFS};
pub use invocation::RuntimeInvocation;
pub use limits::{CountedCalls, RunUsage, UsageLimit, UsageLimits};
pub use output::FINAL_ANSWER;
pub use partial::{parse_partial, OutputUpdate, PartialOutput};
// The model contract, named here too: a run's users meet it here.
#[doc(hidden)]
pub use crate::model::Turn;
pub use crate::model::{
    CachedInput, Failure, FallbackModel, Model, ModelError, ModelRequest, ModelSettings, Price,
    Prices, ReasoningEffort, RecordedTurn, Recorder, Recording, ScriptedModel, ScriptedTurn,
    PRICES_AS_OF,
};
pub use steps::{ModelTurn, RunSteps, StepKind, ToolStep};

pub use agent::{Agent, RunOptions};
#[cfg(feature = "ui")]
pub(crate) use ids::fresh_id;
pub use log::RunLog;
pub use outcome::{Amount, RunError, RunOutcome};
pub use prepare::StepState;
pub use session::{MemoryStore, Session, SessionError, SessionId, SessionStore};
pub use state::{RunState, Wait, WaitKind};
pub use tool_search::{SearchTools, ToolSearch, SEARCH_TOOLS};

//! Runs: a model and its tools in a loop, observed and steered through a
//! [`RuntimeInvocation`].
//!
//! The loop: ask the model (`AwaitingModel`); if it calls tools, run them
//! concurrently through the [`ToolRuntime`]
//! (`ExecutingTools`) and send every result back, in call order, argument
//! errors included, so the model can correct itself; repeat until it
//! answers (`Completed`), something fails (`Failed`) or the run is
//! cancelled (`Cancelled`).

mod agent_tool;
mod context;
mod control;
mod driver;
mod events;
mod fallback;
mod guardrails;
mod handoff;
mod invocation;
mod limits;
mod model;
mod output;
mod partial;
mod prices;
mod record;
mod scripted;
mod steps;
mod turn;

mod agent;
mod books;
mod outcome;
mod panics;

pub use crate::conversation::{
    AssistantMessage, DeltaSink, Message, ModelDelta, Reasoning, ReasoningPlace, StopKind,
    StopReason, ToolResultMessage, Usage,
};
pub use agent_tool::{AgentEvent, AgentInput, AgentTool, MAX_AGENT_DEPTH};
pub use context::{context_window_of, CompactFn, Compaction, ContextPolicy};
pub use control::{ControlError, RunControl};
pub use events::{Envelope, EventKind, EventStream, RunState, ToolStreamEvent};
pub use fallback::{Failure, FallbackModel};
pub use guardrails::{GuardrailAction, GuardrailEvent, GuardrailStage, Verdict};
pub use handoff::{InputFilter, MAX_HANDOFFS};
pub use invocation::RuntimeInvocation;
pub use limits::{CachedInput, CountedCalls, Price, RunUsage, UsageLimit, UsageLimits};
pub use model::{Model, ModelError, ModelRequest, ModelSettings, ReasoningEffort};
pub use output::FINAL_ANSWER;
pub use partial::{parse_partial, OutputUpdate, PartialOutput};
pub use prices::{Prices, PRICES_AS_OF};
pub use record::{RecordedTurn, Recorder, Recording};
pub use scripted::{ScriptedModel, Turn};
pub use steps::{ModelTurn, RunSteps, StepKind, ToolStep};

pub use agent::{Agent, RunOptions, StepState};
pub use outcome::{Amount, RunError, RunOutcome};

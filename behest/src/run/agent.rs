//! The agent: a model, its tools and the rules of its runs, with the
//! builder methods of the rules every run has. Each feature of a run adds
//! its own builder methods and keeps its own settings ([`Features`]), in
//! its own file.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use std::any::{Any, TypeId};
use std::collections::BTreeMap;

use super::limits::UsageLimits;
use super::output::FinalOutput;
use crate::model::{Model, ModelSettings};
use crate::runtime::ToolRuntime;

/// How deep agents may nest (an agent's tool that is an agent, whose tool
/// is an agent, …) unless [`Agent::max_agent_depth`] says otherwise.
pub const MAX_AGENT_DEPTH: usize = 4;

/// A model, its tools and the rules of its runs. Cheap to clone; each
/// [`invoke`](Agent::invoke) makes one run.
#[derive(Clone)]
pub struct Agent {
    pub(super) model: Arc<dyn Model>,
    pub(super) runtime: ToolRuntime,
    pub(super) options: Arc<RunOptions>,
}

/// The rules of a run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunOptions {
    /// The agent's name, in its telemetry (`invoke_agent {name}`).
    /// Default: `agent`.
    pub name: Option<String>,
    /// How many rounds of tool calls a run may make, counted over the
    /// whole run: the bound of the agent a run starts on holds across
    /// handoffs. Default 16.
    pub max_steps: usize,
    /// How many model turns a run may make in all, across handoffs (the
    /// bound of the agent a run starts on holds). Default: no bound beyond
    /// [`max_steps`](Self::max_steps) and the usage limits.
    pub max_turns: Option<usize>,
    /// How long an external call waits for a handler's result. Default 60 s.
    pub external_deadline: Duration,
    /// How long a call waits for an approval. Default 5 minutes.
    pub approval_deadline: Duration,
    /// Tools that need an approval before each call, by name, besides those
    /// that ask for it themselves ([`Tool::needs_approval`](crate::Tool::needs_approval)).
    pub approval_required: HashSet<String>,
    /// Whether tools with the `destructive` hint need an approval. Default off.
    pub approve_destructive: bool,
    /// How long a call waits for a handler before the run says so (a
    /// [`ToolStreamEvent::Waiting`](crate::ToolStreamEvent::Waiting) event and a warning trace). Default 5 s.
    pub waiting_notice: Duration,
    /// How many times a typed run ([`Agent::with_output`]) sends an answer
    /// back for correction before it fails: a `final_answer` call or a
    /// structured answer that does not match the type, or a text instead of
    /// a `final_answer` call. Default 1.
    pub output_reminders: usize,
    /// Sampling and reasoning settings for every turn, over the model's
    /// own ([`Agent::model_settings`]).
    pub model_settings: Option<ModelSettings>,
    /// What a run may spend: requests, tokens, tool calls, cost, time
    /// ([`Agent::usage_limits`]). Default: no limits.
    pub usage_limits: UsageLimits,
    /// How deep agents may nest when run as tools ([`Agent::as_tool`]):
    /// a run's own depth is 0. Default [`MAX_AGENT_DEPTH`]; the root run's
    /// limit holds for the whole tree.
    pub max_agent_depth: usize,
    /// A system message put first in each run's conversation
    /// ([`Agent::instructions`]).
    pub instructions: Option<String>,
    /// The typed final answer asked for ([`Agent::with_output`]).
    pub(crate) final_output: Option<FinalOutput>,
    /// What the run's features were set to by the builder, each by its
    /// own type (guardrails, handoffs, the context policy, …).
    pub(crate) features: Features,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            name: None,
            max_steps: 16,
            max_turns: None,
            external_deadline: Duration::from_secs(60),
            approval_deadline: Duration::from_secs(300),
            approval_required: HashSet::new(),
            approve_destructive: false,
            waiting_notice: Duration::from_secs(5),
            output_reminders: 1,
            model_settings: None,
            usage_limits: UsageLimits::default(),
            max_agent_depth: MAX_AGENT_DEPTH,
            instructions: None,
            final_output: None,
            features: Features::default(),
        }
    }
}

impl Agent {
    /// The agent's options, to change (its own copy).
    pub(super) fn options_mut(&mut self) -> &mut RunOptions {
        Arc::make_mut(&mut self.options)
    }

    /// An agent with default [`RunOptions`].
    pub fn new(model: impl Model, runtime: ToolRuntime) -> Self {
        Self::from_arc(Arc::new(model), runtime)
    }

    /// An agent with a shared model.
    pub fn from_arc(model: Arc<dyn Model>, runtime: ToolRuntime) -> Self {
        Self {
            model,
            runtime,
            options: Arc::new(RunOptions::default()),
        }
    }

    /// Sampling and reasoning settings for this agent's turns, over the
    /// model's own: the same client can serve agents that sample
    /// differently.
    #[must_use]
    pub fn model_settings(mut self, settings: ModelSettings) -> Self {
        Arc::make_mut(&mut self.options).model_settings = Some(settings);
        self
    }

    /// How long an external call waits for a handler's result.
    #[must_use]
    pub fn external_deadline(mut self, deadline: Duration) -> Self {
        Arc::make_mut(&mut self.options).external_deadline = deadline;
        self
    }

    /// How long a call waits for an approval.
    #[must_use]
    pub fn approval_deadline(mut self, deadline: Duration) -> Self {
        Arc::make_mut(&mut self.options).approval_deadline = deadline;
        self
    }

    /// Requires an approval before each call of the tool `name`.
    #[must_use]
    pub fn require_approval(mut self, name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.options)
            .approval_required
            .insert(name.into());
        self
    }

    /// Requires an approval before each call of a tool with the
    /// `destructive` hint.
    #[must_use]
    pub fn approve_destructive(mut self, on: bool) -> Self {
        Arc::make_mut(&mut self.options).approve_destructive = on;
        self
    }

    /// Names the agent in its telemetry: a run started on it is the span
    /// `invoke_agent {name}` with `gen_ai.agent.name` (an agent called as
    /// a tool is named by its tool's name). Default `agent`.
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.options).name = Some(name.into());
        self
    }

    /// Instructions for this agent's model: a system message put first in
    /// each run's conversation (before any the conversation has). A run
    /// handed to this agent gets them in place of the last agent's.
    #[must_use]
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        Arc::make_mut(&mut self.options).instructions = Some(instructions.into());
        self
    }

    /// How deep agents may nest when run as tools (default
    /// [`MAX_AGENT_DEPTH`]); the root run's limit holds for the whole tree.
    #[must_use]
    pub fn max_agent_depth(mut self, depth: usize) -> Self {
        Arc::make_mut(&mut self.options).max_agent_depth = depth;
        self
    }

    /// How long a call waits for a handler's answer before the run says so.
    #[must_use]
    pub fn waiting_notice(mut self, after: Duration) -> Self {
        Arc::make_mut(&mut self.options).waiting_notice = after;
        self
    }

    /// The rules of this agent's runs.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// The tool runtime.
    pub fn runtime(&self) -> &ToolRuntime {
        &self.runtime
    }
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("runtime", &self.runtime)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

/// The settings of a run's features, each kept by its own type: the core
/// of a run names no feature.
#[derive(Clone, Default)]
pub(crate) struct Features(BTreeMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl Features {
    /// The settings of type `T`, if the builder set some.
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// Sets the settings of type `T`.
    pub(crate) fn set<T: Any + Send + Sync>(&mut self, value: T) {
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// Changes the settings of type `T` (from their default when unset).
    pub(crate) fn update<T: Any + Clone + Default + Send + Sync>(
        &mut self,
        change: impl FnOnce(&mut T),
    ) {
        let mut value = self.get::<T>().cloned().unwrap_or_default();
        change(&mut value);
        self.0.insert(TypeId::of::<T>(), Arc::new(value));
    }
}

impl std::fmt::Debug for Features {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Features({} set)", self.0.len())
    }
}

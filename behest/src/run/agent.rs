//! The agent and its builder: a model, its tools and the rules of its runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::prepare::PrepareTools;
use super::{
    guardrails, output, ContextPolicy, Message, Model, ModelSettings, RunError, RunOutcome,
    RuntimeInvocation, UsageLimits, MAX_AGENT_DEPTH,
};
use super::{AgentInput, AgentTool};
use crate::runtime::ToolRuntime;

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
    /// [`ToolStreamEvent::Waiting`] event and a warning trace). Default 5 s.
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
    /// The agents the model may hand the conversation to
    /// ([`Agent::handoff`]).
    pub(crate) handoffs: Vec<super::handoff::Handoff>,
    /// When and how the conversation is compacted near the model's context
    /// window ([`Agent::context`]). Default: never.
    pub context: Option<ContextPolicy>,
    /// Picks or reshapes the tools offered at each step
    /// ([`Agent::prepare_tools`]).
    pub(crate) prepare_tools: Option<PrepareTools>,
    /// Checks on the input, the answer and each tool call
    /// ([`Agent::input_guardrail`] and the others).
    pub(crate) guardrails: guardrails::Guardrails,
    /// The typed final answer asked for ([`Agent::with_output`]).
    pub(crate) final_output: Option<output::FinalOutput>,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
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
            handoffs: Vec::new(),
            prepare_tools: None,
            context: None,
            guardrails: guardrails::Guardrails::default(),
            final_output: None,
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

    /// This agent as a tool of another: the calling model gives it an
    /// `input` text (the whole of what it is asked: it sees nothing else of
    /// the conversation), it runs with its own model, tools, instructions
    /// and typed output, and its final answer is the call's output (a typed
    /// answer as structured output). Its events go into the caller's
    /// stream as [`EventKind::Agent`] events, nested under the call; its
    /// tokens count in the caller's usage and limits; the root run's
    /// request limit ([`UsageLimits::requests`]) counts every request of
    /// the tree, and agents nest at most [`max_agent_depth`](Self::max_agent_depth)
    /// deep. A failed run is the call's error, which the caller's model
    /// reads. The runtime's tool timeout (60 s unless set) holds for it;
    /// set one of its own with [`AgentTool::timeout`].
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let translator = Agent::new(
    ///     ScriptedModel::new([ScriptedTurn::text("Bonjour")]),
    ///     ToolRuntime::new(ToolRegistry::new()),
    /// );
    /// let tools = ToolRegistry::new()
    ///     .with(translator.as_tool("translate", "Translate text into French."))
    ///     .unwrap();
    /// let lead = Agent::new(
    ///     ScriptedModel::new([
    ///         ScriptedTurn::tool_calls([ToolCall::new("c1", "translate", r#"{"input": "Hello"}"#)]),
    ///         ScriptedTurn::text("It is \"Bonjour\".").expect_ok("c1", "Bonjour"),
    ///     ]),
    ///     ToolRuntime::new(tools),
    /// );
    /// let outcome = lead.invoke([Message::user("Say hello in French")]).await;
    /// assert_eq!(outcome.text(), Some("It is \"Bonjour\"."));
    /// # }
    /// ```
    pub fn as_tool(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> AgentTool<AgentInput> {
        AgentTool::new(self.clone(), name.into(), description.into())
    }

    /// [`as_tool`](Self::as_tool) with a typed input: its schema is `I`'s,
    /// and the nested run is asked with the input's JSON.
    pub fn as_tool_with<I>(
        &self,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> AgentTool<I>
    where
        I: schemars::JsonSchema + serde::Serialize + serde::de::DeserializeOwned,
    {
        AgentTool::new(self.clone(), name.into(), description.into())
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

    /// Whether the agent can run as built: every name offered to its model
    /// (its tools, its handoffs' `transfer_to_…` tools, `final_answer` for
    /// a typed answer) is offered once. Providers refuse a request with a
    /// name twice, and a second tool of a name could never be called. A
    /// run of an agent that fails this check fails at once with this
    /// error.
    ///
    /// ```
    /// use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// let agent = || Agent::new(ScriptedModel::new([]), ToolRuntime::new(ToolRegistry::new()));
    /// // "a b" and "a_b" are both offered as `transfer_to_a_b`.
    /// let triage = agent().handoff("a b", "one", agent()).handoff("a_b", "two", agent());
    /// assert!(triage.check().unwrap_err().to_string().contains("transfer_to_a_b"));
    /// ```
    pub fn check(&self) -> Result<(), RunError> {
        match name_conflict(self) {
            Some(message) => Err(RunError::Agent { message }),
            None => Ok(()),
        }
    }

    /// How long a call waits for a handler's answer before the run says so.
    #[must_use]
    pub fn waiting_notice(mut self, after: Duration) -> Self {
        Arc::make_mut(&mut self.options).waiting_notice = after;
        self
    }

    /// Asks every run for a final answer of type `T`, validated against
    /// `T`'s schema. A model that [supports structured
    /// output](Model::supports_structured_output) (the OpenAI and Gemini clients) is
    /// asked for it in that shape, and a final text that does not match is
    /// sent back with the reason; any other model gives it by calling the
    /// `final_answer` tool (offered besides the agent's tools), and a
    /// mismatch goes back as an argument error to correct. A mismatch is
    /// sent back [`output_reminders`](Self::output_reminders) times (once by
    /// default); the next one fails the run with [`RunError::Output`]. The answer is
    /// the completed run's text as JSON; [`RunOutcome::output`] reads it as
    /// `T`. See also [`output`](Self::output).
    #[must_use]
    pub fn with_output<T: schemars::JsonSchema>(mut self) -> Self {
        Arc::make_mut(&mut self.options).final_output = Some(output::FinalOutput::of::<T>());
        self
    }

    /// How many times a typed run sends an answer back for correction
    /// before it fails with [`RunError::Output`]: a `final_answer` call or a
    /// structured answer that does not match the type, or a text instead
    /// of a `final_answer` call. Default 1; 0 fails at the first mismatch.
    /// Holds for [`with_output`](Self::with_output) and
    /// [`output`](Self::output), in either order.
    #[must_use]
    pub fn output_reminders(mut self, reminders: usize) -> Self {
        Arc::make_mut(&mut self.options).output_reminders = reminders;
        self
    }

    /// Runs `conversation` for a final answer of type `T`.
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Verdict { ok: bool, reason: String }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
    ///     "c1",
    ///     "final_answer",
    ///     r#"{"ok": true, "reason": "tests pass"}"#,
    /// )])]);
    /// let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()));
    /// let verdict: Verdict = agent.output([Message::user("Is it ok?")]).await.unwrap();
    /// assert!(verdict.ok);
    /// # }
    /// ```
    pub async fn output<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &self,
        conversation: impl IntoIterator<Item = Message>,
    ) -> Result<T, RunError> {
        let outcome = self.clone().with_output::<T>().invoke(conversation).await;
        match outcome {
            RunOutcome::Failed { error, .. } => Err(error),
            RunOutcome::Cancelled { .. } => Err(RunError::Output {
                message: "the run was cancelled before the final answer".to_owned(),
            }),
            completed => completed.output(),
        }
    }

    /// The rules of this agent's runs.
    pub fn options(&self) -> &RunOptions {
        &self.options
    }

    /// The tool runtime.
    pub fn runtime(&self) -> &ToolRuntime {
        &self.runtime
    }

    /// Makes a run of `conversation`. Subscribe handlers and streams on the
    /// invocation, then `.await` it to run.
    pub fn invoke(&self, conversation: impl IntoIterator<Item = Message>) -> RuntimeInvocation {
        RuntimeInvocation::new(self.clone(), conversation.into_iter().collect())
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

/// The first name offered twice to `agent`'s model, said as the error: its
/// tools, its handoffs and the `final_answer` tool of a typed answer.
pub(crate) fn name_conflict(agent: &Agent) -> Option<String> {
    let options = &agent.options;
    let mut offered: Vec<(String, String)> = agent
        .runtime
        .registry()
        .names()
        .map(|name| (name.to_owned(), format!("the tool `{name}`")))
        .collect();
    for handoff in &options.handoffs {
        offered.push((
            handoff.tool_name(),
            format!("the handoff named `{}`", handoff.given_name),
        ));
    }
    if options.final_output.is_some() && !agent.model.supports_structured_output() {
        offered.push((
            super::FINAL_ANSWER.to_owned(),
            "the typed answer's tool".to_owned(),
        ));
    }
    let mut seen: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (name, what) in &offered {
        if let Some(before) = seen.insert(name, what) {
            return Some(format!(
                "{before} and {what} are both offered to the model as `{name}`; give them names that differ"
            ));
        }
    }
    None
}

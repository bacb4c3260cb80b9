//! The agent and its builder: a model, its tools and the rules of its runs.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use super::handoff::{self, InputFilter};
use super::RunUsage;
use super::{
    guardrails, output, ContextPolicy, Message, Model, ModelSettings, RunError, RunOutcome,
    RuntimeInvocation, UsageLimits, Verdict, MAX_AGENT_DEPTH,
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
    pub(crate) handoffs: Vec<handoff::Handoff>,
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

    /// How many rounds of tool calls a run may make, counted over the
    /// whole run: the bound of the agent a run starts on holds across
    /// handoffs. A run past it fails with [`RunError::MaxStepsExceeded`].
    #[must_use]
    pub fn max_steps(mut self, steps: usize) -> Self {
        Arc::make_mut(&mut self.options).max_steps = steps;
        self
    }

    /// How many model turns a run may make in all, across handoffs (the
    /// OpenAI Agents SDK's `max_turns`); the bound of the agent a run
    /// starts on holds. A run that would ask its model once more fails
    /// with [`RunError::MaxTurnsExceeded`]. A turn asked again (a
    /// reminder, a refused answer) counts as one.
    #[must_use]
    pub fn max_turns(mut self, turns: usize) -> Self {
        Arc::make_mut(&mut self.options).max_turns = Some(turns);
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

    /// What each run may spend: model requests, tokens, tool calls, cost
    /// and time. A run past a limit fails with [`RunError::UsageLimit`]
    /// before the request or the calls that would pass it; calls refused
    /// so get results that say why, so the transcript stays whole.
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
        Arc::make_mut(&mut self.options).usage_limits = limits;
        self
    }

    /// Checks the user's last message before the model is first asked:
    /// the guardrail `check` gets its text (a message of parts: its text
    /// parts) and may let it pass ([`Verdict::Allow`]), pass it rewritten,
    /// withhold it from the model with a note the model reads
    /// ([`Verdict::Refuse`]), or stop the run before anything happens
    /// ([`Verdict::Stop`], [`RunError::Guardrail`]). Guardrails of a stage
    /// run in the order added, each on what the one before let pass; each
    /// verdict is an [`EventKind::Guardrail`] event. A guardrail is async:
    /// it may ask a model of its own.
    ///
    /// ```
    /// use behest::run::{ScriptedTurn, Verdict};
    /// use behest::{Agent, Message, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let model = ScriptedModel::new([ScriptedTurn::text("Noted.")]);
    /// let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
    ///     .input_guardrail("no_card_numbers", |text: String| async move {
    ///         if text.chars().filter(char::is_ascii_digit).count() >= 13 {
    ///             Verdict::Rewrite(text.chars().map(|c| if c.is_ascii_digit() { '#' } else { c }).collect())
    ///         } else {
    ///             Verdict::Allow
    ///         }
    ///     });
    /// let outcome = agent.invoke([Message::user("My card is 4111 1111 1111 1111")]).await;
    /// assert_eq!(outcome.transcript()[0], Message::user("My card is #### #### #### ####"));
    /// # }
    /// ```
    #[must_use]
    pub fn input_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<String>> + Send + 'static,
    {
        let guard = guardrails::Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.input.push(guard))
    }

    /// Checks the final answer before the run completes with it: its text,
    /// or a typed answer's JSON. A rewrite is the answer (a typed run's
    /// must still match its type); a refusal is sent back for the model to
    /// answer again (a round against [`max_steps`](Self::max_steps)); a
    /// stop fails the run. See [`input_guardrail`](Self::input_guardrail).
    #[must_use]
    pub fn output_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<String>> + Send + 'static,
    {
        let guard = guardrails::Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.output.push(guard))
    }

    /// Checks each tool call once its arguments are validated, before it
    /// runs (or is put to a person or a handler): the guardrail gets the
    /// call with its validated arguments. A rewrite gives new arguments,
    /// validated again; a refusal is the call's error result, which the
    /// model reads, and the tool does not run; a stop does not run it and
    /// fails the run once the round's other calls have their results. See
    /// [`input_guardrail`](Self::input_guardrail).
    #[must_use]
    pub fn tool_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn(crate::ToolCall) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<serde_json::Value>> + Send + 'static,
    {
        let guard = guardrails::Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.tool_call.push(guard))
    }

    /// Checks each tool call's output before the model sees it: the
    /// guardrail gets the call and its output. A rewrite is the output the
    /// model reads; a refusal withholds it (the model reads why, as the
    /// call's error); a stop fails the run once the round's calls have
    /// their results. See [`input_guardrail`](Self::input_guardrail).
    #[must_use]
    pub fn tool_output_guardrail<F, Fut>(self, name: impl Into<String>, check: F) -> Self
    where
        F: Fn((crate::ToolCall, crate::ToolOutput)) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Verdict<crate::ToolOutput>> + Send + 'static,
    {
        let guard = guardrails::Guard::new(name, check);
        self.with_guardrails(|guardrails| guardrails.tool_output.push(guard))
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
        Arc::make_mut(&mut self.options).prepare_tools = Some(PrepareTools(Arc::new(prepare)));
        self
    }

    /// Keeps each run's conversation within the model's context window:
    /// before each model request, when the conversation's size (the last
    /// turn's token count plus an estimate of what came after it) passes
    /// `policy`'s share of the window, it is compacted as `policy` says,
    /// every tool result left beside its call, and an
    /// [`EventKind::Compacted`] event says how much. The run's transcript
    /// is the compacted conversation; its usage still counts what was
    /// dropped.
    ///
    /// ```
    /// use behest::run::{context_window_of, Compaction, ContextPolicy};
    /// use behest::{Agent, ScriptedModel, ToolRegistry, ToolRuntime};
    ///
    /// let window = context_window_of("gpt-4.1").unwrap();
    /// let agent = Agent::new(ScriptedModel::new([]), ToolRuntime::new(ToolRegistry::new()))
    ///     .context(ContextPolicy::new(window).compaction(Compaction::DropOldTurns { keep: 20 }));
    /// # let _ = agent;
    /// ```
    #[must_use]
    pub fn context(mut self, policy: ContextPolicy) -> Self {
        Arc::make_mut(&mut self.options).context = Some(policy);
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

    /// Lets the model hand the conversation to `agent`, by calling the tool
    /// `transfer_to_<name>` (offered beside the agent's own, described by
    /// `description`; characters of `name` a provider refuses in a tool
    /// name become `_`). The run goes on there: the conversation so far
    /// (this agent's instructions replaced by that agent's), that agent's
    /// model, tools, guardrails and typed output; the run's usage and
    /// request count carry over, and its events say so
    /// ([`EventKind::Handoff`]). The handoff call gets a result saying where
    /// the conversation went; other calls of the turn are not run. A run
    /// is handed off at most [`MAX_HANDOFFS`] times.
    ///
    /// ```
    /// use behest::run::ScriptedTurn;
    /// use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let billing = Agent::new(
    ///     ScriptedModel::new([ScriptedTurn::text("Your invoice is on its way.")]),
    ///     ToolRuntime::new(ToolRegistry::new()),
    /// )
    /// .instructions("You handle billing.");
    /// let triage = Agent::new(
    ///     ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new("h1", "transfer_to_billing", "{}")])]),
    ///     ToolRuntime::new(ToolRegistry::new()),
    /// )
    /// .instructions("You route questions.")
    /// .handoff("billing", "invoices and payments", billing);
    /// let outcome = triage.invoke([Message::user("Where is my invoice?")]).await;
    /// assert_eq!(outcome.text(), Some("Your invoice is on its way."));
    /// assert_eq!(outcome.transcript()[0], Message::system("You handle billing."));
    /// # }
    /// ```
    #[must_use]
    pub fn handoff(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Agent,
    ) -> Self {
        self.with_handoff(name.into(), description.into(), agent, None)
    }

    /// [`handoff`](Self::handoff), the conversation passed through
    /// `filter` first (to drop tool calls and their results, keep the last
    /// messages, summarise, …). What it returns must keep each tool result
    /// beside its call and begin with the user: the run checks, and fails
    /// with [`RunError::Context`] if not. What it returns must keep each tool result
    /// beside its call and begin with the user: the run checks, and fails
    /// with [`RunError::Context`] if not.
    #[must_use]
    pub fn handoff_filtered(
        self,
        name: impl Into<String>,
        description: impl Into<String>,
        agent: Agent,
        filter: impl Fn(Vec<Message>) -> Vec<Message> + Send + Sync + 'static,
    ) -> Self {
        let filter: InputFilter = Arc::new(filter);
        self.with_handoff(name.into(), description.into(), agent, Some(filter))
    }

    /// How deep agents may nest when run as tools (default
    /// [`MAX_AGENT_DEPTH`]); the root run's limit holds for the whole tree.
    #[must_use]
    pub fn max_agent_depth(mut self, depth: usize) -> Self {
        Arc::make_mut(&mut self.options).max_agent_depth = depth;
        self
    }

    /// This agent able to hand the conversation to `agent` under `name`.
    fn with_handoff(
        mut self,
        name: String,
        description: String,
        agent: Agent,
        filter: Option<InputFilter>,
    ) -> Self {
        Arc::make_mut(&mut self.options)
            .handoffs
            .push(handoff::Handoff {
                name: handoff::tool_safe(&name),
                given_name: name,
                description,
                agent,
                filter,
            });
        if let Some(conflict) = name_conflict(&self) {
            tracing::error!(%conflict, "the agent cannot run");
        }
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

    /// This agent with its guardrails changed by `add`.
    fn with_guardrails(mut self, add: impl FnOnce(&mut guardrails::Guardrails)) -> Self {
        add(&mut Arc::make_mut(&mut self.options).guardrails);
        self
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

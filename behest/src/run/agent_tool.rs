//! Agents as tools: an [`Agent`] registered as a tool of another. The
//! calling model asks it something; it runs (its own model, tools,
//! instructions and typed output) and its final answer is the call's
//! output. Its events go into the calling run's stream, nested under the
//! call ([`EventKind::Agent`]); its usage is the call's
//! ([`ToolOutput::usage`]); how deep agents nest and how many model
//! requests the whole tree makes are bounded.

use std::marker::PhantomData;
use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::books::Lineage;
use super::events::{Envelope, EventKind};
use super::steps::{RunSteps, ToolStep};
use super::{Agent, RunOutcome, RunState};
use crate::conversation::Message;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec};

/// What the calling model gives an agent run as a tool
/// ([`Agent::as_tool`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentInput {
    /// What the agent is asked to do, in full: it sees nothing else of
    /// the conversation.
    pub input: String,
}

/// One event of an agent run as a tool, in its caller's stream.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct AgentEvent {
    /// The tool's name: which agent.
    pub agent: String,
    /// The call of the caller that runs it.
    pub call_id: String,
    /// The nested run's id.
    pub run_id: String,
    /// The nested run's event (itself an [`EventKind::Agent`] when that
    /// agent calls another).
    pub kind: Box<EventKind>,
}

/// Given to an agent's call that goes on: the state its run stopped at,
/// its waits answered there.
pub(crate) struct ResumeAgent(pub(crate) RunState);

/// A task aborted when its handle is dropped: the forwarder of a nested
/// run's events, so that none reaches the caller after a call that timed
/// out or was cancelled.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Agent {
    /// This agent as a tool of another: the calling model gives it an
    /// `input` text (the whole of what it is asked: it sees nothing else of
    /// the conversation), it runs with its own model, tools, instructions
    /// and typed output, and its final answer is the call's output (a typed
    /// answer as structured output). Its events go into the caller's
    /// stream as [`EventKind::Agent`] events, nested under the call; its
    /// tokens count in the caller's usage and limits; the root run's
    /// request limit ([`UsageLimits::requests`](crate::run::UsageLimits::requests)) counts every request of
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
}

/// An [`Agent`] as a tool of another ([`Agent::as_tool`],
/// [`Agent::as_tool_with`]): its input schema is `I`'s, its output the
/// nested run's final answer (a typed answer as structured output).
pub struct AgentTool<I = AgentInput> {
    core: AgentCall,
    description: String,
    timeout: Option<Duration>,
    _input: PhantomData<fn(I)>,
}

/// What runs an agent as a tool, whatever its input type: its name, the
/// agent, and how a call's arguments become what it is asked.
pub(crate) struct AgentCall {
    name: String,
    agent: Agent,
    ask: fn(Value) -> ToolResult<String>,
}

impl<I> std::fmt::Debug for AgentTool<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.core.name)
            .field("agent", &self.core.agent)
            .finish_non_exhaustive()
    }
}

impl<I: Serialize + DeserializeOwned> AgentTool<I> {
    pub(crate) fn new(agent: Agent, name: String, description: String) -> Self {
        Self {
            core: AgentCall {
                name,
                agent,
                ask: ask_of::<I>,
            },
            description,
            timeout: None,
            _input: PhantomData,
        }
    }
}

impl<I> AgentTool<I> {
    /// How long the nested run may take (the runtime's default tool
    /// timeout, 60 s unless set, otherwise).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

/// What the agent is asked, from a call's arguments: the `input` text of
/// an [`AgentInput`], or the typed input's JSON.
fn ask_of<I: Serialize + DeserializeOwned>(arguments: Value) -> ToolResult<String> {
    let input: I = serde_json::from_value(arguments)
        .map_err(|error| ToolError::execution(format!("the input does not fit: {error}")))?;
    match serde_json::to_value(&input) {
        Ok(Value::Object(object))
            if object.len() == 1 && object.get("input").is_some_and(Value::is_string) =>
        {
            Ok(object["input"].as_str().unwrap_or_default().to_owned())
        }
        Ok(value) => Ok(value.to_string()),
        Err(error) => Err(ToolError::execution(error.to_string())),
    }
}

impl<I> Tool for AgentTool<I>
where
    I: schemars::JsonSchema + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.core.name
    }

    fn spec(&self) -> ToolSpec {
        let mut parameters = crate::derived::schema_of::<I>();
        if let Some(object) = parameters.as_object_mut() {
            object.remove("$schema");
        }
        ToolSpec::new(&self.core.name, &self.description, parameters)
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        self.core
            .run(arguments, None, String::new(), None, None)
            .await
    }

    async fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        let lineage = context.extension::<Lineage>().cloned();
        let call_id = context.call_id().to_owned();
        let cancellation = context.cancellation().clone();
        let resumed = context
            .extension::<ResumeAgent>()
            .map(|ResumeAgent(state)| state.clone());
        tokio::select! {
            output = self.core.run(arguments, lineage, call_id, resumed, None) => output,
            () = cancellation.cancelled() => Err(ToolError::Cancelled),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn __agent(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        Some(&self.core)
    }
}

impl AgentCall {
    /// The nested run of `arguments`, under `lineage` (none when the tool
    /// is called outside a run), its events nested under `call_id`; going
    /// on from `resumed`, the state it stopped at, if given; its turns and
    /// calls carried out by `steps`, when a durable engine drives it.
    pub(crate) async fn run(
        &self,
        arguments: Value,
        lineage: Option<Lineage>,
        call_id: String,
        resumed: Option<RunState>,
        steps: Option<&dyn RunSteps>,
    ) -> ToolResult<ToolOutput> {
        let ask = (self.ask)(arguments)?;
        let depth = lineage.as_ref().map_or(0, |lineage| lineage.depth) + 1;
        let max_depth = lineage
            .as_ref()
            .map_or(self.agent.options.max_agent_depth, |lineage| {
                lineage.max_depth
            });
        if depth > max_depth {
            return Err(ToolError::execution(format!(
                "not run: agents may nest {max_depth} deep, and `{}` would be {depth} deep",
                self.name
            )));
        }
        let invocation = match resumed {
            Some(state) => self.agent.resume(state),
            None => self.agent.invoke([Message::user(ask)]),
        };
        // Its approvals and external calls are the root's to answer, by
        // their path through this call.
        let nested = lineage.clone().map(|lineage| Lineage {
            depth,
            emitter: invocation.emitter(),
            answers: lineage.answers.below(&self.name, &call_id),
            ..lineage
        });
        // The nested run's books are written into the caller's as it
        // spends, whatever becomes of the call.
        let invocation = invocation.with_lineage(nested);
        // Every nested event reaches the caller's stream before the call's
        // result does: the forwarder is awaited once the run is over.
        let mut forwarding = None;
        if let Some(lineage) = &lineage {
            // What the nested run spends goes into the caller's books as it
            // spends: its output's usage is not counted again.
            crate::sync::lock(&lineage.booked).insert(call_id.clone());
            let parent = lineage.emitter.clone();
            let agent = self.name.clone();
            let events = invocation.events();
            let call_id = call_id.clone();
            forwarding = Some(AbortOnDrop(tokio::spawn(async move {
                events
                    .for_each(|Envelope { run_id, kind, .. }| {
                        parent.emit(EventKind::Agent(AgentEvent {
                            agent: agent.clone(),
                            call_id: call_id.clone(),
                            run_id: run_id.to_string(),
                            kind: Box::new(kind),
                        }));
                        std::future::ready(())
                    })
                    .await;
            })));
        }
        // The OpenTelemetry GenAI names of an agent's invocation.
        let span = tracing::info_span!(
            "invoke_agent",
            otel.name = format!("invoke_agent {}", self.name),
            gen_ai.operation.name = "invoke_agent",
            gen_ai.agent.name = %self.name,
            behest.agent.depth = depth,
        );
        let running: std::pin::Pin<Box<dyn std::future::Future<Output = RunOutcome> + Send + '_>> =
            match steps {
                Some(steps) => Box::pin(invocation.drive_with(steps)),
                None => Box::pin(std::future::IntoFuture::into_future(invocation)),
            };
        let outcome = tracing::Instrument::instrument(running, span).await;
        if let Some(mut forwarding) = forwarding {
            let _forwarded = (&mut forwarding.0).await;
        }
        // Shown with the result; the caller's books counted it already.
        let usage = outcome.usage();
        let mut output = match outcome {
            RunOutcome::Completed { text, .. } => {
                if self.agent.options.final_output.is_some() {
                    match serde_json::from_str::<Value>(&text) {
                        Ok(value) => ToolOutput::json(value),
                        Err(_) => ToolOutput::text(text),
                    }
                } else {
                    ToolOutput::text(text)
                }
            }
            RunOutcome::Failed { error, .. } => {
                return Err(ToolError::execution(format!(
                    "the agent `{}` failed: {error}",
                    self.name
                )))
            }
            RunOutcome::Cancelled { .. } => return Err(ToolError::Cancelled),
            // Its root stops at its waits: the caller stops at this call,
            // with the nested run's state.
            RunOutcome::Paused { state } => {
                return match &lineage {
                    Some(lineage) => {
                        crate::sync::lock(&lineage.stops).insert(call_id, *state);
                        Err(ToolError::execution("waiting"))
                    }
                    None => Err(ToolError::execution(format!(
                        "the agent `{}` stopped at a wait",
                        self.name
                    ))),
                }
            }
        };
        output.usage = Some(usage);
        Ok(output)
    }
}

impl ToolStep {
    /// For a call of an agent run as a tool ([`Agent::as_tool`](super::Agent::as_tool)),
    /// the agent's tool name; `None` for any other call.
    pub fn agent(&self) -> Option<&str> {
        self.agent_call().map(|_| self.call.tool_name.as_str())
    }

    /// Runs the call, an agent's with `steps` carrying out the nested run's
    /// own model turns, calls and decisions, one by one, as the root's
    /// are: an engine that journals a tree of agents step by step gives a
    /// view of its steps that names them under the call (and answers its
    /// waits by their paths). Any other call runs as [`run`](Self::run)
    /// runs it. The nested run's answer meets the runtime's output limit.
    pub fn run_with<'s>(
        self,
        steps: &'s dyn RunSteps,
    ) -> futures::future::BoxFuture<'s, ToolResult<ToolOutput>> {
        let (Some(tool), true) = (
            self.local_run().tool().cloned(),
            self.agent_call().is_some(),
        ) else {
            return self.into_run().run();
        };
        let arguments = self.local_run().arguments().clone();
        let lineage = self.local_run().extension::<Lineage>().cloned();
        let call_id = self.local_run().call_id().to_owned();
        let runtime = self.local_run().runtime().clone();
        Box::pin(async move {
            let Some(agent) = tool
                .__agent()
                .and_then(|agent| agent.downcast_ref::<AgentCall>())
            else {
                return Err(crate::tool::ToolError::execution("not an agent"));
            };
            let output = agent
                .run(arguments, lineage, call_id, None, Some(steps))
                .await?;
            runtime.within_output_limit(output)
        })
    }

    fn agent_call(&self) -> Option<&AgentCall> {
        self.local_run()
            .tool()?
            .__agent()?
            .downcast_ref::<AgentCall>()
    }
}

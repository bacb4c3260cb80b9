//! Agents as tools: an [`Agent`] registered as a tool of another. The
//! calling model asks it something; it runs (its own model, tools,
//! instructions and typed output) and its final answer is the call's
//! output. Its events go into the calling run's stream, nested under the
//! call ([`EventKind::Agent`]); its usage is the call's
//! ([`ToolOutput::usage`]); how deep agents nest and how many model
//! requests the whole tree makes are bounded.

use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::events::{Emitter, Envelope, EventKind};
use super::{Agent, RunOutcome};
use crate::conversation::Message;
use crate::tool::{Tool, ToolContext, ToolError, ToolOutput, ToolResult, ToolSpec};

/// How deep agents may nest (an agent's tool that is an agent, whose tool
/// is an agent, …) unless [`Agent::max_agent_depth`] says otherwise.
pub const MAX_AGENT_DEPTH: usize = 4;

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

/// Where a run stands in a tree of agents: its depth, and its books, which
/// an agent it runs as a tool writes into as it spends. A call of a run
/// carries it, so an agent run as a tool knows its caller.
#[derive(Clone)]
pub(crate) struct Lineage {
    pub(crate) depth: usize,
    pub(crate) max_depth: usize,
    /// The books of the run holding the call.
    pub(crate) books: super::books::Books,
    /// The caller's events, where the nested run's go.
    pub(crate) emitter: Arc<Emitter>,
}

impl Lineage {
    /// The root of a tree: a run nobody called.
    pub(crate) fn root(agent: &Agent, books: super::books::Books, emitter: Arc<Emitter>) -> Self {
        Self {
            depth: 0,
            max_depth: agent.options.max_agent_depth,
            books,
            emitter,
        }
    }
}

/// A task aborted when its handle is dropped: the forwarder of a nested
/// run's events, so that none reaches the caller after a call that timed
/// out or was cancelled.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// An [`Agent`] as a tool of another ([`Agent::as_tool`],
/// [`Agent::as_tool_with`]): its input schema is `I`'s, its output the
/// nested run's final answer (a typed answer as structured output).
pub struct AgentTool<I = AgentInput> {
    name: String,
    description: String,
    agent: Agent,
    timeout: Option<Duration>,
    _input: PhantomData<fn(I)>,
}

impl<I> std::fmt::Debug for AgentTool<I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTool")
            .field("name", &self.name)
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

impl<I> AgentTool<I> {
    pub(crate) fn new(agent: Agent, name: String, description: String) -> Self {
        Self {
            name,
            description,
            agent,
            timeout: None,
            _input: PhantomData,
        }
    }

    /// How long the nested run may take (the runtime's default tool
    /// timeout, 60 s unless set, otherwise).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }
}

impl<I> Tool for AgentTool<I>
where
    I: schemars::JsonSchema + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn spec(&self) -> ToolSpec {
        let mut parameters = crate::derived::schema_of::<I>();
        if let Some(object) = parameters.as_object_mut() {
            object.remove("$schema");
        }
        ToolSpec::new(&self.name, &self.description, parameters)
    }

    async fn execute(&self, arguments: Value) -> ToolResult<ToolOutput> {
        self.run(arguments, None, String::new()).await
    }

    async fn execute_with_context(
        &self,
        arguments: Value,
        context: ToolContext,
    ) -> ToolResult<ToolOutput> {
        let lineage = context.extension::<Lineage>().cloned();
        let call_id = context.call_id().to_owned();
        let cancellation = context.cancellation().clone();
        tokio::select! {
            output = self.run(arguments, lineage, call_id) => output,
            () = cancellation.cancelled() => Err(ToolError::Cancelled),
        }
    }

    fn timeout(&self) -> Option<Duration> {
        self.timeout
    }
}

impl<I> AgentTool<I>
where
    I: Serialize + DeserializeOwned,
{
    /// The nested run of `arguments`, under `lineage` (none when the tool
    /// is called outside a run), its events nested under `call_id`.
    async fn run(
        &self,
        arguments: Value,
        lineage: Option<Lineage>,
        call_id: String,
    ) -> ToolResult<ToolOutput> {
        let input: I = serde_json::from_value(arguments)
            .map_err(|error| ToolError::execution(format!("the input does not fit: {error}")))?;
        let ask = match serde_json::to_value(&input) {
            Ok(Value::Object(object))
                if object.len() == 1 && object.get("input").is_some_and(Value::is_string) =>
            {
                object["input"].as_str().unwrap_or_default().to_owned()
            }
            Ok(value) => value.to_string(),
            Err(error) => return Err(ToolError::execution(error.to_string())),
        };
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
        let invocation = self.agent.invoke([Message::user(ask)]);
        let nested = lineage.clone().map(|lineage| Lineage {
            depth,
            emitter: invocation.emitter(),
            ..lineage
        });
        // The nested run's books are written into the caller's as it
        // spends, whatever becomes of the call.
        let invocation = invocation.with_lineage(nested);
        // Every nested event reaches the caller's stream before the call's
        // result does: the forwarder is awaited once the run is over.
        let mut forwarding = None;
        if let Some(lineage) = &lineage {
            let parent = lineage.emitter.clone();
            let agent = self.name.clone();
            let events = invocation.events();
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
        let running = std::future::IntoFuture::into_future(invocation);
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
            // A nested run is never asked to stop at its waits.
            RunOutcome::Paused { .. } => {
                return Err(ToolError::execution(format!(
                    "the agent `{}` stopped at a wait",
                    self.name
                )))
            }
        };
        output.usage = Some(usage);
        Ok(output)
    }
}

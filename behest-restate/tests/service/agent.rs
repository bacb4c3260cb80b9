//! The agent of the durable-run tests, served by the test service and run
//! in process by the tests for comparison. Its model and tools append a
//! line to a file each time they work, so that what a crash repeats is
//! counted across processes.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use behest::run::{ModelError, ModelRequest};
use behest::{external_tool, json, tool, Agent, AssistantMessage, Message, Model, ToolCall};
use behest::{ToolContext, ToolRegistry, ToolRuntime};

/// Appends `line` to `name` in the folder `BEHEST_TEST_COUNTS` names.
fn record(name: &str, line: &str) {
    let Some(dir) = std::env::var_os("BEHEST_TEST_COUNTS") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PathBuf::from(dir).join(name))
        .expect("the count file");
    writeln!(file, "{line}").expect("a count");
}

/// Appends a line to `name`.
fn count(name: &str) {
    record(name, "1");
}

/// What the test agent does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Two tallies, then a question to a person, then the answer.
    Plain,
    /// The same, each tally needing an approval.
    Approve,
    /// A tally and the question in one turn, then the answer.
    Paired,
    /// One slow call of a tool not marked idempotent (`work`), then the
    /// answer.
    Slow,
    /// One call of a tool whose output is over a durable step's limit,
    /// then the answer.
    Big,
    /// As many tallies as the user's first message says (`count 200`),
    /// one turn each, then the answer.
    Long,
    /// Two refunds at once, each through a tree of agents as deep as the
    /// user's message says (`depth 2`): `front` hands to `desk`, `desk`
    /// to `billing`, and billing refunds once approved.
    Nested,
    /// As `Plain`, with instructions, an input guardrail that masks digits
    /// and an output guardrail that shouts the answer: a transcript changed
    /// in place.
    Guarded,
    /// One call of `render`, a tool imported from an MCP server that
    /// answers with a task, then the answer.
    McpTask,
}

impl Mode {
    /// The mode a service is started in (`approve`, `paired`, `slow`,
    /// `big`, `long`; anything else is plain).
    pub fn parse(text: Option<&str>) -> Self {
        match text {
            Some("approve") => Self::Approve,
            Some("paired") => Self::Paired,
            Some("slow") => Self::Slow,
            Some("big") => Self::Big,
            Some("long") => Self::Long,
            Some("nested") => Self::Nested,
            Some("guarded") => Self::Guarded,
            Some("mcp-task") => Self::McpTask,
            _ => Self::Plain,
        }
    }
}

/// A model whose answer follows from the conversation alone, as a run
/// played back needs.
pub struct Steady {
    pub mode: Mode,
}

impl Model for Steady {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        count("model");
        let results: Vec<&str> = request
            .conversation
            .iter()
            .filter_map(|message| match message {
                Message::ToolResult(result) => Some(result.content.as_str()),
                _ => None,
            })
            .collect();
        let n = results.len();
        let call = |name: &str, arguments| ToolCall::new(format!("c{n}"), name, arguments);
        let done = || AssistantMessage::text(format!("done: {}", results.join(", ")));
        // `count N`: N steps, in the long mode.
        let asked = request
            .conversation
            .first()
            .and_then(|message| match message {
                Message::User { text } => text.strip_prefix("count ")?.parse::<usize>().ok(),
                _ => None,
            });
        Ok(match (self.mode, n) {
            (Mode::Paired, 0) => AssistantMessage::text("").with_tool_calls([
                ToolCall::new("t", "tally", json!({"step": 0})),
                ToolCall::new("q", "ask_person", json!({"question": "go on?"})),
            ]),
            (Mode::Slow, 0) => {
                AssistantMessage::text("").with_tool_calls([call("work", json!({"step": 0}))])
            }
            (Mode::McpTask, 0) => {
                AssistantMessage::text("").with_tool_calls([call("render", json!({"page": 7}))])
            }
            (Mode::Big, 0) => {
                AssistantMessage::text("").with_tool_calls([call("big", json!({"bytes": 5 << 20}))])
            }
            (Mode::Long, n) if n < asked.unwrap_or(0) => {
                AssistantMessage::text("").with_tool_calls([call("tally", json!({"step": n}))])
            }
            (Mode::Plain | Mode::Approve | Mode::Guarded, 0 | 1) => {
                AssistantMessage::text("").with_tool_calls([call("tally", json!({"step": n}))])
            }
            (Mode::Plain | Mode::Approve | Mode::Guarded, 2) => AssistantMessage::text("")
                .with_tool_calls([call("ask_person", json!({"question": "go on?"}))]),
            _ => done(),
        })
    }
}

/// The lead of the nested mode: two refunds at once, through the agent
/// as deep as asked, then what they said.
struct Lead;

impl Model for Lead {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let conversation = request.conversation;
        let results = tool_results(conversation);
        if !results.is_empty() {
            return Ok(AssistantMessage::text(results.join(" | ")));
        }
        let depth = match conversation.first() {
            Some(Message::User { text }) => text.strip_prefix("depth ").unwrap_or("1").to_owned(),
            _ => "1".to_owned(),
        };
        let agent = match depth.as_str() {
            "3" => "front",
            "2" => "desk",
            _ => "billing",
        };
        let ask = |id: &str, order: &str| ToolCall::new(id, agent, json!({ "input": order }));
        Ok(AssistantMessage::text("").with_tool_calls([ask("c1", "7"), ask("c2", "8")]))
    }
}

/// An agent of the tree: hands what it is asked to `tool` as the call
/// `id`, then says what came back, as `name`.
struct Relay {
    name: &'static str,
    tool: &'static str,
    id: &'static str,
}

impl Model for Relay {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        let conversation = request.conversation;
        if let Some(result) = tool_results(conversation).first() {
            return Ok(AssistantMessage::text(format!("{}: {result}", self.name)));
        }
        let asked = match conversation.first() {
            Some(Message::User { text }) => text.clone(),
            _ => String::new(),
        };
        let arguments = if self.tool == "refund" {
            json!({ "order": asked.parse::<u32>().unwrap_or(0) })
        } else {
            json!({ "input": asked })
        };
        Ok(AssistantMessage::text("")
            .with_tool_calls([ToolCall::new(self.id, self.tool, arguments)]))
    }
}

fn tool_results(conversation: &[Message]) -> Vec<String> {
    conversation
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.content.clone()),
            _ => None,
        })
        .collect()
}

/// Refund an order, once approved: records its idempotency key.
#[tool]
async fn refund(order: u32, #[ctx] cx: ToolContext) -> String {
    record("refund", cx.idempotency_key().unwrap_or("none"));
    format!("refunded {order}")
}

/// The nested mode's tree: `front` over `desk` over `billing`.
fn nested() -> Agent {
    let billing = Agent::new(
        Relay {
            name: "billing",
            tool: "refund",
            id: "r1",
        },
        ToolRuntime::new(ToolRegistry::new().with(Refund).expect("refund")),
    )
    .require_approval("refund")
    .approval_deadline(Duration::from_secs(600));
    let relay = |name, tool, id, below: &Agent| {
        let tools = ToolRegistry::new()
            .with(below.as_tool(tool, "Ask it."))
            .expect("the agent");
        Agent::new(Relay { name, tool, id }, ToolRuntime::new(tools))
    };
    let desk = relay("desk", "billing", "d1", &billing);
    let front = relay("front", "desk", "f1", &desk);
    let tools = ToolRegistry::new()
        .with(billing.as_tool("billing", "Billing."))
        .and_then(|tools| tools.with(desk.as_tool("desk", "The desk.")))
        .and_then(|tools| tools.with(front.as_tool("front", "The front.")))
        .expect("the agents");
    Agent::new(Lead, ToolRuntime::new(tools))
        .approval_deadline(Duration::from_secs(600))
        .max_steps(100)
}

/// Count a step.
#[tool(idempotent)]
fn tally(step: u32) -> String {
    count("tally");
    format!("step {step} counted")
}

/// Do slow work that must not be done twice unasked: records its start
/// (with its idempotency key) and its end.
#[tool]
async fn work(step: u32, #[ctx] cx: ToolContext) -> String {
    let key = cx.idempotency_key().unwrap_or("none").to_owned();
    record("work", &key);
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    count("work_done");
    format!("step {step} worked")
}

/// Return `bytes` bytes.
#[tool(idempotent)]
fn big(bytes: usize) -> String {
    "x".repeat(bytes)
}

/// Ask a person.
#[external_tool]
pub struct AskPerson {
    question: String,
}

/// The agent of the `mcp-task` mode: `registry`'s tools (imported from
/// an MCP server), called once.
#[cfg_attr(not(feature = "mcp"), allow(dead_code))]
pub fn mcp_agent(registry: ToolRegistry) -> Agent {
    Agent::new(
        Steady {
            mode: Mode::McpTask,
        },
        ToolRuntime::new(registry),
    )
    .max_steps(10)
}

/// The agent, its external deadline `external_deadline`, doing what
/// `mode` says.
pub fn agent(external_deadline: Duration, mode: Mode) -> Agent {
    if mode == Mode::Nested {
        return nested();
    }
    let registry = ToolRegistry::new()
        .with(Tally)
        .expect("tally")
        .with(Work)
        .expect("work")
        .with(Big)
        .expect("big")
        .with(AskPerson::external_tool())
        .expect("ask_person");
    // Outputs as large as a durable step can hold reach it, unless the
    // test sets a smaller limit.
    let max_output = std::env::var("BEHEST_TEST_MAX_OUTPUT")
        .ok()
        .and_then(|limit| limit.parse().ok())
        .unwrap_or(64 << 20);
    let runtime = ToolRuntime::builder(registry)
        .max_output_bytes(max_output)
        .build();
    let agent = Agent::new(Steady { mode }, runtime)
        .external_deadline(external_deadline)
        .approval_deadline(Duration::from_secs(600))
        .max_steps(10_000)
        // Counts each time it is asked: a journaled verdict is not asked
        // again when the run is played back.
        .tool_guardrail("counted", |_call: ToolCall| async {
            count("guardrail");
            behest::run::Verdict::Allow
        });
    match mode {
        Mode::Approve => agent.require_approval("tally"),
        Mode::Guarded => agent
            .instructions("Count twice, then ask the person.")
            .input_guardrail("digits", |text: String| async move {
                let masked: String = text
                    .chars()
                    .map(|c| if c.is_ascii_digit() { '#' } else { c })
                    .collect();
                behest::run::Verdict::Rewrite(masked)
            })
            .output_guardrail("shout", |text: String| async move {
                behest::run::Verdict::Rewrite(text.to_uppercase())
            }),
        _ => agent,
    }
}

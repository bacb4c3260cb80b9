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
            (Mode::Big, 0) => {
                AssistantMessage::text("").with_tool_calls([call("big", json!({"bytes": 5 << 20}))])
            }
            (Mode::Long, n) if n < asked.unwrap_or(0) => {
                AssistantMessage::text("").with_tool_calls([call("tally", json!({"step": n}))])
            }
            (Mode::Plain | Mode::Approve, 0 | 1) => {
                AssistantMessage::text("").with_tool_calls([call("tally", json!({"step": n}))])
            }
            (Mode::Plain | Mode::Approve, 2) => AssistantMessage::text("")
                .with_tool_calls([call("ask_person", json!({"question": "go on?"}))]),
            _ => done(),
        })
    }
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

/// The agent, its external deadline `external_deadline`, doing what
/// `mode` says.
pub fn agent(external_deadline: Duration, mode: Mode) -> Agent {
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
    if mode == Mode::Approve {
        agent.require_approval("tally")
    } else {
        agent
    }
}

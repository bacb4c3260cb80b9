//! The agent of the durable-run tests, served by the test service and run
//! in process by the tests for comparison. Its model and tool append a line
//! to a file each time they work, so that what a crash repeats is counted
//! across processes.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use behest::run::{ModelError, ModelRequest};
use behest::{external_tool, json, tool, Agent, AssistantMessage, Message, Model, ToolCall};
use behest::{ToolRegistry, ToolRuntime};

/// Appends a line to `name` in the folder `BEHEST_TEST_COUNTS` names.
fn count(name: &str) {
    let Some(dir) = std::env::var_os("BEHEST_TEST_COUNTS") else {
        return;
    };
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PathBuf::from(dir).join(name))
        .expect("the count file");
    writeln!(file, "1").expect("a count");
}

/// A model whose answer follows from the conversation alone: two tallies,
/// then a question to a person, then the answer; or, `paired`, a tally and
/// the question in one turn, then the answer.
pub struct Steady {
    pub paired: bool,
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
        if self.paired {
            return Ok(if n == 0 {
                AssistantMessage::text("").with_tool_calls([
                    ToolCall::new("t", "tally", json!({"step": 0})),
                    ToolCall::new("q", "ask_person", json!({"question": "go on?"})),
                ])
            } else {
                AssistantMessage::text(format!("done: {}", results.join(", ")))
            });
        }
        Ok(match n {
            0 | 1 => {
                AssistantMessage::text("").with_tool_calls([call("tally", json!({"step": n}))])
            }
            2 => AssistantMessage::text("")
                .with_tool_calls([call("ask_person", json!({"question": "go on?"}))]),
            _ => AssistantMessage::text(format!("done: {}", results.join(", "))),
        })
    }
}

/// Count a step.
#[tool(idempotent)]
fn tally(step: u32) -> String {
    count("tally");
    format!("step {step} counted")
}

/// Ask a person.
#[external_tool]
pub struct AskPerson {
    question: String,
}

/// The agent, its external deadline `external_deadline`; with `approve`,
/// each tally needs an approval; `paired`, its calls come in one turn.
pub fn agent(external_deadline: Duration, approve: bool, paired: bool) -> Agent {
    let registry = ToolRegistry::new()
        .with(Tally)
        .expect("tally")
        .with(AskPerson::external_tool())
        .expect("ask_person");
    let agent = Agent::new(Steady { paired }, ToolRuntime::new(registry))
        .external_deadline(external_deadline);
    if approve {
        agent.require_approval("tally")
    } else {
        agent
    }
}

//! Guardrails.

use behest::run::{GuardrailAction, GuardrailStage, RunError, ScriptedTurn, Verdict};
use behest::{
    tool, Agent, EventKind, Message, RunOutcome, ScriptedModel, ToolCall, ToolOutput, ToolRegistry,
    ToolRuntime,
};
use futures::StreamExt;
use serde_json::json;

/// Transfer money.
#[tool]
fn transfer(cents: u32, to: String) -> String {
    format!("sent {cents} to {to}")
}

/// Read a customer's file.
#[tool(read_only)]
fn read_file(customer: String) -> String {
    format!("{customer}: card 4111111111111111, balance 10 EUR")
}

fn runtime() -> ToolRuntime {
    ToolRuntime::new(
        ToolRegistry::new()
            .with(Transfer)
            .unwrap()
            .with(ReadFile)
            .unwrap(),
    )
}

fn results(outcome: &RunOutcome) -> Vec<String> {
    outcome
        .transcript()
        .iter()
        .filter_map(|message| match message {
            Message::ToolResult(result) => Some(result.content.clone()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_input_guardrail_can_stop_the_run_before_the_model_is_asked() {
    let model = ScriptedModel::new([]);
    let agent = Agent::new(model, runtime()).input_guardrail("topic", |text: String| async move {
        if text.contains("weapons") {
            Verdict::Stop("off topic".to_owned())
        } else {
            Verdict::Allow
        }
    });
    let run = agent.invoke([Message::user("tell me about weapons")]);
    let events = run.events();
    let outcome = run.await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert_eq!(
        *error,
        RunError::Guardrail {
            guardrail: "topic".into(),
            stage: GuardrailStage::Input,
            reason: "off topic".into(),
        }
    );
    let fired: Vec<_> = events
        .filter_map(|event| async move {
            match event.kind {
                EventKind::Guardrail(fired) => Some(fired),
                _ => None,
            }
        })
        .collect()
        .await;
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].action, GuardrailAction::Stopped);
    assert_eq!(fired[0].reason.as_deref(), Some("off topic"));
}

#[tokio::test]
async fn a_refused_input_is_withheld_and_the_model_reads_why() {
    let model = ScriptedModel::new([ScriptedTurn::text("I can't read that.")]);
    let agent = Agent::new(model, runtime()).input_guardrail("size", |text: String| async move {
        if text.len() > 20 {
            Verdict::Refuse("the message is too long".to_owned())
        } else {
            Verdict::Allow
        }
    });
    let outcome = agent
        .invoke([Message::user("a very long message indeed")])
        .await;
    assert_eq!(outcome.text(), Some("I can't read that."));
    let Message::User { text } = &outcome.transcript()[0] else {
        panic!("{outcome:?}");
    };
    assert!(
        text.contains("withheld") && text.contains("too long"),
        "{text}"
    );
    assert!(!text.contains("very long message"), "{text}");
}

#[tokio::test]
async fn a_stopping_tool_guardrail_runs_nothing_and_fails_the_run_with_every_call_answered() {
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([
        ToolCall::new("c1", "transfer", r#"{"cents": 900000, "to": "mallory"}"#),
        ToolCall::new("c2", "read_file", r#"{"customer": "ada"}"#),
    ])]);
    let agent = Agent::new(model, runtime()).tool_guardrail("limit", |call: ToolCall| async move {
        match call.arguments["cents"].as_u64() {
            Some(cents) if cents > 100_000 => {
                Verdict::Stop(format!("{cents} cents is over the limit"))
            }
            _ => Verdict::Allow,
        }
    });
    let outcome = agent.invoke([Message::user("send it all")]).await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(
        matches!(
            error,
            RunError::Guardrail {
                stage: GuardrailStage::ToolCall,
                ..
            }
        ),
        "{error}"
    );
    let results = results(&outcome);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results[0].contains("stopped the run"), "{results:?}");
    assert!(
        !results.iter().any(|result| result.starts_with("sent")),
        "{results:?}"
    );
}

#[tokio::test]
async fn a_tool_guardrail_refuses_or_rewrites_validated_arguments() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new(
            "c1",
            "transfer",
            r#"{"cents": 500, "to": "Bob"}"#,
        )]),
        ScriptedTurn::tool_calls([ToolCall::new(
            "c2",
            "transfer",
            r#"{"cents": 500, "to": "eve"}"#,
        )])
        .expect_ok("c1", "sent 500 to bob"),
        ScriptedTurn::text("done").expect_error("c2", "not on the list"),
    ]);
    let agent = Agent::new(model, runtime())
        // Names are lower-cased before the check below sees them.
        .tool_guardrail("lower", |call: ToolCall| async move {
            let to = call.arguments["to"].as_str().unwrap_or_default();
            if to.chars().any(char::is_uppercase) {
                let mut arguments = call.arguments.clone();
                arguments["to"] = json!(to.to_lowercase());
                Verdict::Rewrite(arguments)
            } else {
                Verdict::Allow
            }
        })
        .tool_guardrail("payees", |call: ToolCall| async move {
            if call.arguments["to"] == "eve" {
                Verdict::Refuse("eve is not on the list of payees".to_owned())
            } else {
                Verdict::Allow
            }
        });
    let outcome = agent.invoke([Message::user("pay bob and eve")]).await;
    assert_eq!(outcome.text(), Some("done"), "{outcome:?}");
    let sent: Vec<String> = results(&outcome)
        .into_iter()
        .filter(|result| result.starts_with("sent"))
        .collect();
    assert_eq!(sent, ["sent 500 to bob"]);
}

#[tokio::test]
async fn a_rewrite_that_breaks_the_schema_is_the_calls_argument_error() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new(
            "c1",
            "transfer",
            r#"{"cents": 5, "to": "bob"}"#,
        )]),
        ScriptedTurn::text("ok").expect_error("c1", "cents"),
    ]);
    let agent =
        Agent::new(model, runtime()).tool_guardrail("broken", |call: ToolCall| async move {
            let mut arguments = call.arguments.clone();
            arguments["cents"] = json!("five");
            Verdict::Rewrite(arguments)
        });
    let outcome = agent.invoke([Message::user("pay bob")]).await;
    assert_eq!(outcome.text(), Some("ok"), "{outcome:?}");
}

#[tokio::test]
async fn an_output_guardrail_masks_what_a_tool_returns_before_the_model_sees_it() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "read_file", r#"{"customer": "ada"}"#)]),
        ScriptedTurn::text("done"),
    ]);
    let agent = Agent::new(model, runtime()).tool_output_guardrail(
        "cards",
        |(_call, output): (ToolCall, ToolOutput)| async move {
            let text = output.text.clone().unwrap_or_default();
            Verdict::Rewrite(ToolOutput::text(text.replace("4111111111111111", "[card]")))
        },
    );
    let outcome = agent.invoke([Message::user("read ada's file")]).await;
    let results = results(&outcome);
    assert_eq!(results, ["ada: card [card], balance 10 EUR"]);
}

#[tokio::test]
async fn a_refused_answer_is_sent_back_and_the_next_one_is_taken() {
    let model = ScriptedModel::new([
        ScriptedTurn::text("Your password is hunter2."),
        ScriptedTurn::text("I can't share that."),
    ]);
    let agent =
        Agent::new(model, runtime()).output_guardrail("secrets", |answer: String| async move {
            if answer.contains("password") {
                Verdict::Refuse("answers must not reveal passwords".to_owned())
            } else {
                Verdict::Allow
            }
        });
    let outcome = agent.invoke([Message::user("what is my password?")]).await;
    assert_eq!(outcome.text(), Some("I can't share that."));
    let told = outcome.transcript().iter().any(|message| {
        matches!(message, Message::User { text } if text.contains("must not reveal passwords"))
    });
    assert!(told, "{outcome:?}");
}

#[tokio::test]
async fn a_typed_answer_rewritten_must_still_match_its_type() {
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Score {
        score: u8,
    }
    for (rewrite, ok) in [(r#"{"score": 5}"#, true), (r#"{"score": "high"}"#, false)] {
        let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
            "c1",
            "final_answer",
            r#"{"score": 9}"#,
        )])]);
        let agent = Agent::new(model, runtime())
            .with_output::<Score>()
            .output_guardrail("cap", move |_answer: String| async move {
                Verdict::Rewrite(rewrite.to_owned())
            });
        let outcome = agent.invoke([Message::user("score it")]).await;
        if ok {
            assert_eq!(outcome.text(), Some(r#"{"score":5}"#), "{outcome:?}");
        } else {
            assert!(
                matches!(
                    outcome,
                    RunOutcome::Failed {
                        error: RunError::Output { .. },
                        ..
                    }
                ),
                "{outcome:?}"
            );
        }
    }
}

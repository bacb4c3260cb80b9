//! Guardrails on every side of a run: the user's message (card numbers
//! masked), each tool call before it runs (a transfer over the limit
//! stops the run before any money moves), each tool's output before the
//! model reads it (secrets withheld), and the final answer (one that
//! names a password is sent back). A guardrail is async: `judge_with_a_model`
//! asks a model of its own.
//!
//! Offline, the models are scripted. To use real ones, swap the lines that
//! make `model` and `judge` (for example
//! `behest::models::openai::Chat::new("gpt-4.1-mini")`, with the `models`
//! feature and `OPENAI_API_KEY`).
//!
//! Run: `cargo run --example guardrails`

use std::sync::Arc;

use behest::prelude::*;
use behest::run::{ScriptedTurn, Verdict};

/// Look a customer's account up.
#[tool(read_only)]
fn account(customer: String) -> String {
    format!("{customer}: balance 1 200 EUR; online banking password: hunter2")
}

/// Transfer money to a payee.
#[tool]
fn transfer(cents: u64, to: String) -> String {
    format!("sent {:.2} EUR to {to}", cents as f64 / 100.0)
}

/// Masks every run of 13 to 19 digits (spaces allowed), as card numbers.
fn mask_cards(text: &str) -> String {
    let mut masked = String::new();
    let mut digits = String::new();
    let flush = |digits: &mut String, masked: &mut String| {
        let count = digits.chars().filter(char::is_ascii_digit).count();
        if (13..=19).contains(&count) {
            masked.push_str("[card]");
            if digits.ends_with(' ') {
                masked.push(' ');
            }
        } else {
            masked.push_str(digits);
        }
        digits.clear();
    };
    for c in text.chars() {
        if c.is_ascii_digit() || (c == ' ' && !digits.is_empty()) {
            digits.push(c);
        } else {
            flush(&mut digits, &mut masked);
            masked.push(c);
        }
    }
    flush(&mut digits, &mut masked);
    masked
}

/// Asks `judge` whether `answer` gives away a secret: "yes" refuses it.
async fn judge_with_a_model(judge: Arc<dyn Model>, answer: String) -> Verdict<String> {
    let question = Message::user(format!(
        "Does this answer reveal a password or a secret? Say yes or no.\n\n{answer}"
    ));
    match judge.respond_dyn(&[question], &[]).await {
        Ok(reply) if reply.text.as_deref().unwrap_or_default().starts_with("yes") => {
            Verdict::Refuse("answers must not reveal passwords or secrets".to_owned())
        }
        Ok(_) => Verdict::Allow,
        // A judge that cannot answer lets nothing through.
        Err(error) => Verdict::Stop(format!("the judge failed: {error}")),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "account", r#"{"customer": "ada"}"#)]),
        ScriptedTurn::text("Ada's balance is 1 200 EUR and her password is hunter2."),
        ScriptedTurn::text("Ada's balance is 1 200 EUR."),
        ScriptedTurn::tool_calls([ToolCall::new(
            "c2",
            "transfer",
            r#"{"cents": 5000000, "to": "mallory"}"#,
        )]),
    ]);
    let judge: Arc<dyn Model> = Arc::new(ScriptedModel::new([
        ScriptedTurn::text("yes"),
        ScriptedTurn::text("no"),
    ]));

    let registry = ToolRegistry::new().with(Account)?.with(Transfer)?;
    let agent = Agent::new(model, ToolRuntime::new(registry))
        .input_guardrail("mask_cards", |text: String| async move {
            let masked = mask_cards(&text);
            if masked == text {
                Verdict::Allow
            } else {
                Verdict::Rewrite(masked)
            }
        })
        .tool_guardrail("transfer_limit", |call: ToolCall| async move {
            match call.arguments["cents"].as_u64() {
                Some(cents) if call.tool_name == "transfer" && cents > 100_000 => {
                    Verdict::Stop(format!(
                        "a transfer of {} EUR is over the 1 000 EUR limit",
                        cents / 100
                    ))
                }
                _ => Verdict::Allow,
            }
        })
        .tool_output_guardrail(
            "no_passwords",
            |(_call, output): (ToolCall, ToolOutput)| async move {
                let text = output.text.clone().unwrap_or_default();
                match text.split_once("; online banking password") {
                    Some((kept, _)) => Verdict::Rewrite(ToolOutput::text(kept)),
                    None => Verdict::Allow,
                }
            },
        )
        .output_guardrail("judge", move |answer: String| {
            judge_with_a_model(judge.clone(), answer)
        });

    // First run: the answer goes through the judge.
    let outcome = agent
        .invoke([Message::user(
            "What is Ada's balance? My card is 4111 1111 1111 1111.",
        )])
        .await;
    println!("user said: {:?}", outcome.transcript()[0]);
    println!("answer: {}", outcome.text().unwrap_or("none"));

    // Second run: the transfer trips the limit before it runs.
    let outcome = agent
        .invoke([Message::user("Send 50 000 EUR to mallory.")])
        .await;
    match &outcome {
        RunOutcome::Failed { error, .. } => println!("stopped: {error}"),
        other => println!("ended: {:?}", other.state()),
    }
    Ok(())
}

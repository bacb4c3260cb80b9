//! Fallback models.

use behest::run::{Failure, FallbackModel, Model, ModelError, ModelRequest, ScriptedTurn};
use behest::{
    Agent, AssistantMessage, EventKind, Message, ModelDelta, RunOutcome, ScriptedModel, StopKind,
    StopReason, ToolRegistry, ToolRuntime,
};
use futures::StreamExt;

fn agent(model: FallbackModel) -> Agent {
    Agent::new(model, ToolRuntime::new(ToolRegistry::new()))
}

fn failing(error: ModelError) -> ScriptedModel {
    ScriptedModel::new([ScriptedTurn::error(error)])
}

fn answering(text: &str) -> ScriptedModel {
    ScriptedModel::new([ScriptedTurn::text(text)])
}

/// The turn's model is named in the transcript.
fn answered_by(outcome: &RunOutcome) -> Option<String> {
    outcome
        .transcript()
        .iter()
        .rev()
        .find_map(|message| match message {
            Message::Assistant(reply) => reply.model.clone(),
            _ => None,
        })
}

#[tokio::test]
async fn a_rate_limited_model_falls_back_and_the_turn_names_who_answered() {
    let model = FallbackModel::new(
        "main",
        failing(ModelError::new("slow down").with_status(429)),
    )
    .then(
        "busy",
        failing(ModelError::new("overloaded").with_kind("overloaded_error")),
    )
    .then("spare", answering("from the spare"));
    let outcome = agent(model).invoke([Message::user("hi")]).await;
    assert_eq!(outcome.text(), Some("from the spare"));
    assert_eq!(answered_by(&outcome).as_deref(), Some("spare"));
}

#[tokio::test]
async fn a_failure_not_named_is_the_turns_error_and_no_other_model_is_asked() {
    let spare = ScriptedModel::new([ScriptedTurn::text("never")]);
    let model = FallbackModel::new(
        "main",
        failing(ModelError::new("bad request").with_status(400)),
    )
    .then("spare", spare);
    let outcome = agent(model).invoke([Message::user("hi")]).await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    assert!(error.to_string().contains("bad request"), "{error}");
}

#[tokio::test]
async fn when_every_model_fails_the_error_names_what_each_said() {
    let model = FallbackModel::new("a", failing(ModelError::new("a is down").with_status(503)))
        .then(
            "b",
            failing(ModelError::new("b timed out").with_status(504)),
        );
    let outcome = agent(model).invoke([Message::user("hi")]).await;
    let RunOutcome::Failed { error, .. } = &outcome else {
        panic!("{outcome:?}");
    };
    let said = error.to_string();
    assert!(
        said.contains("b timed out") && said.contains("a: a is down"),
        "{said}"
    );
}

#[tokio::test]
async fn refusals_and_full_context_windows_fall_back_when_named() {
    let mut refused = AssistantMessage::text("I can't help with that.");
    refused.stop = Some(StopReason::new(StopKind::Refused, "refusal"));
    let too_long = ModelError::new("prompt is too long: 250000 tokens > 200000 maximum")
        .with_status(400)
        .with_kind("invalid_request_error");
    let model = FallbackModel::new("strict", ScriptedModel::new([ScriptedTurn::reply(refused)]))
        .then("small", failing(too_long))
        .then("large", answering("here it is"))
        .on([Failure::Refused, Failure::ContextWindow]);
    let outcome = agent(model).invoke([Message::user("hi")]).await;
    assert_eq!(outcome.text(), Some("here it is"), "{outcome:?}");
    assert_eq!(answered_by(&outcome).as_deref(), Some("large"));
}

/// A model that streams part of its turn, then fails.
struct Stutters;
impl Model for Stutters {
    async fn complete(&self, request: ModelRequest<'_>) -> Result<AssistantMessage, ModelError> {
        request.send_delta(ModelDelta::Text("Hel".into()));
        Err(ModelError::new("connection reset").with_status(502))
    }
}

#[tokio::test]
async fn what_a_failed_model_streamed_is_voided_before_the_next_streams() {
    let model = FallbackModel::new("stutters", Stutters).then("spare", answering("Hello"));
    let run = agent(model).invoke([Message::user("hi")]);
    let events = run.events();
    let outcome = run.await;
    assert_eq!(outcome.text(), Some("Hello"));
    let deltas: Vec<ModelDelta> = events
        .filter_map(|event| async move {
            match event.kind {
                EventKind::ModelDelta(delta) => Some(delta),
                _ => None,
            }
        })
        .collect()
        .await;
    assert_eq!(
        deltas[..3],
        [
            ModelDelta::Text("Hel".into()),
            ModelDelta::Restart,
            // Told for a viewer: who failed, who is asked next, and why.
            ModelDelta::Fallback {
                from: "stutters".into(),
                to: "spare".into(),
                error: "connection reset".into(),
            },
        ],
        "{deltas:?}"
    );
}

//! Streamed partial output.

use behest::run::{OutputUpdate, ScriptedTurn};
use behest::{Agent, Message, ScriptedModel, ToolCall, ToolRegistry, ToolRuntime};
use futures::StreamExt;

#[derive(Debug, Clone, PartialEq, serde::Deserialize, schemars::JsonSchema)]
struct Recipe {
    title: String,
    steps: Vec<String>,
}

/// What a UI shows while the recipe streams: every field optional.
#[derive(Debug, Clone, PartialEq, Default, serde::Deserialize)]
#[serde(default)]
struct Draft {
    title: Option<String>,
    steps: Vec<String>,
}

const RECIPE: &str = r#"{"title": "Pancakes", "steps": ["mix", "fry", "serve"]}"#;

async fn updates(model: ScriptedModel) -> Vec<OutputUpdate<Draft>> {
    let agent = Agent::new(model, ToolRuntime::new(ToolRegistry::new())).with_output::<Recipe>();
    let run = agent.invoke([Message::user("a recipe")]);
    let updates = run.partial_output::<Draft>();
    let outcome = run.await;
    let recipe: Recipe = outcome.output().unwrap();
    assert_eq!(recipe.steps, ["mix", "fry", "serve"]);
    updates.collect().await
}

/// Fields grow as they stream and the last update is the validated
/// answer, through `final_answer`'s arguments and through structured
/// output alike.
fn check(updates: &[OutputUpdate<Draft>]) {
    let partials: Vec<&Draft> = updates
        .iter()
        .filter_map(|update| match update {
            OutputUpdate::Partial(draft) => Some(draft),
            OutputUpdate::Final(_) => None,
        })
        .collect();
    assert!(partials.len() >= 5, "{updates:?}");
    // Each partial is a prefix of the next: titles grow, steps are added.
    for pair in partials.windows(2) {
        let (before, after) = (pair[0], pair[1]);
        let title = before.title.clone().unwrap_or_default();
        assert!(
            after.title.clone().unwrap_or_default().starts_with(&title),
            "{pair:?}"
        );
        assert!(after.steps.len() >= before.steps.len(), "{pair:?}");
    }
    // A string shows as far as it is written.
    let cut_title = partials
        .iter()
        .any(|draft| draft.title.as_ref().is_some_and(|title| title.len() < 8));
    assert!(cut_title, "{partials:?}");
    let cut_step = partials
        .iter()
        .any(|draft| draft.steps.len() == 3 && draft.steps[2] != "serve");
    assert!(cut_step, "{partials:?}");
    let Some(OutputUpdate::Final(last)) = updates.last() else {
        panic!("no final update: {updates:?}");
    };
    assert_eq!(last.steps, ["mix", "fry", "serve"]);
}

#[tokio::test]
async fn a_final_answer_call_streams_as_partial_values_then_the_validated_one() {
    let model = ScriptedModel::new([ScriptedTurn::tool_calls([ToolCall::new(
        "c1",
        "final_answer",
        RECIPE,
    )])])
    .with_streaming(4);
    check(&updates(model).await);
}

#[tokio::test]
async fn structured_output_streams_as_partial_values_then_the_validated_one() {
    let model = ScriptedModel::new([ScriptedTurn::text(RECIPE)])
        .with_structured_output(true)
        .with_streaming(4);
    check(&updates(model).await);
}

/// A streamed answer that does not match is sent back: the next turn's
/// partials start from nothing, not from the refused one's.
#[tokio::test]
async fn a_refused_answer_does_not_leak_into_the_next_ones_partials() {
    let model = ScriptedModel::new([
        ScriptedTurn::tool_calls([ToolCall::new("c1", "final_answer", r#"{"title": "Wrong"}"#)]),
        ScriptedTurn::tool_calls([ToolCall::new("c2", "final_answer", RECIPE)]),
    ])
    .with_streaming(4);
    let updates = updates(model).await;
    let refused = updates
        .iter()
        .rposition(|update| {
            matches!(update, OutputUpdate::Partial(draft) if draft.title.as_deref() == Some("Wrong"))
        })
        .unwrap();
    let after = &updates[refused + 1..];
    // No update after the refusal carries the refused answer's title.
    assert!(
        after.iter().all(|update| match update {
            OutputUpdate::Partial(draft) | OutputUpdate::Final(draft) => draft
                .title
                .as_deref()
                .is_none_or(|title| "Pancakes".starts_with(title)),
        }),
        "{after:?}"
    );
    check(after);
}

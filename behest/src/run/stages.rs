//! Every stage of a run, in the order they are asked (see `stage.rs`).

use super::stage::Stage;

/// Every stage, in the order they are asked (outputs: the other way
/// round).
pub(super) const STAGES: [&dyn Stage; 6] = [
    &super::handoff::Handoffs,
    &super::guardrails::Guarded,
    &super::bounds::Bounds,
    &super::context::Context,
    &super::prepare::Prepared,
    &super::answer::Answer,
];

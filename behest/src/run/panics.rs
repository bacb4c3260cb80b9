//! Panics in the parts of a run that its builder was given (guardrails,
//! handoff filters, context policies, preparations of the tools): caught
//! where they are called and made the run's error, named after the part,
//! never an unwind into the caller's task.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;

use super::RunError;

/// Calls `part`, named `name`: its value, or the run's error for its panic.
pub(crate) fn caught<T>(name: &str, part: impl FnOnce() -> T) -> Result<T, RunError> {
    std::panic::catch_unwind(AssertUnwindSafe(part)).map_err(|payload| panicked(name, &*payload))
}

/// Awaits `part`, named `name`: its value, or the run's error for a panic
/// while it was made or polled.
pub(crate) async fn caught_async<F: Future>(
    name: &str,
    part: impl FnOnce() -> F,
) -> Result<F::Output, RunError> {
    let future = caught(name, part)?;
    AssertUnwindSafe(future)
        .catch_unwind()
        .await
        .map_err(|payload| panicked(name, &*payload))
}

/// The run's error for a panic of `name` with `payload`.
fn panicked(name: &str, payload: &(dyn Any + Send)) -> RunError {
    let message =
        crate::sync::panic_message(payload).unwrap_or_else(|| "a panic with no message".to_owned());
    tracing::error!(part = name, %message, "a part of the run panicked");
    RunError::Panicked {
        part: name.to_owned(),
        message,
    }
}

//! The tail every call that runs a tool shares, whichever route read its
//! arguments: the cancellation check, a place in the gate, the tool's
//! first poll, and, for a call that waits, its timeout, cancellation and
//! panic isolation until it ends; then its guard and the output limit.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::future::{BoxFuture, CatchUnwind};
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::gate::Place;
use super::guard::CallGuard;
use super::{CallOptions, ToolRuntime};
use crate::registry::Entry;
use crate::tool::{ToolContext, ToolError, ToolOutput, ToolResult};

/// How far a call went without waiting.
pub(super) enum Started<'a> {
    /// It ended, its outcome (before the output limit) written.
    Done,
    /// It waits, for a place or for its tool.
    Waiting(Waiting<'a>),
}

/// What a call that did not end at once waits for.
pub(super) enum Waiting<'a> {
    /// A place (the gate was full): its tool's future is built once it
    /// has one.
    Queued(Start<'a>),
    /// Its tool: the future after a first poll that did not finish, with
    /// its place.
    Running(BoxFuture<'a, ToolResult<ToolOutput>>, Place<'a>),
}

/// Builds a tool's future; an error (a panic while it was built) is the
/// call's outcome.
pub(super) type Start<'a> =
    Box<dyn FnOnce() -> ToolResult<BoxFuture<'a, ToolResult<ToolOutput>>> + Send + 'a>;

/// A tool's future that did not finish on its first poll, a panic in it
/// caught.
type Running<'a> = CatchUnwind<AssertUnwindSafe<BoxFuture<'a, ToolResult<ToolOutput>>>>;

impl ToolRuntime {
    /// The start of every call's tail, up to its tool's first poll: a
    /// cancelled call ends; a call that finds no free place waits for one
    /// (its future built then); otherwise the tool's future, built by
    /// `start`, is polled once, straight into `ended` (the outcome is not
    /// copied from where the future returns it). Most calls end here.
    ///
    /// Runs under its route's `catch_unwind`, which makes a panic in the
    /// tool's poll its outcome ([`panicked_in`](Self::panicked_in)).
    #[inline]
    pub(super) fn admit<'a>(
        &'a self,
        cancellation: Option<&CancellationToken>,
        start: impl FnOnce() -> ToolResult<BoxFuture<'a, ToolResult<ToolOutput>>> + Send + 'a,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Started<'a> {
        if cancellation.is_some_and(CancellationToken::is_cancelled) {
            *ended = Poll::Ready(Err(ToolError::Cancelled));
            return Started::Done;
        }
        let Some(place) = self.inner.gate.try_enter() else {
            return Started::Waiting(Waiting::Queued(Box::new(start)));
        };
        // A tool that fails to start (a panic while its future is built)
        // answers that, however a cancellation raced it.
        let mut future = match start() {
            Ok(future) => future,
            Err(error) => {
                *ended = Poll::Ready(Err(error));
                return Started::Done;
            }
        };
        let mut noop = Context::from_waker(Waker::noop());
        *ended = future.as_mut().poll(&mut noop);
        if ended.is_pending() {
            return Started::Waiting(Waiting::Running(future, place));
        }
        if cancellation.is_some_and(CancellationToken::is_cancelled) {
            *ended = Poll::Ready(Err(ToolError::Cancelled));
        }
        Started::Done
    }

    /// The error of a panic that a route's `catch_unwind` caught: a call
    /// cancelled from another thread once its tool had `started` answers
    /// `Cancelled`, whatever the tool did (its panic is still traced).
    pub(super) fn panicked_in(
        &self,
        entry: &Entry,
        payload: &(dyn Any + Send),
        started: bool,
        cancellation: Option<&CancellationToken>,
    ) -> ToolError {
        let error = panicked(payload, entry.reveals_panics);
        if started && cancellation.is_some_and(CancellationToken::is_cancelled) {
            return ToolError::Cancelled;
        }
        error
    }

    /// The rest of a call that waits: for a place, then for its tool,
    /// under its timeout and cancellation; then its end ([`settle`](Self::settle)).
    pub(super) async fn wait_out<'a>(
        &'a self,
        entry: &'a Entry,
        waiting: Waiting<'a>,
        cancellation: Option<CancellationToken>,
        guard: CallGuard,
    ) -> ToolResult<ToolOutput> {
        let cancellation = cancellation.as_ref();
        let mut outcome = match waiting {
            Waiting::Queued(start) => self.queue(entry, cancellation, start).await,
            Waiting::Running(future, place) => {
                let running = AssertUnwindSafe(future).catch_unwind();
                self.run_on(entry, place, running, cancellation).await
            }
        };
        self.settle(guard, &mut outcome);
        outcome
    }

    /// The end of every call that ran its tool: its guard settles on the
    /// tool's outcome, then the output limit applies.
    pub(super) fn settle(&self, guard: CallGuard, outcome: &mut ToolResult<ToolOutput>) {
        guard.settle(outcome);
        if let Ok(output) = outcome {
            if let Err(error) = self.output_fits(output) {
                *outcome = Err(error);
            }
        }
    }

    /// Runs a validated call of `entry`'s tool (the checked route's steps
    /// 4 and 5): the tail above, its future built by the tool's own
    /// `execute` once the call holds a place, since a hand-written one may
    /// run code (or panic) while building it.
    pub(super) async fn execute(
        &self,
        entry: &Entry,
        call_id: &str,
        arguments: Value,
        options: CallOptions,
    ) -> ToolResult<ToolOutput> {
        let context = self.context(call_id, &options);
        let guard = CallGuard::default();
        guard.watch(&context);
        let cancellation = options.cancellation.as_ref();
        let start = move || guarded(entry, || entry.tool.invoke(arguments, context));
        let mut ended = Poll::Pending;
        let step = std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.admit(cancellation, start, &mut ended)
        }));
        let started = match step {
            Ok(started) => started,
            Err(payload) => {
                let error = self.panicked_in(entry, payload.as_ref(), true, cancellation);
                ended = Poll::Ready(Err(error));
                Started::Done
            }
        };
        match (started, ended) {
            (Started::Done, Poll::Ready(mut outcome)) => {
                self.settle(guard, &mut outcome);
                outcome
            }
            (Started::Waiting(waiting), _) => {
                self.wait_out(entry, waiting, options.cancellation.clone(), guard)
                    .await
            }
            (Started::Done, Poll::Pending) => unreachable!("a call ended without its outcome"),
        }
    }

    /// The context of one call.
    pub(super) fn context(&self, call_id: &str, options: &CallOptions) -> ToolContext {
        ToolContext::for_call(
            call_id.to_owned(),
            options.cancellation.clone(),
            options.progress.clone(),
            self.inner.state.clone(),
            options.extensions.clone(),
        )
    }

    /// A call that found the gate full: waits for a place, then builds its
    /// tool's future and runs it.
    async fn queue<'a>(
        &'a self,
        entry: &'a Entry,
        cancellation: Option<&CancellationToken>,
        start: Start<'a>,
    ) -> ToolResult<ToolOutput> {
        let place = self.acquire(cancellation).await?;
        let future = start()?;
        match first_poll(entry, future) {
            Ok(outcome) => self.ended(outcome, cancellation),
            Err(running) => self.run_on(entry, place, running, cancellation).await,
        }
    }

    /// A tool that did not finish on its first poll: it keeps its place
    /// until it ends.
    async fn run_on(
        &self,
        entry: &Entry,
        place: Place<'_>,
        running: Running<'_>,
        cancellation: Option<&CancellationToken>,
    ) -> ToolResult<ToolOutput> {
        let timeout = entry.timeout.unwrap_or(self.inner.limits.default_timeout);
        let outcome = match self.wait(running, timeout, cancellation).await? {
            Ok(Ok(result)) => result,
            Ok(Err(payload)) => Err(panicked(payload.as_ref(), entry.reveals_panics)),
            Err(_elapsed) => Err(ToolError::Timeout { after: timeout }),
        };
        drop(place);
        self.ended(outcome, cancellation)
    }

    /// The outcome of a call that ran.
    fn ended(
        &self,
        outcome: ToolResult<ToolOutput>,
        cancellation: Option<&CancellationToken>,
    ) -> ToolResult<ToolOutput> {
        // Cancelled from another thread while the tool was polled: it may
        // have finished because it saw its token. A cancelled call answers
        // `Cancelled`, however the race went (a panic was traced).
        if cancellation.is_some_and(CancellationToken::is_cancelled) {
            return Err(ToolError::Cancelled);
        }
        outcome
    }

    /// Waits for a place, or for the call to be cancelled first.
    async fn acquire(&self, cancellation: Option<&CancellationToken>) -> ToolResult<Place<'_>> {
        let gate = &self.inner.gate;
        match cancellation {
            Some(token) => tokio::select! {
                biased;
                () = token.cancelled() => Err(ToolError::Cancelled),
                place = gate.enter() => Ok(place),
            },
            None => Ok(gate.enter().await),
        }
    }

    /// Waits for a tool that did not finish at once: under its timeout, and
    /// until cancellation (plus the grace) when the call can be cancelled.
    async fn wait<F: Future>(
        &self,
        future: F,
        timeout: Duration,
        cancellation: Option<&CancellationToken>,
    ) -> ToolResult<Result<F::Output, tokio::time::error::Elapsed>> {
        let guarded = tokio::time::timeout(timeout, future);
        let Some(token) = cancellation else {
            return Ok(guarded.await);
        };
        let mut guarded = std::pin::pin!(guarded);
        tokio::select! {
            biased;
            () = token.cancelled() => {
                // The tool sees its token too: let it wind down (release
                // locks, stop children) before it is dropped.
                let grace = self.inner.limits.cancellation_grace;
                let _wound_down = tokio::time::timeout(grace, &mut guarded).await;
                Err(ToolError::Cancelled)
            }
            finished = &mut guarded => Ok(finished),
        }
    }
}

/// Polls a tool's future once, a panic in it caught: its outcome, or the
/// future that did not finish. Polling again with the real waker
/// afterwards is what the `Future` contract asks of every poller.
fn first_poll<'a>(
    entry: &Entry,
    future: BoxFuture<'a, ToolResult<ToolOutput>>,
) -> Result<ToolResult<ToolOutput>, Running<'a>> {
    let mut running = AssertUnwindSafe(future).catch_unwind();
    match (&mut running).now_or_never() {
        Some(Ok(outcome)) => Ok(outcome),
        Some(Err(payload)) => Ok(Err(panicked(payload.as_ref(), entry.reveals_panics))),
        None => Err(running),
    }
}

/// Runs `build` (which makes a tool's future), a panic in it becoming
/// [`ToolError::Panicked`].
fn guarded<T>(entry: &Entry, build: impl FnOnce() -> T) -> ToolResult<T> {
    std::panic::catch_unwind(AssertUnwindSafe(build))
        .map_err(|payload| panicked(payload.as_ref(), entry.reveals_panics))
}

fn panicked(payload: &(dyn Any + Send), reveal: bool) -> ToolError {
    let payload = crate::sync::panic_message(payload)
        .unwrap_or_else(|| "a panic with a payload that is not a string".to_owned());
    // The message is the tool's to reveal (it can carry what the tool was
    // handling); the trace says it panicked, and shows it only then.
    if reveal {
        tracing::error!(panic = %payload, "tool panicked");
    } else {
        tracing::error!(
            panic_bytes = payload.len(),
            "tool panicked (its message is hidden: the tool does not reveal panics)"
        );
    }
    ToolError::Panicked { payload, reveal }
}

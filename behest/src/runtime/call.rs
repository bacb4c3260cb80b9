//! The future of one call.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use tracing::Span;

use super::{CallOptions, RunHooks, ToolRuntime};
use crate::tool::{ToolCall, ToolCallResult, ToolOutput, ToolResult};

/// What [`ToolRuntime::call`] returns: on its first poll it runs the call
/// as far as it goes without waiting, which ends most calls; a call that
/// waits keeps the rest on the heap.
///
/// Written out rather than `async`: the future is made and moved by every
/// caller, and an `async` body would keep every local it ever holds (the
/// call twice over, its outcome, the span) in a future four times larger.
#[must_use = "a call runs only when its future is polled"]
pub(crate) struct CallFuture<'a> {
    state: State<'a>,
}

enum State<'a> {
    /// Not polled yet.
    Start {
        runtime: &'a ToolRuntime,
        call: ToolCall,
        options: CallOptions,
        hooks: Option<&'a &'a dyn RunHooks>,
    },
    /// Waiting for the rest of the call, under its span (which is entered
    /// to poll the rest, and to drop it: see the `Drop` impl).
    Later {
        call_id: String,
        tool_name: String,
        span: Span,
        started: Option<Instant>,
        rest: BoxFuture<'a, ToolResult<ToolOutput>>,
    },
    /// Returned its result.
    Done,
}

impl<'a> CallFuture<'a> {
    pub(super) fn new(
        runtime: &'a ToolRuntime,
        call: ToolCall,
        options: CallOptions,
        hooks: Option<&'a &'a dyn RunHooks>,
    ) -> Self {
        Self {
            state: State::Start {
                runtime,
                call,
                options,
                hooks,
            },
        }
    }
}

impl Future for CallFuture<'_> {
    type Output = ToolCallResult;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ToolCallResult> {
        // Every field is `Unpin`: the state moves freely.
        let this = self.get_mut();
        let (call_id, tool_name, span, started, mut rest) = if let State::Start {
            runtime,
            call,
            options,
            hooks,
        } = &mut this.state
        {
            // Taken field by field, not the whole state at once: the
            // call is most of it, and the common call ends here.
            let (runtime, hooks) = (*runtime, hooks.copied());
            // Every field of the call and of its options (the patterns
            // name them all: a new one must be taken here too).
            let ToolCall {
                call_id,
                tool_name,
                arguments,
            } = call;
            let CallOptions {
                cancellation,
                progress,
                extensions,
            } = options;
            let options = CallOptions {
                cancellation: cancellation.take(),
                progress: progress.take(),
                extensions: std::mem::take(extensions),
            };
            let call_id = std::mem::take(call_id);
            let tool_name = std::mem::take(tool_name);
            let arguments = std::mem::take(arguments);
            // What is left holds nothing (empty strings, `null`, default
            // options): forgotten rather than dropped field by field.
            std::mem::forget(std::mem::replace(&mut this.state, State::Done));
            // The OpenTelemetry GenAI names of a tool's execution
            // (`execute_tool {name}`, `gen_ai.tool.*`, `error.type`), beside
            // behest's own.
            let span = tracing::info_span!(
                "tool_call",
                otel.name = format!("execute_tool {tool_name}"),
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = %tool_name,
                gen_ai.tool.call.id = %call_id,
                gen_ai.tool.type = "function",
                tool = %tool_name,
                call_id = %call_id,
                outcome = tracing::field::Empty,
                "error.type" = tracing::field::Empty,
                otel.status_code = tracing::field::Empty,
                duration_us = tracing::field::Empty,
            );
            let started = (!span.is_disabled()).then(Instant::now);
            // Written by `begin` when it ends the call itself, as most
            // calls end (`Pending` until then): the outcome is not moved
            // through the layers below.
            let mut ended = Poll::Pending;
            let rest = span.in_scope(|| {
                runtime.begin(&call_id, &tool_name, arguments, &options, hooks, &mut ended)
            });
            let Some(rest) = rest else {
                // The outcome is read where `begin` wrote it and moved
                // from there into the result as it is returned: moved into
                // a binding first, it made the result be built on the
                // stack and copied out whole (152 bytes, through `memcpy`).
                if let Poll::Ready(outcome) = &ended {
                    record(&span, started, outcome);
                }
                return Poll::Ready(ToolCallResult {
                    call_id,
                    tool_name,
                    outcome: ready(ended),
                });
            };
            (call_id, tool_name, span, started, rest)
        } else {
            match std::mem::replace(&mut this.state, State::Done) {
                State::Later {
                    call_id,
                    tool_name,
                    span,
                    started,
                    rest,
                } => (call_id, tool_name, span, started, rest),
                _ => panic!("a tool call's future polled after it returned"),
            }
        };
        match span.in_scope(|| rest.as_mut().poll(cx)) {
            Poll::Ready(outcome) => {
                record(&span, started, &outcome);
                Poll::Ready(ToolCallResult {
                    call_id,
                    tool_name,
                    outcome,
                })
            }
            Poll::Pending => {
                this.state = State::Later {
                    call_id,
                    tool_name,
                    span,
                    started,
                    rest,
                };
                Poll::Pending
            }
        }
    }
}

impl Drop for CallFuture<'_> {
    /// A call dropped while it waits ends inside its span, as it ran: the
    /// tool's future, its place and its guard go while the span is entered.
    fn drop(&mut self) {
        if let State::Later { span, rest, .. } = &mut self.state {
            let _entered = span.enter();
            // A future of no size: nothing is allocated.
            drop(std::mem::replace(rest, Box::pin(std::future::pending())));
        }
    }
}

/// The outcome of a call that `begin` ended.
#[inline]
fn ready(ended: Poll<ToolResult<ToolOutput>>) -> ToolResult<ToolOutput> {
    match ended {
        Poll::Ready(outcome) => outcome,
        Poll::Pending => unreachable!("`begin` ends a call it gives no future for"),
    }
}

/// Records a call's outcome and duration on its span, if it is enabled.
/// (The result is built where it is returned: built here, it would be
/// copied out whole.)
fn record(span: &Span, started: Option<Instant>, outcome: &ToolResult<ToolOutput>) {
    if let Some(started) = started {
        let label = match outcome {
            Ok(_) => "ok",
            Err(error) => error.kind(),
        };
        span.record("outcome", label);
        if outcome.is_err() {
            span.record("error.type", label);
            span.record("otel.status_code", "ERROR");
        }
        span.record("duration_us", started.elapsed().as_micros() as u64);
    }
}

#[cfg(test)]
mod tests {
    use crate::{ToolCall, ToolRegistry, ToolRuntime};

    /// Every caller moves a call's future at least once: within 128 bytes
    /// the move is a few register copies, past it a call to `memcpy`.
    #[test]
    fn a_call_future_stays_within_128_bytes() {
        let runtime = ToolRuntime::new(ToolRegistry::new());
        let call = runtime.call(ToolCall::new("c", "t", "{}"));
        assert!(
            std::mem::size_of_val(&call) <= 128,
            "{} bytes",
            std::mem::size_of_val(&call)
        );
    }
}

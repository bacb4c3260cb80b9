//! Where a call goes: a typed route when its tool reads its own arguments
//! and nothing but running it is asked; otherwise the checked route, which
//! validates the arguments and only then routes the call, once, for every
//! caller: run here, run once approved, answered outside the run, or handed
//! to a durable engine's journal (through a run's [`RunHooks`]).

use std::task::Poll;

use futures::future::BoxFuture;
use serde_json::Value;

use super::execute::Started;
use super::hooks::{LocalRun, Route};
use super::text_route::Typed;
use super::{CallOptions, RunHooks, ToolRuntime};
use crate::tool::{ToolCall, ToolOutput, ToolResult};

impl ToolRuntime {
    /// Routes a call and runs as much of it as needs no waiting. A call
    /// on a typed route whose tool finishes on its first poll (most calls)
    /// ends here, its outcome written to `ended`, and the caller's future
    /// never holds more than the call; the rest (a tool that waits, a full
    /// gate, the checked route) is the future given back, on the heap,
    /// which borrows nothing of the call.
    pub(super) fn begin<'a>(
        &'a self,
        call_id: &str,
        tool_name: &str,
        arguments: Value,
        options: &CallOptions,
        hooks: Option<&'a dyn RunHooks>,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Option<BoxFuture<'a, ToolResult<ToolOutput>>> {
        // A call the run answers other than by running it at once (an
        // approval first, a journal) is routed with its validated
        // arguments: the checked route.
        let routed = hooks.is_some_and(|hooks| hooks.routes(tool_name));
        let typed = match (arguments, routed) {
            (Value::String(text), false) => {
                match self.start_text(call_id, tool_name, &text, options, hooks, ended) {
                    Some(started) => Ok(started),
                    None => Err(Value::String(text)),
                }
            }
            (object @ Value::Object(_), false) => {
                self.start_value(call_id, tool_name, object, options, hooks, ended)
            }
            (arguments, _) => Err(arguments),
        };
        let Typed {
            entry,
            started,
            guard,
        } = match typed {
            Ok(typed) => typed,
            Err(arguments) => {
                return Some(Box::pin(self.run_checked(
                    call_id.to_owned(),
                    tool_name.to_owned(),
                    arguments,
                    options.clone(),
                    hooks,
                )));
            }
        };
        match started {
            Started::Done => {
                debug_assert!(ended.is_ready(), "a call ended without its outcome");
                if let Poll::Ready(outcome) = ended {
                    self.settle(guard, outcome);
                }
                None
            }
            Started::Waiting(waiting) => Some(Box::pin(self.wait_out(
                entry,
                waiting,
                options.cancellation.clone(),
                guard,
            ))),
        }
    }

    /// The checked route: lookup, decoding and validation into a
    /// [`PreparedCall`](super::PreparedCall), then the call's one routing
    /// decision (for a run's call), then the tool, or whoever answers it.
    async fn run_checked(
        &self,
        call_id: String,
        tool_name: String,
        arguments: Value,
        options: CallOptions,
        hooks: Option<&dyn RunHooks>,
    ) -> ToolResult<ToolOutput> {
        let prepared = self.prepare(&tool_name, arguments)?;
        let Some(hooks) = hooks else {
            return self.execute_prepared(prepared, &call_id, options).await;
        };
        let route = if self.inner.registry.entry_at(prepared.index).external {
            Route::External {
                approval: hooks.needs_approval(&tool_name),
            }
        } else if hooks.needs_approval(&tool_name) {
            Route::NeedsApproval
        } else {
            Route::Local
        };
        let validated = || ToolCall {
            call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            arguments: prepared.arguments.clone(),
        };
        if route == Route::Local && !hooks.routes(&tool_name) {
            hooks.starting(&call_id, &tool_name, &validated);
            return self.execute_prepared(prepared, &call_id, options).await;
        }
        let call = validated();
        let run = LocalRun::new(self.clone(), prepared, call_id, options);
        // Whoever answered (a person, a handler, a journal), the answer
        // meets the same output limit as a tool's own.
        let output = hooks.dispatch(call, route, run).await?;
        self.check_output(output)
    }
}

//! The typed routes: a `#[tool]` reads its arguments with its own types
//! (from the model's text, or from a parsed object). Plain types accept
//! exactly what their schemas accept; the others are held to their schemas
//! as they are read (`__private::field_checks`). So a call that reads runs
//! without building the arguments' `Value` or validating it again.
//! Whatever does not read takes the checked route, which finds and explains
//! what is wrong.

use std::panic::AssertUnwindSafe;
use std::task::Poll;

use futures::future::BoxFuture;
use serde_json::Value;

use super::execute::Started;
use super::guard::CallGuard;
use super::{CallOptions, RunHooks, ToolRuntime};
use crate::arguments::{decode, DecodeLimits};
use crate::registry::Entry;
use crate::tool::{ToolCall, ToolContext, ToolOutput, ToolResult};

/// A call on a typed route, its arguments read by the tool's own types.
pub(super) struct Typed<'a> {
    pub entry: &'a Entry,
    pub started: Started<'a>,
    /// Settled on the call's outcome.
    pub guard: CallGuard,
}

impl ToolRuntime {
    /// The text route. `None` (unknown tool, another kind of tool, text
    /// over the size limit, a negative zero for a tool with floats, a
    /// parse that fails) sends the call down the checked route.
    pub(super) fn start_text(
        &self,
        call_id: &str,
        tool_name: &str,
        text: &str,
        options: &CallOptions,
        hooks: Option<&dyn RunHooks>,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Option<Typed<'_>> {
        let inner = &*self.inner;
        let entry = inner.registry.entry_at(inner.registry.index_of(tool_name)?);
        // Text that could nest deeper than the limit, or is longer than it,
        // takes the checked route, which enforces both; so does a negative
        // zero for a tool with floats, which that route reads as `0`
        // (`json_text::has_negative_zero`).
        let plain = entry.text_route.as_ref()?;
        if plain.depth > inner.limits.max_argument_depth
            || text.len() > inner.limits.max_argument_bytes
            || (plain.floats && crate::json_text::has_negative_zero(text))
        {
            return None;
        }
        // The typed parse happens before a place is taken: it runs none of the
        // tool's body (generated code, `async` throughout).
        let invoke = |context: &dyn Fn() -> ToolContext| {
            entry
                .tool
                .__invoke_text(text, plain, &inner.limits, context)
        };
        // Observers see the arguments as the checked route gives them.
        let shown = || self.decoded(entry, text);
        self.start_typed(
            entry, call_id, tool_name, options, hooks, invoke, shown, ended,
        )
    }

    /// The same route for arguments that arrive as a parsed object (MCP
    /// sends them so): read with the tool's own types as the checked route
    /// would decode it (bounded, integral floats as integers; see
    /// `arguments::read`). `Err` gives the object back, as it came, for
    /// the checked route.
    pub(super) fn start_value(
        &self,
        call_id: &str,
        tool_name: &str,
        arguments: Value,
        options: &CallOptions,
        hooks: Option<&dyn RunHooks>,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Result<Typed<'_>, Value> {
        let inner = &*self.inner;
        let Some(index) = inner.registry.index_of(tool_name) else {
            return Err(arguments);
        };
        let entry = inner.registry.entry_at(index);
        let Some(plain) = entry
            .text_route
            .as_ref()
            .filter(|plain| plain.depth <= inner.limits.max_argument_depth)
        else {
            return Err(arguments);
        };
        let invoke = |context: &dyn Fn() -> ToolContext| {
            entry
                .tool
                .__invoke_value(&arguments, plain, &inner.limits, context)
        };
        // Observers see the arguments as the checked route gives them.
        let shown = || {
            let mut shown = arguments.clone();
            crate::arguments::normalise_all(&mut shown);
            crate::arguments::drop_optional_nulls(&mut shown, entry.validator.schema());
            shown
        };
        let started = self.start_typed(
            entry, call_id, tool_name, options, hooks, invoke, shown, ended,
        );
        started.ok_or(arguments)
    }

    /// Starts a call whose arguments `invoke` reads with the tool's types
    /// (`None`: they do not read, and the call takes the checked route):
    /// the run is told it starts (`shown` gives observers its arguments),
    /// then the tail every call shares ([`admit`](Self::admit)), all under
    /// one `catch_unwind`: a panic in the tool's code at either end is its
    /// outcome. (The run's event and the gate are behest's own code, which
    /// does not panic; one `catch_unwind` rather than two is a measurable
    /// part of a call.)
    #[allow(clippy::too_many_arguments)]
    fn start_typed<'a>(
        &'a self,
        entry: &'a Entry,
        call_id: &str,
        tool_name: &str,
        options: &CallOptions,
        hooks: Option<&dyn RunHooks>,
        invoke: impl FnOnce(&dyn Fn() -> ToolContext) -> Option<BoxFuture<'a, ToolResult<ToolOutput>>>,
        shown: impl Fn() -> Value,
        ended: &mut Poll<ToolResult<ToolOutput>>,
    ) -> Option<Typed<'a>> {
        let guard = CallGuard::default();
        let cancellation = options.cancellation.as_ref();
        // Whether the future was built: a panic after that is the tool's
        // outcome, which a cancellation overrides (`panicked_in`).
        let mut built = false;
        let step = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let context = || {
                let context = self.context(call_id, options);
                guard.watch(&context);
                context
            };
            let future = invoke(&context)?;
            built = true;
            if let Some(hooks) = hooks {
                hooks.starting(call_id, tool_name, &|| ToolCall {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    arguments: shown(),
                });
            }
            Some(self.admit(cancellation, move || Ok(future), ended))
        }));
        let started = match step {
            Ok(started) => started?,
            Err(payload) => {
                let error = self.panicked_in(entry, payload.as_ref(), built, cancellation);
                *ended = Poll::Ready(Err(error));
                Started::Done
            }
        };
        Some(Typed {
            entry,
            started,
            guard,
        })
    }

    /// The arguments object of a text the text route accepted, as the
    /// checked route decodes it (integral floats as integers, `null` for
    /// optional fields left out).
    fn decoded(&self, entry: &Entry, text: &str) -> Value {
        let limits = DecodeLimits::from(&self.inner.limits);
        match decode(Value::String(text.to_owned()), limits, &entry.required) {
            Ok(object) => {
                let mut arguments = Value::Object(object);
                crate::arguments::drop_optional_nulls(&mut arguments, entry.validator.schema());
                arguments
            }
            Err(_) => Value::String(text.to_owned()),
        }
    }
}

//! The checked route's first and last steps: lookup, decoding and
//! validation into a [`PreparedCall`], and the output limit.

use serde_json::Value;

use super::ToolRuntime;
use crate::arguments::{decode, DecodeLimits};
use crate::registry::ToolRegistry;
use crate::suggest::closest;
use crate::tool::{LimitKind, ToolError, ToolOutput, ToolResult};

/// How many close names an unknown-tool error suggests.
const MAX_SUGGESTIONS: usize = 3;
/// How many tool names an unknown-tool error lists when none is close.
const MAX_LISTED_TOOLS: usize = 20;

/// A call that passed lookup, decoding and validation, by the runtime
/// that prepared it. Another runtime given it checks it again against its
/// own registry.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    pub(super) runtime: u64,
    pub(super) index: usize,
    pub(super) tool_name: std::sync::Arc<str>,
    pub(super) arguments: Value,
}

impl PreparedCall {
    /// The decoded, validated arguments object.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }
}

impl ToolRuntime {
    /// Steps 1 to 3 of the pipeline: looks the tool up, decodes and
    /// validates the arguments. What a run loop does before it decides how
    /// a call is answered (locally, by a handler, after an approval).
    pub fn prepare(&self, tool_name: &str, arguments: Value) -> ToolResult<PreparedCall> {
        let inner = &*self.inner;
        let index = inner
            .registry
            .index_of(tool_name)
            .ok_or_else(|| not_found(&inner.registry, tool_name))?;
        let entry = inner.registry.entry_at(index);
        let limits = DecodeLimits::from(&self.inner.limits);
        let mut arguments = Value::Object(decode(arguments, limits, &entry.required)?);
        // Any tool may be exported in strict mode (`Strictness::All`), which
        // makes optional fields required and nullable on the wire: `null`
        // there means "left out", so `Option` and defaults keep their
        // meaning.
        crate::arguments::drop_optional_nulls(&mut arguments, entry.validator.schema());
        if let Err((issues, omitted)) = entry.validator.validate(&arguments) {
            return Err(ToolError::InvalidArguments { issues, omitted });
        }
        Ok(PreparedCall {
            runtime: inner.id,
            index,
            tool_name: entry.name.clone(),
            arguments,
        })
    }

    /// Steps 4 and 5: runs a prepared call under the limits and checks its
    /// output.
    pub async fn execute_prepared(
        &self,
        prepared: PreparedCall,
        call_id: &str,
        options: super::CallOptions,
    ) -> ToolResult<ToolOutput> {
        let inner = &*self.inner;
        // Another runtime's index means nothing here: check the call again.
        let prepared = if prepared.runtime == inner.id {
            prepared
        } else {
            self.prepare(&prepared.tool_name, prepared.arguments)?
        };
        let entry = inner.registry.entry_at(prepared.index);
        self.execute(entry, call_id, prepared.arguments, options)
            .await
    }

    /// Step 5: the output limit.
    pub(super) fn check_output(&self, output: ToolOutput) -> ToolResult<ToolOutput> {
        self.output_fits(&output)?;
        Ok(output)
    }

    /// Whether `output` is within the output limit.
    pub(super) fn output_fits(&self, output: &ToolOutput) -> ToolResult<()> {
        let limit = self.inner.limits.max_output_bytes;
        let size = output.encoded_len();
        if size > limit {
            return Err(ToolError::LimitExceeded {
                kind: LimitKind::OutputBytes,
                limit,
                actual: Some(size),
            });
        }
        Ok(())
    }
}

/// The error for an unknown tool: the close names, or else what there is.
fn not_found(registry: &ToolRegistry, tool_name: &str) -> ToolError {
    let suggestions = closest(tool_name, registry.names(), MAX_SUGGESTIONS);
    let available = if suggestions.is_empty() {
        registry
            .names()
            .take(MAX_LISTED_TOOLS)
            .map(str::to_owned)
            .collect()
    } else {
        Vec::new()
    };
    ToolError::NotFound {
        name: tool_name.to_owned(),
        suggestions,
        available,
    }
}

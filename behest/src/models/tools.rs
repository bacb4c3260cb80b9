//! The tools of a turn in a provider's declaration format, exported once
//! per set of tools: a run offers the same tools every turn.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::model::ModelError;
use crate::providers::{self, ExportOptions, WireFormat};
use crate::tool::ToolSpec;

/// Declarations, and the specs and strict tools they were made from.
type Exported = (Vec<ToolSpec>, BTreeSet<String>, Arc<Vec<Value>>);

/// The last export, keyed by the specs it was made from.
#[derive(Default)]
#[doc(hidden)]
pub struct ExportCache {
    last: Mutex<Option<Exported>>,
}

/// Shown as nothing: the declarations say nothing about the client.
impl std::fmt::Debug for ExportCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExportCache")
    }
}

impl ExportCache {
    /// The declarations of `specs` for `provider`, `strict` naming the
    /// tools that ask for strict mode; an export that would not be
    /// faithful is an error that lists every problem.
    pub(crate) fn declarations(
        &self,
        specs: &[ToolSpec],
        strict: &BTreeSet<String>,
        provider: WireFormat,
        options: &ExportOptions,
    ) -> Result<Arc<Vec<Value>>, ModelError> {
        let mut last = crate::sync::lock(&self.last);
        if let Some((cached, cached_strict, declarations)) = &*last {
            if cached == specs && cached_strict == strict {
                return Ok(declarations.clone());
            }
        }
        let specs_ref: Vec<&ToolSpec> = specs.iter().collect();
        let export =
            providers::export_specs(&specs_ref, &|name| strict.contains(name), provider, options)
                .map_err(|error| {
                ModelError::new(format!(
                    "the tools cannot be sent to this provider: {error}"
                ))
            })?;
        let declarations = Arc::new(export.tools);
        *last = Some((specs.to_vec(), strict.clone(), declarations.clone()));
        Ok(declarations)
    }
}

/// Marks the declarations of the tools named in `deferred` with
/// `defer_loading: true` (Responses and Messages name a tool at its top);
/// whether any was marked.
#[cfg(any(feature = "openai", feature = "anthropic"))]
pub(crate) fn defer(
    declarations: &mut [Value],
    deferred: Option<&std::collections::HashSet<String>>,
) -> bool {
    let Some(deferred) = deferred else {
        return false;
    };
    let mut any = false;
    for declaration in declarations {
        let named = declaration
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| deferred.contains(name));
        if named {
            declaration["defer_loading"] = Value::Bool(true);
            any = true;
        }
    }
    any
}

/// The schema a typed run's answer must match, in `provider`'s dialect (the
/// same passes as a tool's parameters), and whether it could be made strict
/// (OpenAI); a schema that cannot is sent non-strict rather than refused.
/// Only the formats that answer in a schema's shape ask for one.
#[cfg(any(
    feature = "openai",
    feature = "gemini",
    feature = "anthropic",
    feature = "bedrock"
))]
pub(crate) fn answer_schema(
    spec: &ToolSpec,
    provider: WireFormat,
    options: &ExportOptions,
) -> Result<(Value, bool), ModelError> {
    let mut options = options.clone();
    options.allow_non_strict.insert(spec.name.clone());
    let export =
        providers::export_specs(&[spec], &|_| true, provider, &options).map_err(|error| {
            ModelError::new(format!(
                "the answer's schema cannot be sent to this provider: {error}"
            ))
        })?;
    // Chat nests the declaration under `function`, Gemini under
    // `functionDeclarations`, Bedrock under `toolSpec`; Responses and
    // Anthropic have it flat.
    let declaration = export
        .tools
        .first()
        .map(|tool| {
            tool.get("function")
                .or_else(|| tool.pointer("/functionDeclarations/0"))
                .or_else(|| tool.get("toolSpec"))
                .unwrap_or(tool)
        })
        .ok_or_else(|| ModelError::new("the answer's schema was not exported"))?;
    // Anthropic names it `input_schema`, Bedrock `inputSchema.json`.
    let schema = declaration
        .get("parameters")
        .or_else(|| declaration.get("input_schema"))
        .or_else(|| declaration.pointer("/inputSchema/json"))
        .cloned()
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    let strict = declaration.get("strict").and_then(Value::as_bool) == Some(true);
    Ok((schema, strict))
}

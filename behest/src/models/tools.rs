//! The tools of a turn in a provider's declaration format, exported once
//! per set of tools: a run offers the same tools every turn.

use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::providers::{self, ExportOptions, Provider};
use crate::run::ModelError;
use crate::tool::{ExternalTool, ToolSpec};
use crate::ToolRegistry;

/// Declarations, and the specs they were made from.
type Exported = (Vec<ToolSpec>, Arc<Vec<Value>>);

/// The last export, keyed by the specs it was made from.
#[derive(Default)]
pub(crate) struct ExportCache {
    last: Mutex<Option<Exported>>,
}

impl ExportCache {
    /// The declarations of `specs` for `provider`; an export that would not
    /// be faithful is an error that lists every problem.
    pub fn declarations(
        &self,
        specs: &[ToolSpec],
        provider: Provider,
        options: &ExportOptions,
    ) -> Result<Arc<Vec<Value>>, ModelError> {
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((cached, declarations)) = &*last {
            if cached == specs {
                return Ok(declarations.clone());
            }
        }
        let mut registry = ToolRegistry::new();
        for spec in specs {
            registry
                .register_tool(Arc::new(ExternalTool::from_spec(spec.clone())))
                .map_err(|error| ModelError::new(format!("a tool cannot be declared: {error}")))?;
        }
        let export = providers::export(&registry, provider, options).map_err(|error| {
            ModelError::new(format!(
                "the tools cannot be sent to this provider: {error}"
            ))
        })?;
        let declarations = Arc::new(export.tools);
        *last = Some((specs.to_vec(), declarations.clone()));
        Ok(declarations)
    }
}

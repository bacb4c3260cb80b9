//! What a provider pass could not express, said instead of silently
//! dropping meaning.

use std::fmt;

use serde::Serialize;

/// A part of a schema a provider cannot take, with where and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lint {
    /// The tool, when the lint came from exporting a registry.
    pub tool: Option<String>,
    /// JSON Pointer into the tool's canonical schema.
    pub path: String,
    /// Why the pass could not express it.
    pub reason: String,
    /// Whether the export is still faithful (a warning) or not (an error).
    pub severity: Severity,
}

/// How bad a lint is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Something was dropped that does not change which arguments are valid
    /// (a `format`, an `examples` list).
    Warning,
    /// The provider's version accepts or refuses other arguments than the
    /// canonical schema, or cannot be sent at all.
    Error,
}

impl Lint {
    pub(crate) fn error(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            tool: None,
            path: path.into(),
            reason: reason.into(),
            severity: Severity::Error,
        }
    }

    pub(crate) fn warning(path: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            tool: None,
            path: path.into(),
            reason: reason.into(),
            severity: Severity::Warning,
        }
    }

    /// Whether this lint makes the export unfaithful.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Lint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.path.is_empty() {
            "/"
        } else {
            &self.path
        };
        match &self.tool {
            Some(tool) => write!(f, "{tool}: {} at {at}", self.reason),
            None => write!(f, "{} at {at}", self.reason),
        }
    }
}

use std::error::Error as StdError;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

/// The result of running a tool.
pub type ToolResult<T> = Result<T, ToolError>;

/// Why a tool call did not produce output.
///
/// `Display` is the text sent to the model: it says what went wrong and how
/// to fix the call, and never contains internals such as panic payloads
/// unless the tool opted in ([`Tool::reveals_panics`](crate::Tool::reveals_panics)).
/// `Debug` hides such a payload too (it tells its length): a panic message
/// can carry what was being handled, keys included.
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The tool has no local implementation: it runs elsewhere (an
    /// [`ExternalTool`](crate::ExternalTool)) and nobody answered it.
    #[error("this tool has no local implementation and no handler answered the call")]
    NotImplemented,

    /// No tool of that name is registered.
    #[error("{}", not_found_text(name, suggestions, available))]
    NotFound {
        /// The name that was called.
        name: String,
        /// Registered names close to it, closest first.
        suggestions: Vec<String>,
        /// Registered names to offer when none is close (at most 20).
        available: Vec<String>,
    },

    /// The arguments could not be decoded or do not match the tool's schema.
    #[error("{}", invalid_arguments_text(issues, *omitted))]
    InvalidArguments {
        /// The problems found, each with the JSON path it concerns.
        issues: Vec<ArgumentIssue>,
        /// How many further problems were found but not listed.
        omitted: usize,
    },

    /// The tool ran and failed.
    #[error("{message}")]
    Execution {
        /// The failure, written for the model.
        message: String,
        /// The underlying error, for logs.
        #[source]
        source: Option<Arc<dyn StdError + Send + Sync>>,
    },

    /// The tool did not finish in time and was stopped.
    #[error("the tool did not finish within {} and was stopped", DisplayDuration(*after))]
    Timeout {
        /// The time limit that was reached.
        after: Duration,
    },

    /// The call was cancelled before it finished.
    #[error("the call was cancelled before it finished")]
    Cancelled,

    /// The tool panicked. The payload is kept for logs; it reaches the model
    /// only when `reveal` is set.
    #[error("{}", panicked_text(payload, *reveal))]
    Panicked {
        /// The panic message, when the payload was a string.
        payload: String,
        /// Whether the payload may be shown to the model.
        reveal: bool,
    },

    /// The call needed an approval and did not get one.
    #[error("the call was not approved: {reason}")]
    ApprovalDenied {
        /// Why: the reason given, or that nobody answered in time.
        reason: String,
    },

    /// A size or nesting limit was exceeded.
    #[error("{}", limit_text(*kind, *limit, *actual))]
    LimitExceeded {
        /// Which limit.
        kind: LimitKind,
        /// The limit in force.
        limit: usize,
        /// The measured value, when it was measured in full.
        actual: Option<usize>,
    },
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotImplemented => f.write_str("NotImplemented"),
            Self::NotFound {
                name,
                suggestions,
                available,
            } => f
                .debug_struct("NotFound")
                .field("name", &crate::suggest::shown(name))
                .field("suggestions", suggestions)
                .field("available", available)
                .finish(),
            Self::InvalidArguments { issues, omitted } => f
                .debug_struct("InvalidArguments")
                .field("issues", issues)
                .field("omitted", omitted)
                .finish(),
            Self::Execution { message, source } => f
                .debug_struct("Execution")
                .field("message", message)
                .field("source", source)
                .finish(),
            Self::Timeout { after } => f.debug_struct("Timeout").field("after", after).finish(),
            Self::Cancelled => f.write_str("Cancelled"),
            Self::Panicked { payload, reveal } => {
                let mut shown = f.debug_struct("Panicked");
                if *reveal {
                    shown.field("payload", payload);
                } else {
                    shown.field(
                        "payload",
                        &format_args!("<hidden: {} bytes>", payload.len()),
                    );
                }
                shown.field("reveal", reveal).finish()
            }
            Self::ApprovalDenied { reason } => f
                .debug_struct("ApprovalDenied")
                .field("reason", reason)
                .finish(),
            Self::LimitExceeded {
                kind,
                limit,
                actual,
            } => f
                .debug_struct("LimitExceeded")
                .field("kind", kind)
                .field("limit", limit)
                .field("actual", actual)
                .finish(),
        }
    }
}

impl ToolError {
    /// An execution failure with a message for the model.
    pub fn execution(message: impl Into<String>) -> Self {
        Self::Execution {
            message: message.into(),
            source: None,
        }
    }

    /// An execution failure from an error value; its `Display` is the message.
    pub fn from_error(error: impl StdError + Send + Sync + 'static) -> Self {
        Self::Execution {
            message: error.to_string(),
            source: Some(Arc::new(error)),
        }
    }

    /// An argument error with a single problem.
    pub fn invalid_argument(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::InvalidArguments {
            issues: vec![ArgumentIssue::new(path, message)],
            omitted: 0,
        }
    }

    /// A short stable name of the variant, for logs and metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::NotImplemented => "not_implemented",
            Self::NotFound { .. } => "not_found",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::Execution { .. } => "execution",
            Self::Timeout { .. } => "timeout",
            Self::Cancelled => "cancelled",
            Self::Panicked { .. } => "panicked",
            Self::ApprovalDenied { .. } => "approval_denied",
            Self::LimitExceeded { .. } => "limit_exceeded",
        }
    }

    /// Whether the model can fix this by changing its call (wrong tool name,
    /// bad arguments, arguments too large).
    pub fn is_caller_error(&self) -> bool {
        matches!(
            self,
            Self::NotFound { .. }
                | Self::InvalidArguments { .. }
                | Self::LimitExceeded {
                    kind: LimitKind::ArgumentBytes | LimitKind::ArgumentDepth,
                    ..
                }
        )
    }
}

/// One problem with a call's arguments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ArgumentIssue {
    /// JSON Pointer to the offending value (`""` is the whole arguments object).
    pub path: String,
    /// What is wrong: what was expected and what was given.
    pub message: String,
}

impl ArgumentIssue {
    /// A problem at `path`.
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for ArgumentIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "`{}`: {}", self.path, self.message)
        }
    }
}

/// The limits the runtime enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum LimitKind {
    /// Size of the arguments in bytes.
    ArgumentBytes,
    /// Nesting depth of arrays and objects in the arguments.
    ArgumentDepth,
    /// Size of the tool's output in bytes.
    OutputBytes,
    /// Rounds of tool calls in one run: the calls of the round past the
    /// limit are answered with this error and not run.
    ToolRounds,
}

fn not_found_text(name: &str, suggestions: &[String], available: &[String]) -> String {
    let mut text = format!("there is no tool named `{}`", crate::suggest::shown(name));
    match suggestions {
        [] if available.is_empty() => {}
        [] => {
            let names: Vec<String> = available.iter().map(|n| format!("`{n}`")).collect();
            text.push_str(&format!("; the tools are {}", names.join(", ")));
        }
        [only] => text.push_str(&format!("; did you mean `{only}`?")),
        many => {
            let names: Vec<String> = many.iter().map(|n| format!("`{n}`")).collect();
            text.push_str(&format!("; did you mean one of {}?", names.join(", ")));
        }
    }
    text
}

fn invalid_arguments_text(issues: &[ArgumentIssue], omitted: usize) -> String {
    let mut text = String::from("the arguments are invalid");
    match issues {
        [only] if omitted == 0 => {
            text.push_str(": ");
            text.push_str(&only.to_string());
        }
        _ => {
            text.push(':');
            for issue in issues {
                text.push_str("\n- ");
                text.push_str(&issue.to_string());
            }
            if omitted > 0 {
                text.push_str(&format!("\n- and {omitted} more"));
            }
        }
    }
    text.push_str("\nfix the arguments and call the tool again");
    text
}

fn panicked_text(payload: &str, reveal: bool) -> String {
    if reveal {
        format!("the tool failed with an internal error: {payload}")
    } else {
        "the tool failed with an internal error".to_owned()
    }
}

fn limit_text(kind: LimitKind, limit: usize, actual: Option<usize>) -> String {
    match kind {
        LimitKind::ArgumentBytes => format!(
            "the arguments are {} bytes, over the limit of {limit} bytes; send smaller arguments",
            actual.map_or_else(|| "too many".to_owned(), |a| a.to_string())
        ),
        LimitKind::ArgumentDepth => format!(
            "the arguments are nested more than {limit} levels deep; send a flatter structure"
        ),
        LimitKind::OutputBytes => format!(
            "the tool's output is {} bytes, over the limit of {limit} bytes",
            actual.map_or_else(|| "too many".to_owned(), |a| a.to_string())
        ),
        LimitKind::ToolRounds => format!(
            "the run's limit of {limit} rounds of tool calls was reached, so this call was not run"
        ),
    }
}

/// Formats a duration as people write it: `250ms`, `10s`, `1.5s`.
struct DisplayDuration(Duration);

impl fmt::Display for DisplayDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0;
        if d.as_millis() < 1000 {
            write!(f, "{}ms", d.as_millis())
        } else if d.subsec_millis() == 0 {
            write!(f, "{}s", d.as_secs())
        } else {
            write!(f, "{:.1}s", d.as_secs_f64())
        }
    }
}

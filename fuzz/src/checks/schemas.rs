//! Arbitrary schemas and instances: compiling refuses or accepts, never
//! panics or recurses past the stack; an accepted schema validates any
//! instance, registers as a tool, exports to every provider and serves a
//! call.

use behest::providers::{export, ExportOptions, WireFormat};
use behest::validation::ArgumentValidator;
use behest::{ExternalTool, ToolCall, ToolError, ToolRegistry, ToolRuntime};
use serde_json::Value;

/// The input is a schema, a NUL byte, and an instance (`{}` without one).
pub fn check(data: &[u8]) {
    let (schema, instance) = match data.iter().position(|&byte| byte == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b"{}"[..]),
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let Ok(instance) = serde_json::from_slice::<Value>(instance) else {
        return;
    };
    let Ok(validator) = ArgumentValidator::compile(&schema) else {
        return;
    };
    let verdict = validator.validate(&instance);
    if let Err((issues, _omitted)) = &verdict {
        assert!(
            !issues.is_empty(),
            "refused without a reason: {schema} {instance}"
        );
    }
    let Ok(registry) = ToolRegistry::new().with(ExternalTool::new("probe", "Probe.", schema))
    else {
        return;
    };
    for provider in [
        WireFormat::OpenAiChat,
        WireFormat::OpenAiResponses,
        WireFormat::Anthropic,
        WireFormat::Gemini,
        WireFormat::Mcp,
    ] {
        let _ = export(&registry, provider, &ExportOptions::default());
    }
    let runtime = ToolRuntime::new(registry);
    let result = super::block_on(runtime.call(ToolCall::new("c", "probe", instance.clone())));
    // An object the validator accepts reaches the (external) tool.
    if instance.is_object() && verdict.is_ok() {
        assert!(
            matches!(result.outcome, Err(ToolError::NotImplemented)),
            "validated, then refused: {:?}",
            result.outcome
        );
    }
    assert!(
        matches!(
            result.outcome,
            Err(ToolError::NotImplemented
                | ToolError::InvalidArguments { .. }
                | ToolError::LimitExceeded { .. })
        ),
        "{:?}",
        result.outcome
    );
}

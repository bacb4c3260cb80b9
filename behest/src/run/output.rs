//! A final answer of a given type, asked for in one of two ways:
//!
//! - natively, from a model that [supports structured
//!   output](crate::Model::supports_structured_output) (OpenAI's `response_format`
//!   or `text.format`, Gemini's `responseSchema`): its final text is the
//!   answer as JSON; an answer that does not match the type's schema is
//!   sent back once (configurable) with the reason, for a corrected one;
//! - otherwise (Anthropic, scripted and hand-written models) through one
//!   more tool, `final_answer`, whose arguments are the answer: a mismatch
//!   goes back as an argument error, which the model corrects like any
//!   other, and a text answer gets one reminder (configurable) to answer
//!   through the tool.
//!
//! Either way behest validates the answer itself.

use serde_json::Value;

use crate::arguments::{decode, drop_optional_nulls, DecodeLimits};
use crate::limits::Limits;
use crate::tool::{ToolError, ToolOutput, ToolSpec};
use crate::validation::ArgumentValidator;

/// The name of the tool a typed answer is given through.
pub const FINAL_ANSWER: &str = "final_answer";

/// What a run that wants a typed answer needs: the tool to offer and the
/// validator of its arguments.
#[derive(Clone)]
pub(crate) struct FinalOutput {
    pub spec: ToolSpec,
    /// Whether the answer is wrapped as `{"result": ..}` (a type whose
    /// schema is not an object).
    pub wrapped: bool,
    pub validator: ArgumentValidator,
}

impl std::fmt::Debug for FinalOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinalOutput")
            .field("spec", &self.spec)
            .finish_non_exhaustive()
    }
}

impl FinalOutput {
    /// The final output of type `T`: its schema, wrapped in an object when
    /// it is not one (tool arguments must be objects).
    pub fn of<T: schemars::JsonSchema>() -> Self {
        let schema = crate::derived::schema_of::<T>();
        let (parameters, wrapped) = if schema.get("type") == Some(&Value::from("object")) {
            (schema, false)
        } else {
            let mut inner = schema;
            let defs = inner.as_object_mut().and_then(|object| {
                object.remove("$schema");
                object.remove("$defs")
            });
            let mut wrapper = serde_json::json!({
                "type": "object",
                "properties": {"result": inner},
                "required": ["result"],
                "additionalProperties": false,
            });
            if let Some(defs) = defs {
                wrapper["$defs"] = defs;
            }
            (wrapper, true)
        };
        let validator =
            ArgumentValidator::compile(&parameters).expect("schemars emits valid 2020-12");
        Self {
            spec: ToolSpec::new(
                FINAL_ANSWER,
                "Give your final answer by calling this tool once you are done; its arguments are the answer.",
                parameters,
            ),
            wrapped,
            validator,
        }
    }

    /// The answer in `arguments` (JSON text or a value), unwrapped, or the
    /// argument error the model reads. The answer meets the runtime's
    /// byte and depth limits, as any call's arguments do: it is read as
    /// they are, by the same decoder.
    pub fn accept(&self, arguments: &Value, limits: &Limits) -> Result<Value, ToolError> {
        let object = decode(arguments.clone(), DecodeLimits::from(limits), &[])?;
        let mut value = Value::Object(object);
        drop_optional_nulls(&mut value, self.validator.schema());
        self.validator
            .validate(&value)
            .map_err(|(issues, omitted)| ToolError::InvalidArguments { issues, omitted })?;
        Ok(unwrap_answer(value, self.wrapped))
    }

    /// The answer's spec as a model with structured output reads it: the
    /// same schema, described as the answer rather than a tool.
    pub fn native_spec(&self) -> ToolSpec {
        let mut spec = self.spec.clone();
        spec.description = "The final answer, as JSON that matches this schema.".to_owned();
        spec
    }

    /// The answer in a model's final text, unwrapped, or why it is not
    /// one, for the model to read.
    pub fn accept_text(&self, text: &str, limits: &Limits) -> Result<Value, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("the answer is empty".to_owned());
        }
        let object = decode(
            Value::String(text.to_owned()),
            DecodeLimits::from(limits),
            &[],
        )
        .map_err(|error| match error {
            // What is wrong with the whole text, said of the answer
            // (the decoder speaks of a call's arguments).
            ToolError::InvalidArguments { issues, .. }
                if issues.iter().all(|issue| issue.path.is_empty()) =>
            {
                let said: Vec<String> = issues
                    .iter()
                    .map(|issue| {
                        issue
                            .message
                            .replace("the arguments are not valid JSON", "the answer is not JSON")
                            .replace("the arguments must be", "the answer must be")
                    })
                    .collect();
                said.join("; ")
            }
            other => other.to_string(),
        })?;
        self.accept(&Value::Object(object), limits)
            .map_err(|error| error.to_string())
    }

    /// The result the final call gets when it is accepted.
    pub fn accepted() -> ToolOutput {
        ToolOutput::text("accepted")
    }
}

/// The answer as `T`: the value itself, or the `result` it was wrapped in.
fn unwrap_answer(value: Value, wrapped: bool) -> Value {
    match value {
        Value::Object(mut object) if wrapped => object.remove("result").unwrap_or(Value::Null),
        other => other,
    }
}

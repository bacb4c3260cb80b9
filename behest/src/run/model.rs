//! The model a run talks to.

use std::future::Future;

use futures::future::BoxFuture;

use super::conversation::{AssistantMessage, Message};
use crate::tool::ToolSpec;

/// Why the model gave no answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ModelError {
    /// What went wrong.
    pub message: String,
}

impl ModelError {
    /// A model error with a message.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// A language model: given the conversation and the tools it may call, it
/// returns its next message.
///
/// Implement [`respond`](Model::respond); runs use models as
/// `Arc<dyn Model>`.
pub trait Model: Send + Sync + 'static + erased::ErasedModel {
    /// The model's next message.
    fn respond(
        &self,
        conversation: &[Message],
        tools: &[ToolSpec],
    ) -> impl Future<Output = Result<AssistantMessage, ModelError>> + Send
    where
        Self: Sized;
}

impl dyn Model {
    /// The model's next message, through a type-erased model.
    pub fn respond_dyn<'a>(
        &'a self,
        conversation: &'a [Message],
        tools: &'a [ToolSpec],
    ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
        self.erased_respond(conversation, tools)
    }
}

mod erased {
    use super::*;

    /// The object-safe face of [`Model`], implemented for every model.
    pub trait ErasedModel {
        fn erased_respond<'a>(
            &'a self,
            conversation: &'a [Message],
            tools: &'a [ToolSpec],
        ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>>;
    }

    impl<M: Model> ErasedModel for M {
        fn erased_respond<'a>(
            &'a self,
            conversation: &'a [Message],
            tools: &'a [ToolSpec],
        ) -> BoxFuture<'a, Result<AssistantMessage, ModelError>> {
            Box::pin(self.respond(conversation, tools))
        }
    }
}

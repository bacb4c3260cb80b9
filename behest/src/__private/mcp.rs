//! Support for the code `#[resource]` and `#[prompt]` generate.

use std::future::Future;
use std::str::FromStr;

use crate::mcp::{Prompt, PromptArguments, PromptMessage, Resource, ResourceContent, ResourceRead};
use crate::tool::ToolError;

/// Fails the build when `template` is not a URI template
/// [`UriTemplate::parse`](crate::mcp::UriTemplate::parse) takes.
pub const fn check_uri_template(template: &str) {
    if let Err(fault) = crate::mcp::uri_template::check(template) {
        panic!("{}", fault.what);
    }
}

/// The resource at `uri` (a template when it names variables), named
/// `name`, read by `read`.
pub fn resource<F, Fut>(uri: &str, name: &str, read: F) -> Resource
where
    F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ResourceContent, ToolError>> + Send + 'static,
{
    if uri.contains('{') {
        // `check_uri_template` held when the crate was built.
        if let Ok(resource) = Resource::template(uri, name.to_owned(), read) {
            return resource;
        }
        unreachable!("the URI template `{uri}` was checked when the crate was built");
    }
    Resource::new(uri, name.to_owned(), read)
}

/// The value of the template's variable `name` in `read`, as `T`.
pub fn variable<T>(read: &ResourceRead, name: &str) -> Result<T, ToolError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    read.variable(name)?.parse().map_err(|error: T::Err| {
        ToolError::invalid_argument(
            name,
            format!(
                "`{name}` in `{}` is not a {}: {error}",
                read.uri,
                std::any::type_name::<T>()
            ),
        )
    })
}

/// What a `#[resource]` function returns.
#[diagnostic::on_unimplemented(
    message = "a `#[resource]` function returns `{Self}`, which is not a resource's content",
    label = "return text (`String`, `&'static str`), a `ResourceContent`, or a `Result` of one",
    note = "`ResourceContent::base64(..)` gives bytes; `.with_media_type(..)` says their type"
)]
pub trait IntoResourceContent {
    /// The content, or why there is none.
    fn into_resource_content(self) -> Result<ResourceContent, ToolError>;
}

impl IntoResourceContent for ResourceContent {
    fn into_resource_content(self) -> Result<ResourceContent, ToolError> {
        Ok(self)
    }
}

impl IntoResourceContent for String {
    fn into_resource_content(self) -> Result<ResourceContent, ToolError> {
        Ok(ResourceContent::text(self))
    }
}

impl IntoResourceContent for &'static str {
    fn into_resource_content(self) -> Result<ResourceContent, ToolError> {
        Ok(ResourceContent::text(self))
    }
}

impl<T: IntoResourceContent, E: Into<ToolError>> IntoResourceContent for Result<T, E> {
    fn into_resource_content(self) -> Result<ResourceContent, ToolError> {
        self.map_err(Into::into)?.into_resource_content()
    }
}

/// A `#[prompt]` function's parameter: what the client gives for an
/// argument of its name.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a prompt argument",
    label = "a prompt's argument is `String` (required) or `Option<String>` (optional)",
    note = "MCP gives every prompt argument as text"
)]
pub trait PromptArgument: Sized {
    /// Whether the client must give it.
    const REQUIRED: bool;
    /// The value from what the client gave (`None`: nothing).
    fn from_argument(given: Option<String>) -> Self;
}

impl PromptArgument for String {
    const REQUIRED: bool = true;
    fn from_argument(given: Option<String>) -> Self {
        // A required argument left out is refused before the prompt runs.
        given.unwrap_or_default()
    }
}

impl PromptArgument for Option<String> {
    const REQUIRED: bool = false;
    fn from_argument(given: Option<String>) -> Self {
        given
    }
}

/// What a `#[prompt]` function returns.
#[diagnostic::on_unimplemented(
    message = "a `#[prompt]` function returns `{Self}`, which is not a prompt's messages",
    label = "return `Vec<PromptMessage>`, a `PromptMessage`, a `String` (the user's message), or a `Result` of one"
)]
pub trait IntoPromptMessages {
    /// The messages, or why there are none.
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, ToolError>;
}

impl IntoPromptMessages for Vec<PromptMessage> {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(self)
    }
}

impl IntoPromptMessages for PromptMessage {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![self])
    }
}

impl IntoPromptMessages for String {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, ToolError> {
        Ok(vec![PromptMessage::user(self)])
    }
}

impl<T: IntoPromptMessages, E: Into<ToolError>> IntoPromptMessages for Result<T, E> {
    fn into_prompt_messages(self) -> Result<Vec<PromptMessage>, ToolError> {
        self.map_err(Into::into)?.into_prompt_messages()
    }
}

/// The prompt `name`, described by `description`, made by `get`.
pub fn prompt<F, Fut>(name: &str, description: &str, get: F) -> Prompt
where
    F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send + 'static,
{
    Prompt::new(name.to_owned(), description.to_owned(), get)
}

//! What an MCP server offers beside its tools: resources (fixed URIs and
//! URI templates) the client reads, and prompts the user picks, each with
//! completions for their arguments.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use super::uri_template::{UriTemplate, UriTemplateError};
use crate::tool::ToolError;

/// What a resource read gives: text or bytes, with its media type.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResourceContent {
    /// Text.
    Text {
        /// The text.
        text: String,
        /// Its media type, when it is not the resource's.
        media_type: Option<String>,
    },
    /// Bytes, as base64.
    Blob {
        /// The base64 data.
        base64: String,
        /// Its media type, when it is not the resource's.
        media_type: Option<String>,
    },
}

impl ResourceContent {
    /// Text, of the resource's media type.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text {
            text: text.into(),
            media_type: None,
        }
    }

    /// Bytes given as base64 `data`, of the resource's media type.
    pub fn base64(data: impl Into<String>) -> Self {
        Self::Blob {
            base64: data.into(),
            media_type: None,
        }
    }

    /// The same content, of `media_type`.
    #[must_use]
    pub fn with_media_type(mut self, given: impl Into<String>) -> Self {
        match &mut self {
            Self::Text { media_type, .. } | Self::Blob { media_type, .. } => {
                *media_type = Some(given.into());
            }
        }
        self
    }
}

/// A read of a resource: the URI asked for, and for a template the values
/// of its variables in it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResourceRead {
    /// The URI the client read.
    pub uri: String,
    /// The template's variables, by name (empty for a fixed URI).
    pub variables: HashMap<String, String>,
}

impl ResourceRead {
    /// The value of the template's variable `name`.
    ///
    /// # Errors
    /// A [`ToolError`] naming it, when the template has no such variable:
    /// `?` in a read gives the client a clear error.
    pub fn variable(&self, name: &str) -> Result<&str, ToolError> {
        self.variables.get(name).map(String::as_str).ok_or_else(|| {
            ToolError::execution(format!(
                "the resource `{}` has no variable `{name}`",
                self.uri
            ))
        })
    }
}

type Read = Arc<
    dyn Fn(ResourceRead) -> BoxFuture<'static, Result<ResourceContent, ToolError>> + Send + Sync,
>;
type Complete = Arc<dyn Fn(String) -> BoxFuture<'static, Vec<String>> + Send + Sync>;

/// `complete` as a resource or prompt keeps it.
fn completer<F, Fut>(complete: F) -> Complete
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<String>> + Send + 'static,
{
    Arc::new(move |typed| Box::pin(complete(typed)))
}

/// Where a resource is: one URI, or the URIs a template makes.
#[derive(Debug, Clone)]
pub(crate) enum Address {
    Fixed(String),
    Template(UriTemplate),
}

/// A resource an MCP server serves: at a fixed URI, listed in
/// `resources/list`, or at the URIs a [`UriTemplate`] makes, listed in
/// `resources/templates/list`; read by a function of the [`ResourceRead`].
///
/// ```
/// use behest::mcp::{Resource, ResourceContent};
///
/// let readme = Resource::new("docs://readme", "readme", |_read| async {
///     Ok(ResourceContent::text("# Hello"))
/// })
/// .media_type("text/markdown")
/// .description("The project's readme");
/// let order = Resource::template("orders://{id}", "order", |read| async move {
///     let id = read.variable("id")?;
///     Ok(ResourceContent::text(format!("{{\"id\": \"{id}\"}}")))
/// })
/// .unwrap()
/// .media_type("application/json");
/// ```
#[derive(Clone)]
pub struct Resource {
    pub(crate) address: Address,
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) media_type: Option<String>,
    pub(crate) read: Read,
    /// Completions of a template's variables, by name.
    pub(crate) completions: BTreeMap<String, Complete>,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource")
            .field("address", &self.address)
            .field("name", &self.name)
            .field("media_type", &self.media_type)
            .finish_non_exhaustive()
    }
}

impl Resource {
    /// The resource at `uri`, named `name`, read by `read`.
    pub fn new<F, Fut>(uri: impl Into<String>, name: impl Into<String>, read: F) -> Self
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContent, ToolError>> + Send + 'static,
    {
        Self::at(Address::Fixed(uri.into()), name.into(), read)
    }

    /// The resources at the URIs `template` makes (`orders://{id}`), named
    /// `name`, read by `read`, which gets the variables' values.
    ///
    /// # Errors
    /// A template that cannot be matched ([`UriTemplate::parse`]).
    pub fn template<F, Fut>(
        template: &str,
        name: impl Into<String>,
        read: F,
    ) -> Result<Self, UriTemplateError>
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContent, ToolError>> + Send + 'static,
    {
        let template = UriTemplate::parse(template)?;
        Ok(Self::at(Address::Template(template), name.into(), read))
    }

    fn at<F, Fut>(address: Address, name: String, read: F) -> Self
    where
        F: Fn(ResourceRead) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ResourceContent, ToolError>> + Send + 'static,
    {
        Self {
            address,
            name,
            title: None,
            description: None,
            media_type: None,
            read: Arc::new(move |request| Box::pin(read(request))),
            completions: BTreeMap::new(),
        }
    }

    /// Its title, for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// What it is, for the client's model and people.
    #[must_use]
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Its media type (`text/plain`, `image/png`), said in the list and
    /// given with its contents unless they say another.
    #[must_use]
    pub fn media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// Completes the template's variable `variable` (`completion/complete`):
    /// `complete` gets what the user has typed and gives the values that
    /// may follow (the first 100 are sent).
    ///
    /// # Errors
    /// [`CatalogError`] when the resource is not a template, or its
    /// template has no such variable.
    pub fn complete<F, Fut>(mut self, variable: &str, complete: F) -> Result<Self, CatalogError>
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        let Address::Template(template) = &self.address else {
            return Err(CatalogError(format!(
                "the resource `{}` is at a fixed URI: it has no variable `{variable}` to complete",
                self.name
            )));
        };
        if !template.variables().any(|name| name == variable) {
            return Err(CatalogError(format!(
                "the template `{template}` has no variable `{variable}` (it has: {})",
                template.variables().collect::<Vec<_>>().join(", ")
            )));
        }
        self.completions
            .insert(variable.to_owned(), completer(complete));
        Ok(self)
    }

    /// Its URI, or its template as written.
    pub fn uri(&self) -> &str {
        match &self.address {
            Address::Fixed(uri) => uri,
            Address::Template(template) => template.as_str(),
        }
    }
}

/// A prompt's argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Argument {
    pub name: String,
    pub description: Option<String>,
    pub required: bool,
}

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PromptRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// What a prompt's message holds.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PromptContent {
    /// Text.
    Text(String),
    /// An image, as base64 `data` of `media_type`.
    Image {
        /// The base64 data.
        data: String,
        /// Its media type (`image/png`).
        media_type: String,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The resource's URI.
        uri: String,
        /// What it holds.
        content: ResourceContent,
    },
}

/// A message of a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PromptMessage {
    /// Who says it.
    pub role: PromptRole,
    /// What it holds.
    pub content: PromptContent,
}

impl PromptMessage {
    /// The user's text.
    pub fn user(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::User,
            content: PromptContent::Text(text.into()),
        }
    }

    /// The assistant's text.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self {
            role: PromptRole::Assistant,
            content: PromptContent::Text(text.into()),
        }
    }

    /// `content`, said by `role`.
    pub fn new(role: PromptRole, content: PromptContent) -> Self {
        Self { role, content }
    }
}

/// A prompt's arguments, as the client gave them.
pub type PromptArguments = HashMap<String, String>;

type Get = Arc<
    dyn Fn(PromptArguments) -> BoxFuture<'static, Result<Vec<PromptMessage>, ToolError>>
        + Send
        + Sync,
>;

/// A prompt an MCP server offers (`prompts/list`, `prompts/get`): named
/// arguments, each described and required or not, and a function of their
/// values that gives the messages.
///
/// ```
/// use behest::mcp::{Prompt, PromptMessage};
///
/// let review = Prompt::new("review", "Review a change", |arguments| async move {
///     let change = &arguments["change"];
///     Ok(vec![PromptMessage::user(format!("Review this change:\n{change}"))])
/// })
/// .argument("change", "The diff to review", true);
/// ```
#[derive(Clone)]
pub struct Prompt {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: String,
    pub(crate) arguments: Vec<Argument>,
    pub(crate) get: Get,
    pub(crate) completions: BTreeMap<String, Complete>,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt")
            .field("name", &self.name)
            .field("arguments", &self.arguments)
            .finish_non_exhaustive()
    }
}

impl Prompt {
    /// The prompt `name`, described by `description`, whose messages `get`
    /// makes from the arguments. A required argument the client leaves
    /// out, or an argument it does not declare, is refused before `get`
    /// runs.
    pub fn new<F, Fut>(name: impl Into<String>, description: impl Into<String>, get: F) -> Self
    where
        F: Fn(PromptArguments) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<PromptMessage>, ToolError>> + Send + 'static,
    {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
            get: Arc::new(move |arguments| Box::pin(get(arguments))),
            completions: BTreeMap::new(),
        }
    }

    /// Its title, for people.
    #[must_use]
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Declares the argument `name`: what it is, and whether the client
    /// must give it.
    #[must_use]
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(Argument {
            name: name.into(),
            description: Some(description.into()).filter(|text: &String| !text.is_empty()),
            required,
        });
        self
    }

    /// Completes the argument `argument` (`completion/complete`):
    /// `complete` gets what the user has typed and gives the values that
    /// may follow (the first 100 are sent).
    ///
    /// # Errors
    /// [`CatalogError`] when the prompt declares no such argument (declare
    /// it first).
    pub fn complete<F, Fut>(mut self, argument: &str, complete: F) -> Result<Self, CatalogError>
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Vec<String>> + Send + 'static,
    {
        if !self
            .arguments
            .iter()
            .any(|declared| declared.name == argument)
        {
            return Err(CatalogError(format!(
                "the prompt `{}` declares no argument `{argument}` to complete",
                self.name
            )));
        }
        self.completions
            .insert(argument.to_owned(), completer(complete));
        Ok(self)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `given` checked against the declared arguments.
    pub(crate) fn checked(&self, given: &PromptArguments) -> Result<(), String> {
        let missing: Vec<&str> = self
            .arguments
            .iter()
            .filter(|argument| argument.required && !given.contains_key(&argument.name))
            .map(|argument| argument.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "the prompt `{}` needs the argument(s) {}",
                self.name,
                quoted(&missing)
            ));
        }
        let mut unknown: Vec<&str> = given
            .keys()
            .map(String::as_str)
            .filter(|name| !self.arguments.iter().any(|argument| argument.name == *name))
            .collect();
        unknown.sort_unstable();
        if !unknown.is_empty() {
            let declared: Vec<&str> = self.arguments.iter().map(|a| a.name.as_str()).collect();
            return Err(format!(
                "the prompt `{}` has no argument(s) {} (it takes: {})",
                self.name,
                quoted(&unknown),
                if declared.is_empty() {
                    "none".to_owned()
                } else {
                    quoted(&declared)
                }
            ));
        }
        Ok(())
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Why a resource or prompt cannot join a [`McpCatalog`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct CatalogError(String);

/// The resources and prompts an [`McpServer`](super::McpServer) offers
/// beside its tools ([`McpServer::catalog`](super::McpServer::catalog)).
///
/// ```
/// use behest::mcp::{McpCatalog, Prompt, PromptMessage, Resource, ResourceContent};
///
/// let catalog = McpCatalog::new()
///     .resource(Resource::new("docs://readme", "readme", |_| async {
///         Ok(ResourceContent::text("# Hello"))
///     }))
///     .unwrap()
///     .prompt(Prompt::new("hello", "Say hello", |_| async {
///         Ok(vec![PromptMessage::user("Hello!")])
///     }))
///     .unwrap();
/// assert!(catalog.clone().prompt(Prompt::new("hello", "Again", |_| async { Ok(vec![]) })).is_err());
/// ```
#[derive(Debug, Clone, Default)]
pub struct McpCatalog {
    pub(crate) resources: Vec<Resource>,
    pub(crate) templates: Vec<Resource>,
    pub(crate) prompts: Vec<Prompt>,
}

impl McpCatalog {
    /// No resources, no prompts.
    pub fn new() -> Self {
        Self::default()
    }

    /// With `resource` (a [`Resource`], or a `#[resource]` function's
    /// type).
    ///
    /// # Errors
    /// A resource of the same URI or template, or of the same name, is
    /// there already.
    pub fn resource(mut self, resource: impl Into<Resource>) -> Result<Self, CatalogError> {
        let resource = resource.into();
        let taken = self
            .resources
            .iter()
            .chain(&self.templates)
            .find(|other| other.uri() == resource.uri() || other.name == resource.name);
        if let Some(other) = taken {
            return Err(CatalogError(format!(
                "the resource `{}` ({}) and `{}` ({}) share a URI or a name",
                other.name,
                other.uri(),
                resource.name,
                resource.uri()
            )));
        }
        match resource.address {
            Address::Fixed(_) => self.resources.push(resource),
            Address::Template(_) => self.templates.push(resource),
        }
        Ok(self)
    }

    /// With `prompt` (a [`Prompt`], or a `#[prompt]` function's type).
    ///
    /// # Errors
    /// A prompt of the same name is there already, or the prompt declares
    /// an argument twice.
    pub fn prompt(mut self, prompt: impl Into<Prompt>) -> Result<Self, CatalogError> {
        let prompt = prompt.into();
        if self.prompts.iter().any(|other| other.name == prompt.name) {
            return Err(CatalogError(format!(
                "two prompts are named `{}`",
                prompt.name
            )));
        }
        for (at, argument) in prompt.arguments.iter().enumerate() {
            if prompt.arguments[..at]
                .iter()
                .any(|before| before.name == argument.name)
            {
                return Err(CatalogError(format!(
                    "the prompt `{}` declares the argument `{}` twice",
                    prompt.name, argument.name
                )));
            }
        }
        self.prompts.push(prompt);
        Ok(self)
    }

    /// Whether it offers nothing.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    /// The resource that serves `uri`, with its template's variables: a
    /// fixed URI first, then the templates in the order they were added.
    pub(crate) fn resource_at(&self, uri: &str) -> Option<(&Resource, HashMap<String, String>)> {
        if let Some(resource) = self.resources.iter().find(|resource| resource.uri() == uri) {
            return Some((resource, HashMap::new()));
        }
        self.templates
            .iter()
            .find_map(|resource| match &resource.address {
                Address::Template(template) => template.matches(uri).map(|found| (resource, found)),
                Address::Fixed(_) => None,
            })
    }

    /// The prompt named `name`.
    pub(crate) fn prompt_named(&self, name: &str) -> Option<&Prompt> {
        self.prompts.iter().find(|prompt| prompt.name == name)
    }

    /// The template whose URI template is `template`.
    pub(crate) fn template(&self, template: &str) -> Option<&Resource> {
        self.templates
            .iter()
            .find(|resource| resource.uri() == template)
    }
}

/// The values `complete` gives for `typed`, at most the protocol's 100,
/// with how many there were.
pub(crate) async fn completed(complete: Option<&Complete>, typed: String) -> (Vec<String>, usize) {
    let Some(complete) = complete else {
        return (Vec::new(), 0);
    };
    let mut values = complete(typed).await;
    let total = values.len();
    values.truncate(100);
    (values, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_refuses_missing_and_unknown_arguments_by_name() {
        let prompt = Prompt::new("p", "d", |_| async { Ok(vec![]) })
            .argument("a", "first", true)
            .argument("b", "second", false);
        let given = |pairs: &[(&str, &str)]| -> PromptArguments {
            pairs
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect()
        };
        assert!(prompt.checked(&given(&[("a", "1")])).is_ok());
        let missing = prompt.checked(&given(&[("b", "1")])).unwrap_err();
        assert!(missing.contains("needs the argument(s) `a`"), "{missing}");
        let unknown = prompt
            .checked(&given(&[("a", "1"), ("c", "2")]))
            .unwrap_err();
        assert!(unknown.contains("no argument(s) `c`"), "{unknown}");
        assert!(unknown.contains("`a`, `b`"), "{unknown}");
    }

    #[test]
    fn a_catalog_finds_fixed_uris_before_templates_and_refuses_twins() {
        let read = |_: ResourceRead| async { Ok(ResourceContent::text("x")) };
        let catalog = McpCatalog::new()
            .resource(Resource::template("a://{id}", "any", read).unwrap())
            .unwrap()
            .resource(Resource::new("a://fixed", "fixed", read))
            .unwrap();
        assert_eq!(catalog.resource_at("a://fixed").unwrap().0.name, "fixed");
        let (template, found) = catalog.resource_at("a://7").unwrap();
        assert_eq!((template.name.as_str(), found["id"].as_str()), ("any", "7"));
        assert!(catalog.resource_at("b://7").is_none());
        let twin = catalog
            .clone()
            .resource(Resource::new("a://fixed", "other", read))
            .unwrap_err();
        assert!(twin.to_string().contains("share a URI or a name"), "{twin}");
        let completion = Resource::new("a://x", "x", read).complete("id", |_| async { vec![] });
        assert!(completion.unwrap_err().to_string().contains("fixed URI"));
        let completion = Resource::template("a://{id}", "t", read)
            .unwrap()
            .complete("other", |_| async { vec![] });
        assert!(completion.unwrap_err().to_string().contains("has: id"));
    }
}

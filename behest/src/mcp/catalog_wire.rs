//! A [`McpCatalog`] as MCP says it: `resources/list`, `resources/read`,
//! `resources/templates/list`, `prompts/list`, `prompts/get` and
//! `completion/complete`, built as the protocol's JSON and read into
//! rmcp's types.

use rmcp::model::{
    CompleteRequestParams, CompleteResult, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult, Reference,
};
use rmcp::ErrorData;
use serde_json::{json, Map, Value};

use super::catalog::{
    completed, McpCatalog, PromptArguments, PromptContent, PromptMessage, PromptRole, Resource,
    ResourceContent, ResourceRead,
};

/// Where a page of `len` items starts and ends, from a client's `cursor`
/// (the place the last page ended, as text).
pub(crate) fn page(
    len: usize,
    cursor: Option<&str>,
    size: usize,
) -> Result<(usize, usize, Option<String>), ErrorData> {
    let start = match cursor {
        None => 0,
        Some(cursor) => cursor
            .parse::<usize>()
            .ok()
            .filter(|start| *start <= len)
            .ok_or_else(|| ErrorData::invalid_params(format!("invalid cursor `{cursor}`"), None))?,
    };
    let end = start.saturating_add(size).min(len);
    Ok((start, end, (end < len).then(|| end.to_string())))
}

/// `value`, a complete result (`resultType`, which protocol 2026-07-28
/// requires; rmcp leaves it out for clients of older versions), read into
/// rmcp's `T`: what this module builds is the protocol's JSON, so a
/// failure is a fault here, said as an internal error.
fn typed<T: serde::de::DeserializeOwned>(mut value: Value) -> Result<T, ErrorData> {
    if let Some(result) = value.as_object_mut() {
        result.insert("resultType".to_owned(), Value::from("complete"));
    }
    serde_json::from_value(value).map_err(|error| {
        ErrorData::internal_error(format!("an MCP result could not be made: {error}"), None)
    })
}

/// `object` with `key` set to `value` when there is one.
fn with(mut object: Value, key: &str, value: Option<&String>) -> Value {
    if let (Some(value), Some(map)) = (value, object.as_object_mut()) {
        map.insert(key.to_owned(), Value::String(value.clone()));
    }
    object
}

fn listed(resource: &Resource, key: &str) -> Value {
    let entry = json!({ key: resource.uri(), "name": resource.name });
    let entry = with(entry, "title", resource.title.as_ref());
    let entry = with(entry, "description", resource.description.as_ref());
    with(entry, "mimeType", resource.media_type.as_ref())
}

/// A page of the catalog's fixed resources.
pub(crate) fn list_resources(
    catalog: &McpCatalog,
    cursor: Option<&str>,
    size: usize,
) -> Result<ListResourcesResult, ErrorData> {
    list_page(&catalog.resources, ("resources", "uri"), cursor, size)
}

/// A page of the catalog's resource templates.
pub(crate) fn list_templates(
    catalog: &McpCatalog,
    cursor: Option<&str>,
    size: usize,
) -> Result<ListResourceTemplatesResult, ErrorData> {
    list_page(
        &catalog.templates,
        ("resourceTemplates", "uriTemplate"),
        cursor,
        size,
    )
}

/// A page of `resources` as the list `keys.0` holds them, each with its
/// URI under `keys.1`.
fn list_page<T: serde::de::DeserializeOwned>(
    resources: &[Resource],
    (list, uri_key): (&str, &str),
    cursor: Option<&str>,
    size: usize,
) -> Result<T, ErrorData> {
    let (start, end, next) = page(resources.len(), cursor, size)?;
    let listed: Vec<Value> = resources[start..end]
        .iter()
        .map(|resource| listed(resource, uri_key))
        .collect();
    typed(with(json!({ list: listed }), "nextCursor", next.as_ref()))
}

/// That no resource is at `uri` (MCP's -32002).
pub(crate) fn not_found(uri: &str) -> ErrorData {
    ErrorData::resource_not_found(
        format!("no resource is at `{uri}`"),
        Some(json!({ "uri": uri })),
    )
}

/// A resource's contents as MCP's JSON, at `uri`, of `fallback`'s media
/// type unless the content says one.
fn contents(uri: &str, content: ResourceContent, fallback: Option<&String>) -> Value {
    let (key, body, media_type) = match content {
        ResourceContent::Text { text, media_type } => ("text", text, media_type),
        ResourceContent::Blob { base64, media_type } => ("blob", base64, media_type),
    };
    let entry = json!({ "uri": uri, key: body });
    with(entry, "mimeType", media_type.as_ref().or(fallback))
}

/// Reads `uri`.
pub(crate) async fn read(catalog: &McpCatalog, uri: &str) -> Result<ReadResourceResult, ErrorData> {
    let (resource, variables) = catalog.resource_at(uri).ok_or_else(|| not_found(uri))?;
    let request = ResourceRead {
        uri: uri.to_owned(),
        variables,
    };
    let content = (resource.read)(request)
        .await
        .map_err(|error| match error {
            // The URI's variables are the client's to fix.
            crate::tool::ToolError::InvalidArguments { .. } => {
                ErrorData::invalid_params(format!("reading `{uri}`: {error}"), None)
            }
            _ => ErrorData::internal_error(format!("reading `{uri}` failed: {error}"), None),
        })?;
    let entry = contents(uri, content, resource.media_type.as_ref());
    typed(json!({ "contents": [entry] }))
}

/// A page of the catalog's prompts.
pub(crate) fn list_prompts(
    catalog: &McpCatalog,
    cursor: Option<&str>,
    size: usize,
) -> Result<ListPromptsResult, ErrorData> {
    let (start, end, next) = page(catalog.prompts.len(), cursor, size)?;
    let prompts: Vec<Value> = catalog.prompts[start..end]
        .iter()
        .map(|prompt| {
            let arguments: Vec<Value> = prompt
                .arguments
                .iter()
                .map(|argument| {
                    let entry = json!({ "name": argument.name, "required": argument.required });
                    with(entry, "description", argument.description.as_ref())
                })
                .collect();
            let entry = json!({
                "name": prompt.name,
                "description": prompt.description,
                "arguments": arguments,
            });
            with(entry, "title", prompt.title.as_ref())
        })
        .collect();
    typed(with(
        json!({ "prompts": prompts }),
        "nextCursor",
        next.as_ref(),
    ))
}

fn message(message: PromptMessage) -> Value {
    let role = match message.role {
        PromptRole::User => "user",
        PromptRole::Assistant => "assistant",
    };
    let content = match message.content {
        PromptContent::Text(text) => json!({ "type": "text", "text": text }),
        PromptContent::Image { data, media_type } => {
            json!({ "type": "image", "data": data, "mimeType": media_type })
        }
        PromptContent::Resource { uri, content } => {
            json!({ "type": "resource", "resource": contents(&uri, content, None) })
        }
    };
    json!({ "role": role, "content": content })
}

/// Gets the prompt `name` with `arguments`.
pub(crate) async fn get_prompt(
    catalog: &McpCatalog,
    name: &str,
    arguments: Option<Map<String, Value>>,
) -> Result<GetPromptResult, ErrorData> {
    let prompt = catalog.prompt_named(name).ok_or_else(|| {
        let names: Vec<&str> = catalog.prompts.iter().map(|prompt| prompt.name()).collect();
        ErrorData::invalid_params(
            format!(
                "no prompt is named `{name}` (the prompts: {})",
                if names.is_empty() {
                    "none".to_owned()
                } else {
                    names.join(", ")
                }
            ),
            None,
        )
    })?;
    // The protocol's arguments are strings; a client that sends another
    // JSON value gets it as its JSON text.
    let given: PromptArguments = arguments
        .unwrap_or_default()
        .into_iter()
        .map(|(key, value)| match value {
            Value::String(text) => (key, text),
            other => (key, other.to_string()),
        })
        .collect();
    prompt
        .checked(&given)
        .map_err(|why| ErrorData::invalid_params(why, None))?;
    let messages = (prompt.get)(given).await.map_err(|error| {
        ErrorData::internal_error(format!("the prompt `{name}` failed: {error}"), None)
    })?;
    let messages: Vec<Value> = messages.into_iter().map(message).collect();
    typed(json!({ "description": prompt.description, "messages": messages }))
}

/// Completes a prompt's argument or a template's variable. An argument or
/// variable without completions gets none; an unknown prompt or template
/// is refused.
pub(crate) async fn complete(
    catalog: &McpCatalog,
    request: CompleteRequestParams,
) -> Result<CompleteResult, ErrorData> {
    let argument = request.argument;
    let completer = match &request.r#ref {
        Reference::Prompt(reference) => {
            let prompt = catalog.prompt_named(&reference.name).ok_or_else(|| {
                ErrorData::invalid_params(format!("no prompt is named `{}`", reference.name), None)
            })?;
            prompt.completions.get(&argument.name)
        }
        Reference::Resource(reference) => {
            let template = catalog.template(&reference.uri).ok_or_else(|| {
                ErrorData::invalid_params(
                    format!("no resource template is `{}`", reference.uri),
                    None,
                )
            })?;
            template.completions.get(&argument.name)
        }
        _ => {
            return Err(ErrorData::invalid_params(
                "a completion's `ref` is a prompt or a resource template",
                None,
            ))
        }
    };
    let (values, total) = completed(completer, argument.value).await;
    let has_more = total > values.len();
    typed(json!({
        "completion": { "values": values, "total": total, "hasMore": has_more }
    }))
}

//! Model Context Protocol, 2025-11-25: `tools/list` and `tools/call`.

use serde_json::{json, Value};

use super::{arguments_object, schema, str_field, Export, ExportError, ParseError};
use crate::conversation::WireFormat;
use crate::registry::ToolRegistry;
use crate::tool::{Attachment, MediaSource, ToolCall, ToolCallResult};
use crate::tool::{ToolAnnotations, ToolError, ToolSpec};

/// The JSON-RPC error code for an unknown tool or a malformed request.
pub const INVALID_PARAMS: i64 = -32602;

/// The registry as the `tools` of a `tools/list` result. Input schemas go
/// as they are (MCP speaks draft 2020-12); an output schema that is not an
/// object is wrapped as `{"result": ..}`.
pub fn tools(registry: &ToolRegistry) -> Result<Export, ExportError> {
    super::export(registry, WireFormat::Mcp, &super::ExportOptions::default())
}

/// Tools as declarations of this format.
pub(crate) fn declare(specs: &[&ToolSpec]) -> Result<Export, ExportError> {
    let mut errors = Vec::new();
    let tools = specs
        .iter()
        .map(|spec| {
            if let Err(mut lint) = WireFormat::Mcp.check_name(&spec.name) {
                lint.tool = Some(spec.name.clone());
                errors.push(lint);
            }
            tool(spec)
        })
        .collect();
    if errors.is_empty() {
        Ok(Export {
            tools,
            lints: Vec::new(),
        })
    } else {
        Err(ExportError { lints: errors })
    }
}

/// One MCP tool declaration.
pub fn tool(spec: &ToolSpec) -> Value {
    let mut tool = json!({
        "name": spec.name,
        "description": spec.description,
        "inputSchema": spec.parameters,
    });
    if let Some(title) = &spec.annotations.title {
        tool["title"] = Value::String(title.clone());
    }
    if let Some(output) = &spec.output_schema {
        tool["outputSchema"] = schema::mcp_output_schema(output).0;
    }
    // Hints go in `annotations` (with the title, for older clients); a
    // title alone goes at the top only.
    let hints = ToolAnnotations {
        title: None,
        ..spec.annotations.clone()
    };
    if !hints.is_empty() {
        tool["annotations"] = serde_json::to_value(&spec.annotations).unwrap_or(Value::Null);
    }
    tool
}

/// An MCP tool declaration as a spec.
pub fn parse_tool(tool: &Value) -> Result<ToolSpec, ParseError> {
    let mut spec = ToolSpec::new(
        str_field(tool, "name", "tool")?,
        tool.get("description")
            .and_then(Value::as_str)
            .unwrap_or_default(),
        tool.get("inputSchema")
            .cloned()
            .ok_or_else(|| ParseError::new("tool: `inputSchema` is missing"))?,
    );
    spec.output_schema = tool.get("outputSchema").cloned();
    if let Some(annotations) = tool.get("annotations") {
        spec.annotations = serde_json::from_value::<ToolAnnotations>(annotations.clone())
            .map_err(|error| ParseError::new(format!("tool annotations: {error}")))?;
    }
    if let (Some(title), None) = (
        tool.get("title").and_then(Value::as_str),
        &spec.annotations.title,
    ) {
        spec.annotations.title = Some(title.to_owned());
    }
    Ok(spec)
}

/// The tools of a `tools/list` result message, as specs.
pub fn parse_tools(message: &Value) -> Result<Vec<ToolSpec>, ParseError> {
    message
        .pointer("/result/tools")
        .and_then(Value::as_array)
        .ok_or_else(|| ParseError::new("the message has no `result.tools` list"))?
        .iter()
        .map(parse_tool)
        .collect()
}

/// A `tools/call` request as a call; the JSON-RPC id becomes the call id.
pub fn parse_call(request: &Value) -> Result<ToolCall, ParseError> {
    if request.get("method").and_then(Value::as_str) != Some("tools/call") {
        return Err(ParseError::new("not a `tools/call` request"));
    }
    let id = match request.get("id") {
        Some(Value::String(id)) => id.clone(),
        Some(Value::Number(id)) => id.to_string(),
        _ => return Err(ParseError::new("tools/call: `id` is missing")),
    };
    let params = request
        .get("params")
        .ok_or_else(|| ParseError::new("tools/call: `params` is missing"))?;
    Ok(ToolCall::new(
        id,
        str_field(params, "name", "tools/call params")?,
        arguments_object(params.get("arguments").unwrap_or(&Value::Null)),
    ))
}

/// A `CallToolResult`: text content (structured output as text too, for
/// older clients), `structuredContent` (an object; a scalar is wrapped as
/// `{"result": ..}`) and `isError`. Argument errors are results with
/// `isError`, as the protocol asks, so the model can fix them.
pub fn result(result: &ToolCallResult) -> Value {
    let mut content = vec![json!({"type": "text", "text": result_text(result)})];
    content
        .extend(inline_images(result).map(
            |(mime_type, data)| json!({"type": "image", "data": data, "mimeType": mime_type}),
        ));
    content.extend(attachment_blocks(result));
    let mut value = json!({
        "content": content,
        "isError": result.is_error(),
    });
    if let Some(structured) = structured_content(result) {
        value["structuredContent"] = structured;
    }
    value
}

/// A result's text block: the output's text, or the error's. Attachments
/// go as blocks of their own, not as lines of it too.
pub(crate) fn result_text(result: &ToolCallResult) -> String {
    match &result.outcome {
        Ok(output) => output.to_text(),
        Err(error) => error.to_string(),
    }
}

/// A result's attachments as MCP content blocks.
pub(crate) fn attachment_blocks(result: &ToolCallResult) -> impl Iterator<Item = Value> + '_ {
    result
        .outcome
        .as_ref()
        .map(|output| output.attachments.as_slice())
        .unwrap_or_default()
        .iter()
        .map(attachment_block)
}

/// An attachment as MCP's content block of its kind.
fn attachment_block(attachment: &Attachment) -> Value {
    match attachment {
        Attachment::Audio { media_type, data } => {
            json!({"type": "audio", "data": data, "mimeType": media_type})
        }
        Attachment::Resource {
            uri,
            media_type,
            text,
            blob,
        } => {
            let mut resource = json!({"uri": uri});
            if let Some(media_type) = media_type {
                resource["mimeType"] = json!(media_type);
            }
            match (text, blob) {
                (Some(text), _) => resource["text"] = json!(text),
                (None, blob) => resource["blob"] = json!(blob.as_deref().unwrap_or_default()),
            }
            json!({"type": "resource", "resource": resource})
        }
        Attachment::ResourceLink {
            uri,
            name,
            description,
            media_type,
        } => {
            let mut link = json!({"type": "resource_link", "uri": uri, "name": name});
            if let Some(description) = description {
                link["description"] = json!(description);
            }
            if let Some(media_type) = media_type {
                link["mimeType"] = json!(media_type);
            }
            link
        }
    }
}

/// An MCP content block other than text and image, as an attachment (for
/// the client that imports results).
#[cfg(feature = "mcp")]
pub(crate) fn block_attachment(block: &Value) -> Option<Attachment> {
    let field =
        |value: &Value, name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    match block.get("type").and_then(Value::as_str)? {
        "audio" => Some(Attachment::Audio {
            media_type: field(block, "mimeType")?,
            data: field(block, "data")?,
        }),
        "resource" => {
            let resource = block.get("resource")?;
            Some(Attachment::Resource {
                uri: field(resource, "uri")?,
                media_type: field(resource, "mimeType"),
                text: field(resource, "text"),
                blob: field(resource, "blob"),
            })
        }
        "resource_link" => Some(Attachment::ResourceLink {
            uri: field(block, "uri")?,
            name: field(block, "name").unwrap_or_default(),
            description: field(block, "description"),
            media_type: field(block, "mimeType"),
        }),
        _ => None,
    }
}

/// A result's images that MCP can carry (inline ones: MCP image content
/// holds bytes, not URLs), as media type and base64 data.
pub(crate) fn inline_images(result: &ToolCallResult) -> impl Iterator<Item = (&str, &str)> {
    result
        .outcome
        .as_ref()
        .map(|output| output.images.as_slice())
        .unwrap_or_default()
        .iter()
        .filter_map(|image| match image {
            MediaSource::Base64 { media_type, data } => Some((media_type.as_str(), data.as_str())),
            MediaSource::Url { .. } => None,
        })
}

/// A result's `structuredContent`: its structured output, an object as it
/// is, anything else wrapped as `{"result": ..}`.
pub(crate) fn structured_content(result: &ToolCallResult) -> Option<Value> {
    let structured = result.outcome.as_ref().ok()?.structured.as_ref()?;
    Some(match structured {
        Value::Object(_) => structured.clone(),
        other => json!({"result": other}),
    })
}

/// The JSON-RPC response to a `tools/call` request: an error for an
/// unknown tool (a protocol error), a result otherwise.
pub fn call_response(id: &Value, result: &ToolCallResult) -> Value {
    match &result.outcome {
        Err(ToolError::NotFound { name, .. }) => json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": INVALID_PARAMS, "message": format!("Unknown tool: {name}")},
        }),
        _ => json!({"jsonrpc": "2.0", "id": id, "result": self::result(result)}),
    }
}

/// MCP: an output schema must describe an object, and a result's
/// `structuredContent` must be an object that validates against it.
/// [`mcp::result`](result) sends an object value as
/// it is and wraps any other value as `{"result": ..}`; this schema says
/// the same, whatever the output type:
///
/// - a schema of objects only (`"type": "object"`) is kept;
/// - a schema of no objects (`"type": "integer"`, `"array"`, …) is wrapped:
///   `{"type": "object", "properties": {"result": S}, "required": ["result"]}`;
/// - a schema that admits objects and other values (`Option<Struct>`, an
///   enum whose variants are objects or strings, a schema with no `type`)
///   takes both forms: `{"type": "object", "anyOf": [S, wrapped S]}`.
///
/// Returns the schema and whether it changed.
pub fn mcp_output_schema(schema: &Value) -> (Value, bool) {
    let objects = match schema.get("type") {
        Some(Value::String(kind)) => Some(kind == "object"),
        Some(Value::Array(kinds)) if !kinds.iter().any(|kind| kind == "object") => Some(false),
        _ => None,
    };
    if objects == Some(true) {
        return (schema.clone(), false);
    }
    let mut inner = schema.clone();
    let mut defs = None;
    if let Value::Object(object) = &mut inner {
        object.remove("$schema");
        object.remove("$id");
        defs = object.remove("$defs");
    }
    let result = json!({
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
    });
    let mut wrapped = if objects == Some(false) {
        result
    } else {
        json!({"type": "object", "anyOf": [inner, result]})
    };
    if let Some(defs) = defs {
        wrapped["$defs"] = defs;
    }
    (wrapped, true)
}

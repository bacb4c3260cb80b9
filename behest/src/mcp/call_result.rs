//! A finished call as MCP's `CallToolResult`, for a request's answer and
//! for a task's.

use rmcp::model::CallToolResult;
use rmcp::ErrorData;

use crate::providers;
use crate::runtime::ToolCallResult;
use crate::tool::ToolError;

/// The MCP result of a finished call: an unknown tool is a protocol error
/// (what rmcp's own servers answer); everything else, argument errors
/// included, is a result the model reads.
pub(crate) fn tool_result(result: &ToolCallResult) -> Result<CallToolResult, ErrorData> {
    if let Err(error @ ToolError::NotFound { .. }) = &result.outcome {
        return Err(ErrorData::invalid_params(error.to_string(), None));
    }
    // What `providers::mcp::result` writes, built as rmcp's type.
    let mut content = vec![rmcp::model::ContentBlock::text(
        providers::mcp::result_text(result),
    )];
    content.extend(
        providers::mcp::inline_images(result)
            .map(|(mime_type, data)| rmcp::model::ContentBlock::image(data, mime_type)),
    );
    // Attachments are rare: read into rmcp's type from the one writer.
    content.extend(
        providers::mcp::attachment_blocks(result)
            .filter_map(|block| serde_json::from_value(block).ok()),
    );
    let mut answer = if result.is_error() {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    };
    answer.structured_content = providers::mcp::structured_content(result);
    Ok(answer)
}

//! Anthropic's rules, as a pass over the canonical schema.

use serde_json::Value;

use crate::providers::schema::{escape, visit_mut};
use crate::providers::Lint;

/// Anthropic: the schema nearly as is, but no combinator at the root, and
/// property names that match `^[a-zA-Z0-9_.-]{1,64}$` at every depth, in
/// `$defs` too: a tool with another name anywhere is refused, with the
/// path of each, rather than sent with keys the API does not take (it
/// refuses them at the root, and a nested one would reach the model's
/// arguments under a name the runtime could not map back).
pub fn anthropic(schema: &mut Value, lints: &mut Vec<Lint>) {
    if let Value::Object(root) = schema {
        for keyword in ["anyOf", "oneOf", "allOf"] {
            if root.contains_key(keyword) {
                lints.push(Lint::error(
                    format!("/{keyword}"),
                    format!("`{keyword}` is not allowed at the root of an Anthropic tool schema"),
                ));
            }
        }
    }
    visit_mut(schema, "", &mut |node, path| {
        let Some(Value::Object(properties)) = node.get("properties") else {
            return;
        };
        for name in properties
            .keys()
            .filter(|name| !anthropic_property_name(name))
        {
            let at = format!("{path}/properties/{}", escape(name));
            let reason = format!("Anthropic takes property names that match `^[a-zA-Z0-9_.-]{{1,64}}$`; rename `{name}` (e.g. `#[serde(rename = \"...\")]` or `#[arg(rename = \"...\")]`)");
            lints.push(Lint::error(at, reason));
        }
    });
}

fn anthropic_property_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'.' | b'-'))
}

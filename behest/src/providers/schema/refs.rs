//! Local `$ref`s replaced by what they point to.

use serde_json::Value;

use super::{escape, visit_mut, LISTS, MAPS, SINGLE};
use crate::providers::Lint;

/// Replaces every local `$ref` by what it points to, so that the schema
/// needs no `$defs`. Meaning-preserving: a `$ref` with sibling keywords
/// becomes an `allOf` of the target, which is what `$ref` means in draft
/// 2020-12. Refuses, with an error lint, what cannot be inlined faithfully:
/// recursion, references outside the document, `$id`, `$anchor` and
/// `$dynamicRef`.
pub fn inline_refs(schema: &mut Value, lints: &mut Vec<Lint>) {
    let root = schema.clone();
    let before = lints.len();
    let mut scan = |node: &mut Value, path: &str| {
        let Value::Object(object) = node else { return };
        for keyword in ["$dynamicRef", "$dynamicAnchor", "$anchor", "$recursiveRef"] {
            if object.contains_key(keyword) {
                lints.push(Lint::error(path, format!("`{keyword}` cannot be inlined")));
            }
        }
        if !path.is_empty() && object.contains_key("$id") {
            lints.push(Lint::error(
                path,
                "a nested `$id` changes how references resolve; it cannot be inlined",
            ));
        }
    };
    visit_mut(schema, "", &mut scan);
    if lints.len() > before {
        return;
    }
    let mut stack = Vec::new();
    inline_node(schema, "", &root, &mut stack, lints);
    if lints.len() == before {
        if let Value::Object(object) = schema {
            object.remove("$defs");
            object.remove("definitions");
        }
    }
}

fn inline_node(
    node: &mut Value,
    path: &str,
    root: &Value,
    stack: &mut Vec<String>,
    lints: &mut Vec<Lint>,
) {
    if let Value::Object(object) = node {
        if let Some(Value::String(reference)) = object.get("$ref").cloned() {
            let Some(target) = resolve(root, &reference) else {
                lints.push(Lint::error(
                    format!("{path}/$ref"),
                    format!("`{reference}` is not a reference inside this schema"),
                ));
                return;
            };
            if stack.contains(&reference) {
                lints.push(Lint::error(
                    format!("{path}/$ref"),
                    format!("`{reference}` is recursive; a recursive type cannot be inlined"),
                ));
                return;
            }
            stack.push(reference);
            let mut target = target.clone();
            inline_node(&mut target, path, root, stack, lints);
            stack.pop();
            object.remove("$ref");
            if object.is_empty() {
                *node = target;
                return;
            }
            match object.get_mut("allOf") {
                Some(Value::Array(all)) => all.push(target),
                _ => {
                    object.insert("allOf".to_owned(), Value::Array(vec![target]));
                }
            }
        }
    }
    // Recurse into the subschemas (not into `$defs`: they are inlined where used).
    let Value::Object(object) = node else { return };
    for (key, child) in object.iter_mut() {
        let key_path = format!("{path}/{}", escape(key));
        if key == "$defs" || key == "definitions" {
            continue;
        }
        if SINGLE.contains(&key.as_str()) {
            inline_node(child, &key_path, root, stack, lints);
        } else if LISTS.contains(&key.as_str()) {
            if let Value::Array(items) = child {
                for (index, item) in items.iter_mut().enumerate() {
                    inline_node(item, &format!("{key_path}/{index}"), root, stack, lints);
                }
            }
        } else if MAPS.contains(&key.as_str()) {
            if let Value::Object(members) = child {
                for (name, member) in members.iter_mut() {
                    inline_node(
                        member,
                        &format!("{key_path}/{}", escape(name)),
                        root,
                        stack,
                        lints,
                    );
                }
            }
        }
    }
}

/// The target of a local reference: `#`, or `#/json/pointer` with JSON
/// Pointer and percent escapes.
pub(crate) fn resolve<'r>(root: &'r Value, reference: &str) -> Option<&'r Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.starts_with('/') {
        return None;
    }
    root.pointer(&percent_decode(pointer)?)
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = text.get(index + 1..index + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// Whether the schema `reference` points to refers back to it, directly or
/// through other references.
pub(crate) fn is_recursive(root: &Value, reference: &str) -> bool {
    let mut pending = vec![reference.to_owned()];
    let mut seen: Vec<String> = Vec::new();
    while let Some(current) = pending.pop() {
        if seen.contains(&current) {
            continue;
        }
        let Some(target) = resolve(root, &current) else {
            continue;
        };
        seen.push(current);
        let mut stack = vec![target];
        while let Some(node) = stack.pop() {
            match node {
                Value::Object(object) => {
                    if let Some(Value::String(inner)) = object.get("$ref") {
                        if inner == reference {
                            return true;
                        }
                        pending.push(inner.clone());
                    }
                    stack.extend(object.values());
                }
                Value::Array(items) => stack.extend(items),
                _ => {}
            }
        }
    }
    false
}

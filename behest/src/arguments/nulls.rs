//! `null` as "left out": what a strict-mode provider sends for an optional
//! field, at any depth.

use serde_json::{Map, Value};

/// How deep `$ref`s and combinators are followed to find the schemas that
/// apply to one value; deeper (or cyclic) ones are not looked into.
const MAX_EXPANSION: usize = 16;

/// Removes the `null` members of objects whose schema lists them as
/// properties that no applicable schema requires, in the arguments object
/// and every object nested in it: through properties, array items, tuple
/// items, map values, local `$ref`s and `allOf`/`anyOf`/`oneOf` branches.
///
/// Strict mode (OpenAI `strict: true`, which behest may use for any tool)
/// makes every optional field required and nullable on the wire, so the
/// model sends `null` for "left out". Dropping it gives `Option` fields and
/// `#[serde(default)]` fields their meaning, whether or not the schema
/// itself accepts `null` there.
///
/// ```
/// use serde_json::json;
///
/// let schema = json!({
///     "type": "object",
///     "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
///     "required": ["items"],
///     "$defs": {"Item": {
///         "type": "object",
///         "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
///         "required": ["name"]
///     }}
/// });
/// let mut arguments = json!({"items": [{"name": "a", "qty": null}]});
/// behest::arguments::drop_optional_nulls(&mut arguments, &schema);
/// assert_eq!(arguments, json!({"items": [{"name": "a"}]}));
/// ```
pub fn drop_optional_nulls(arguments: &mut Value, schema: &Value) {
    dropped_optional_nulls(arguments, schema);
}

/// [`drop_optional_nulls`], saying whether it dropped any.
pub(crate) fn dropped_optional_nulls(arguments: &mut Value, schema: &Value) -> bool {
    // Most calls hold no `null` member at all: nothing to look up.
    if !has_null_member(arguments) {
        return false;
    }
    let mut dropped = false;
    let mut stack: Vec<(&mut Value, Vec<&Value>)> = vec![(arguments, vec![schema])];
    while let Some((value, candidates)) = stack.pop() {
        let mut nodes = Vec::new();
        for candidate in candidates {
            expand(candidate, schema, 0, Applies::Always, &mut nodes);
        }
        match value {
            Value::Object(object) => {
                let before = object.len();
                object.retain(|key, item| !(item.is_null() && is_optional(&nodes, key)));
                dropped |= object.len() < before;
                for (key, item) in object.iter_mut() {
                    if is_container(item) {
                        let children = member_schemas(&nodes, key);
                        stack.push((item, children));
                    }
                }
            }
            Value::Array(items) => {
                for (index, item) in items.iter_mut().enumerate() {
                    if is_container(item) {
                        let children = item_schemas(&nodes, index);
                        stack.push((item, children));
                    }
                }
            }
            _ => {}
        }
    }
    dropped
}

/// Whether an object anywhere in `value` has a `null` member.
pub(crate) fn has_null_member(value: &Value) -> bool {
    // Most arguments are flat: no stack for them.
    if let Value::Object(object) = value {
        if object.values().any(Value::is_null) {
            return true;
        }
        if !object
            .values()
            .any(|member| member.is_object() || member.is_array())
        {
            return false;
        }
    }
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(object) => {
                for member in object.values() {
                    if member.is_null() {
                        return true;
                    }
                    stack.push(member);
                }
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Object(_) | Value::Array(_))
}

/// Whether a schema applies to a value for sure (the schema itself, a
/// `$ref` target, an `allOf` member) or only as one of several branches
/// (`anyOf`, `oneOf`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Applies {
    Always,
    AsBranch,
}

/// A schema that applies to a value, and how.
type Node<'s> = (&'s Map<String, Value>, Applies);

/// `node` and every schema that applies with it to the same value: the
/// targets of local `$ref`s and the members of combinators.
fn expand<'s>(
    node: &'s Value,
    root: &'s Value,
    depth: usize,
    applies: Applies,
    out: &mut Vec<Node<'s>>,
) {
    let Some(object) = node.as_object() else {
        return;
    };
    if depth > MAX_EXPANSION {
        return;
    }
    out.push((object, applies));
    if let Some(target) = object
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|reference| reference.strip_prefix('#'))
        .and_then(|pointer| root.pointer(pointer))
    {
        expand(target, root, depth + 1, applies, out);
    }
    for (keyword, member) in [
        ("allOf", applies),
        ("anyOf", Applies::AsBranch),
        ("oneOf", Applies::AsBranch),
    ] {
        for branch in object
            .get(keyword)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            expand(branch, root, depth + 1, member, out);
        }
    }
}

/// Whether `key` may be left out: no schema that surely applies requires
/// it, and some applicable schema lists it without requiring it (one
/// variant of an enum may take it as optional while another requires it).
fn is_optional(nodes: &[Node<'_>], key: &str) -> bool {
    let requires = |node: &Map<String, Value>| {
        crate::validation::required_of(node).any(|required| required == key)
    };
    let lists = |node: &Map<String, Value>| {
        node.get("properties")
            .and_then(Value::as_object)
            .is_some_and(|properties| properties.contains_key(key))
    };
    let required = nodes
        .iter()
        .any(|(node, applies)| *applies == Applies::Always && requires(node));
    !required && nodes.iter().any(|(node, _)| lists(node) && !requires(node))
}

/// The schemas of the member `key`: its property schemas, or the schemas
/// of members that are not properties.
fn member_schemas<'s>(nodes: &[Node<'s>], key: &str) -> Vec<&'s Value> {
    nodes
        .iter()
        .filter_map(|(node, _)| {
            let property = node
                .get("properties")
                .and_then(Value::as_object)
                .and_then(|properties| properties.get(key));
            property.or_else(|| node.get("additionalProperties"))
        })
        .collect()
}

/// The schemas of the array item at `index`: its tuple schema, or the
/// schema of the items past the tuple.
fn item_schemas<'s>(nodes: &[Node<'s>], index: usize) -> Vec<&'s Value> {
    nodes
        .iter()
        .filter_map(|(node, _)| {
            let prefix = node.get("prefixItems").and_then(Value::as_array);
            match prefix {
                Some(prefix) if index < prefix.len() => Some(&prefix[index]),
                _ => node.get("items"),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::drop_optional_nulls;
    use serde_json::json;

    #[test]
    fn nulls_are_dropped_through_every_kind_of_nesting() {
        let schema = json!({
            "type": "object",
            "properties": {
                "pair": {"type": "array", "prefixItems": [{"$ref": "#/$defs/Item"}, {"type": "integer"}]},
                "map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Item"}},
                "either": {"anyOf": [{"$ref": "#/$defs/Item"}, {"type": "null"}]},
                "top": {"type": ["string", "null"]},
                "needed": {"type": ["string", "null"]}
            },
            "required": ["needed"],
            "$defs": {"Item": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "qty": {"type": "integer"}},
                "required": ["name"]
            }}
        });
        let mut arguments = json!({
            "pair": [{"name": "a", "qty": null}, 1],
            "map": {"k": {"name": "b", "qty": null}},
            "either": {"name": "c", "qty": null},
            "top": null,
            "needed": null,
            "unknown": null
        });
        drop_optional_nulls(&mut arguments, &schema);
        assert_eq!(
            arguments,
            json!({
                "pair": [{"name": "a"}, 1],
                "map": {"k": {"name": "b"}},
                "either": {"name": "c"},
                "needed": null,
                "unknown": null
            })
        );
    }

    #[test]
    fn a_field_optional_in_one_variant_may_be_null_there() {
        let schema = json!({
            "type": "object",
            "properties": {"filter": {"oneOf": [
                {"type": "object", "properties": {"op": {"const": "eq"}, "case": {"type": "boolean"}}, "required": ["op"]},
                {"type": "object", "properties": {"op": {"const": "like"}, "case": {"type": "boolean"}}, "required": ["op", "case"]}
            ]}},
            "required": ["filter"]
        });
        let mut arguments = json!({"filter": {"op": "eq", "case": null}});
        drop_optional_nulls(&mut arguments, &schema);
        assert_eq!(arguments, json!({"filter": {"op": "eq"}}));
        // Required in every variant: kept, for the validator to refuse.
        let mut arguments = json!({"filter": {"op": null}});
        drop_optional_nulls(&mut arguments, &schema);
        assert_eq!(arguments, json!({"filter": {"op": null}}));
    }

    #[test]
    fn a_ref_cycle_ends() {
        let schema = json!({"$ref": "#", "properties": {"a": {"type": "integer"}}});
        let mut arguments = json!({"a": null});
        drop_optional_nulls(&mut arguments, &schema);
        assert_eq!(arguments, json!({}));
    }
}

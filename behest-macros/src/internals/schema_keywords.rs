//! The kinds of values JSON Schema's keywords take, and the draft's
//! meta-schema: the checks the macros run on spec files and `schema!`
//! literals when a crate builds. It needs nothing but serde_json and
//! jsonschema, so the test suite runs the same code on the
//! JSON-Schema-Test-Suite to show it agrees with registration.

use serde_json::Value;

/// The kinds of JSON values JSON Schema's keywords take, checked at every
/// depth: the mistakes a hand-edited file makes (a misspelt type, a
/// `required` that is a string, a negative length), each with its pointer.
/// [`meta_schema`] checks the rest, as registration does.
pub fn keywords(schema: &Value, at: &str, problems: &mut Vec<(String, String)>) {
    let Value::Object(object) = schema else {
        if !schema.is_boolean() {
            problems.push((
                pointer_or_root(at),
                format!("must be a schema (an object or a boolean), found {schema}"),
            ));
        }
        return;
    };
    const TYPES: [&str; 7] = [
        "string", "number", "integer", "boolean", "array", "object", "null",
    ];
    for (key, value) in object {
        let here = format!("{at}/{}", escape(key));
        let mut problem = |message: String| problems.push((here.clone(), message));
        match key.as_str() {
            "type" => {
                let names: Vec<&Value> = match value {
                    Value::Array(names) => names.iter().collect(),
                    other => vec![other],
                };
                for name in names {
                    match name.as_str() {
                        Some(name) if TYPES.contains(&name) => {}
                        _ => problem(format!(
                            "must name JSON types ({}), found {name}",
                            TYPES.join(", ")
                        )),
                    }
                }
            }
            "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas" => {
                match value.as_object() {
                    Some(map) => {
                        for (name, sub) in map {
                            keywords(sub, &format!("{here}/{}", escape(name)), problems);
                        }
                    }
                    None => problem(format!("must be an object of schemas, found {value}")),
                }
            }
            "required" => {
                let names = value
                    .as_array()
                    .filter(|names| names.iter().all(Value::is_string));
                match names {
                    Some(names) => {
                        let mut sorted: Vec<&str> =
                            names.iter().filter_map(Value::as_str).collect();
                        sorted.sort_unstable();
                        if sorted.windows(2).any(|pair| pair[0] == pair[1]) {
                            problem("must not list a name twice".to_owned());
                        }
                    }
                    None => problem(format!("must be an array of property names, found {value}")),
                }
            }
            "enum" if !value.is_array() => problem(format!("must be an array, found {value}")),
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => match value.as_array() {
                Some(items) if !items.is_empty() => {
                    for (index, sub) in items.iter().enumerate() {
                        keywords(sub, &format!("{here}/{index}"), problems);
                    }
                }
                _ => problem(format!(
                    "must be a non-empty array of schemas, found {value}"
                )),
            },
            "items"
            | "additionalProperties"
            | "not"
            | "contains"
            | "propertyNames"
            | "additionalItems"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "if"
            | "then"
            | "else" => match value {
                // Draft 7 tuples.
                Value::Array(items) if key == "items" => {
                    for (index, sub) in items.iter().enumerate() {
                        keywords(sub, &format!("{here}/{index}"), problems);
                    }
                }
                sub => keywords(sub, &here, problems),
            },
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" | "minContains" | "maxContains"
                // `1.0` is an integer too.
                if !value.as_f64().is_some_and(|n| n >= 0.0 && n.fract() == 0.0) =>
            {
                problem(format!("must be a non-negative integer, found {value}"));
            }
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf"
                if !value.is_number() && !value.is_boolean() =>
            {
                problem(format!("must be a number, found {value}"));
            }
            "pattern" | "format" | "$ref" | "$id" | "$schema" | "title" | "description"
                if !value.is_string() =>
            {
                problem(format!("must be a string, found {value}"));
            }
            "uniqueItems" if !value.is_boolean() => {
                problem(format!("must be a boolean, found {value}"));
            }
            _ => {}
        }
    }
}

/// A JSON Pointer token.
pub fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

pub fn pointer_or_root(at: &str) -> String {
    if at.is_empty() {
        "/".to_owned()
    } else {
        at.to_owned()
    }
}

/// `schema` checked against the meta-schema of the draft its `$schema`
/// names (2020-12 without one): the check registration makes.
pub fn meta_schema(schema: &Value) -> Result<(), (String, String)> {
    use jsonschema::Draft;

    let draft = match schema.get("$schema") {
        None => Draft::Draft202012,
        Some(Value::String(uri)) => match Draft::from_schema_uri(uri) {
            Draft::Unknown => {
                return Err((
                    "/$schema".to_owned(),
                    format!("names `{uri}`, not a draft behest knows (4, 6, 7, 2019-09, 2020-12)"),
                ))
            }
            draft => draft,
        },
        Some(other) => {
            return Err((
                "/$schema".to_owned(),
                format!("must be a URI string, found {other}"),
            ))
        }
    };
    let checked = match draft {
        Draft::Draft4 => jsonschema::draft4::meta::validate(schema),
        Draft::Draft6 => jsonschema::draft6::meta::validate(schema),
        Draft::Draft7 => jsonschema::draft7::meta::validate(schema),
        Draft::Draft201909 => jsonschema::draft201909::meta::validate(schema),
        _ => jsonschema::draft202012::meta::validate(schema),
    };
    checked.map_err(|error| {
        (
            error.instance_path().as_str().to_owned(),
            format!("does not conform to its draft's meta-schema: {error}"),
        )
    })
}

//! Tool specs kept in JSON files (`schema = "schemas/x.json"`): read when
//! the crate builds, checked as a JSON Schema, and checked against the
//! Rust struct that reads the arguments.

use std::path::PathBuf;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use serde_json::Value;
use syn::spanned::Spanned;
use syn::{Fields, ItemStruct, LitStr};

use crate::internals::case::unraw;
use crate::internals::ctxt::Ctxt;
use crate::internals::schema_keywords::{escape, keywords, meta_schema, pointer_or_root};

/// A spec file as the macro read it.
pub struct SpecFile {
    /// As written in the attribute, for messages.
    pub shown: String,
    /// Absolute, for `include_str!` (so the crate rebuilds when it changes).
    pub path: PathBuf,
    /// The arguments' schema: the file, or its `parameters` /
    /// `inputSchema` when the file is a whole tool spec.
    pub schema: Value,
    /// Where the schema sits in the file (`""` or `/parameters`).
    pub schema_pointer: String,
    /// The file's `name` and `description`, when it has them.
    pub name: Option<String>,
    pub description: Option<String>,
    /// The attribute's string, where file-level errors point.
    pub span: Span,
    /// Whether the schema itself is wrong: the fields are then not
    /// compared with it (each mistake is one error).
    pub invalid: bool,
    /// Arguments of a type defined elsewhere whose property lists its
    /// values: each value checked against the type's variants in a `const`
    /// item.
    pub enum_checks: Vec<EnumCheck>,
    /// The properties registration compares with the type's schema, each
    /// with its Rust type as written (`spec_conflict`).
    pub compared: Vec<(String, String)>,
}

/// One value of a property's `enum` against the enum type of its argument,
/// checked when the crate builds if the type declares its variants
/// (`#[behest::data]` on a unit-only enum), and at registration otherwise.
pub struct EnumCheck {
    ty: syn::Type,
    value: String,
    message: String,
}

/// The keys under which a whole tool spec keeps its arguments' schema.
const SCHEMA_KEYS: [&str; 3] = ["parameters", "inputSchema", "input_schema"];

/// Reads and checks the file `lit` names, relative to the crate's
/// `CARGO_MANIFEST_DIR`. Every problem goes to `cx`.
pub fn load(lit: &LitStr, cx: &mut Ctxt) -> Option<SpecFile> {
    let shown = lit.value();
    let span = lit.span();
    let base = std::env::var_os("CARGO_MANIFEST_DIR").map_or_else(PathBuf::new, PathBuf::from);
    let path = base.join(&shown);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => {
            cx.error_at(
                span,
                format!("cannot read the spec file `{shown}`: {error}; the path is relative to the crate's root (where its Cargo.toml is)"),
            );
            return None;
        }
    };
    let file: Value = match serde_json::from_str(&text) {
        Ok(file) => file,
        Err(error) => {
            cx.error_at(
                span,
                format!(
                    "`{shown}` is not valid JSON: {} at line {}, column {}",
                    without_position(&error.to_string()),
                    error.line(),
                    error.column()
                ),
            );
            return None;
        }
    };
    let key = SCHEMA_KEYS.iter().find(|key| file.get(**key).is_some());
    let (schema, schema_pointer) = match key {
        Some(key) => (file[*key].clone(), format!("/{key}")),
        None => (file.clone(), String::new()),
    };
    let mut text_field = |name: &str| -> Option<String> {
        let value = file.get(name)?;
        match value.as_str() {
            Some(text) if key.is_some() => Some(text.to_owned()),
            Some(_) => None,
            None => {
                cx.error_at(span, format!("`{shown}`: `/{name}` must be a string"));
                None
            }
        }
    };
    let name = text_field("name");
    let description = text_field("description");
    let mut spec = SpecFile {
        shown,
        path,
        schema,
        schema_pointer,
        name,
        description,
        span,
        invalid: false,
        enum_checks: Vec::new(),
        compared: Vec::new(),
    };
    spec.invalid = spec.check_schema(cx);
    Some(spec)
}

/// serde_json's message without its own "at line .. column .." tail.
fn without_position(message: &str) -> &str {
    message
        .rfind(" at line ")
        .map_or(message, |at| &message[..at])
}

impl SpecFile {
    /// See [`check_object_schema`].
    fn check_schema(&self, cx: &mut Ctxt) -> bool {
        let shown = format!("`{}`", self.shown);
        check_at(
            &self.schema,
            &self.schema_pointer,
            &shown,
            &|_| self.span,
            cx,
        )
    }

    /// `suffix` as a pointer into the file.
    pub fn pointer(&self, suffix: &str) -> String {
        let pointer = format!("{}{suffix}", self.schema_pointer);
        if pointer.is_empty() {
            "/".to_owned()
        } else {
            pointer
        }
    }

    /// Checks the struct's fields against the schema's properties.
    pub fn check_fields(&mut self, item: &ItemStruct, cx: &mut Ctxt) {
        let Fields::Named(fields) = &item.fields else {
            return;
        };
        let serde = SerdeAttrs::of(&item.attrs);
        if serde.unchecked {
            return;
        }
        let mut arguments = Vec::new();
        for field in &fields.named {
            let Some(ident) = &field.ident else { continue };
            let attrs = SerdeAttrs::of(&field.attrs);
            if attrs.skip {
                continue;
            }
            if attrs.unchecked {
                // A flattened field's properties are another type's.
                return;
            }
            let rust_name = unraw(ident);
            let wire = attrs
                .rename
                .clone()
                .unwrap_or_else(|| serde.rename_all.apply(&rust_name));
            let configured = is_configured(&field.attrs);
            arguments.push(Argument {
                ident,
                rust_name,
                wire,
                ty: &field.ty,
                defaulted: attrs.default || serde.default,
                configured,
                read_by_function: attrs.read_by_function,
            });
        }
        self.check_arguments(
            &arguments,
            "field",
            "`#[serde(rename = \"...\")]`",
            &item.ident,
            cx,
        );
    }

    /// Checks `arguments` (a struct's fields, a function's parameters,
    /// called `what`, renamed with `rename`) against the schema's
    /// properties; a property with no argument is an error on `owner`.
    pub fn check_arguments(
        &mut self,
        arguments: &[Argument<'_>],
        what: &str,
        rename: &str,
        owner: &syn::Ident,
        cx: &mut Ctxt,
    ) {
        if self.invalid {
            return;
        }
        let properties = self
            .schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let required: Vec<&str> = self
            .schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        // Properties an error on an argument already speaks for.
        let mut answered: Vec<&str> = Vec::new();
        for argument in arguments {
            let Argument {
                ident,
                rust_name,
                wire,
                ty,
                defaulted,
                configured,
                read_by_function,
            } = argument;
            let Some(property) = properties.get(wire) else {
                // Renamed away from a property the file has: one mistake,
                // one error, on the argument (not a second one for the
                // property it left without an argument).
                if wire != rust_name
                    && properties.contains_key(rust_name)
                    && !arguments.iter().any(|other| &other.wire == rust_name)
                {
                    cx.error_spanned_by(
                        ident,
                        format!(
                            "{what} `{rust_name}` is renamed to `{wire}` in JSON, but `{}` calls it `{rust_name}` (`{}`): drop the rename, or rename the property in the file to `{wire}`",
                            self.shown,
                            self.pointer(&format!("/properties/{}", escape(rust_name))),
                        ),
                    );
                    answered.push(rust_name.as_str());
                    continue;
                }
                let known: Vec<String> = properties.keys().map(|k| format!("`{k}`")).collect();
                cx.error_spanned_by(
                    ident,
                    format!(
                        "{what} `{rust_name}` (`{wire}` in JSON) is not a property of `{}` (`{}` has {}): add it to the file, or rename the {what} to a property with {rename}",
                        self.shown,
                        self.pointer("/properties"),
                        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
                    ),
                );
                continue;
            };
            let optional_type = option_inner(ty).is_some();
            let is_required = required.contains(&wire.as_str());
            if is_required && (optional_type || *defaulted) {
                let why = if optional_type {
                    format!("the {what} is an `Option`: make it `{}`", inner_text(ty))
                } else {
                    format!("the {what} has a default: drop it")
                };
                cx.error_spanned_by(
                    ty,
                    format!(
                        "`{wire}` is required by `{}` (`{}`), but {why}, or remove `{wire}` from `required` in the file",
                        self.shown,
                        self.pointer("/required")
                    ),
                );
            } else if !is_required && !optional_type && !*defaulted {
                cx.error_spanned_by(
                    ty,
                    format!(
                        "`{wire}` is optional in `{}` (not in `{}`), but the {what} is required: make it `Option<{}>`, give it a default, or list `{wire}` in `required`",
                        self.shown,
                        self.pointer("/required"),
                        quote::ToTokens::to_token_stream(ty)
                    ),
                );
            }
            // A function of its own reads the argument (`with = ..`): its
            // type says nothing of what the file should say.
            if *read_by_function {
                continue;
            }
            let inner = option_inner(ty).unwrap_or(ty);
            self.compared.push((wire.clone(), compact(ty)));
            let values = string_values(property);
            // Under `#[cfg]`, the type may not exist where the check is.
            if let (None, Some(values), false) = (json_type(inner), values, *configured) {
                if !mentions_self(inner) {
                    let inner_text = inner_text(ty);
                    for (index, value) in values {
                        let pointer =
                            self.pointer(&format!("/properties/{}/enum/{index}", escape(wire)));
                        self.enum_checks.push(EnumCheck {
                            ty: (*inner).clone(),
                            message: format!(
                                "`{wire}` may be {value:?} in `{}` (`{pointer}`), but no variant of `{inner_text}` reads it (after serde's renames): add the variant, or remove the value from the file",
                                self.shown,
                            ),
                            value,
                        });
                    }
                }
            }
            if let Some(expected) = json_type(inner) {
                let pointer = self.pointer(&format!("/properties/{}", escape(wire)));
                if let Some(problem) = type_agrees(property, expected) {
                    cx.error_spanned_by(
                        inner,
                        format!(
                            "`{wire}` is {problem} in `{}` (`{pointer}`), but the {what} is `{}`, which takes {}: change its type or the file",
                            self.shown,
                            quote::ToTokens::to_token_stream(inner),
                            article(expected)
                        ),
                    );
                }
            }
        }
        for name in properties.keys() {
            let has_argument = arguments.iter().any(|argument| &argument.wire == name);
            if !has_argument && !answered.contains(&name.as_str()) {
                cx.error_spanned_by(
                    owner,
                    format!(
                        "property `{name}` of `{}` (`{}`) has no {what} in `{owner}`: add a {what} for it, or remove it from the file",
                        self.shown,
                        self.pointer(&format!("/properties/{}", escape(name))),
                    ),
                );
            }
        }
    }
}

impl SpecFile {
    /// The `fields` argument of `spec_conflict`: each compared property
    /// with its Rust type as written.
    pub fn compared_fields(&self) -> TokenStream {
        let fields = self
            .compared
            .iter()
            .map(|(wire, type_text)| quote!((#wire, #type_text)));
        quote!(&[#(#fields),*])
    }

    /// The `const` items that compare the variants of each enum argument
    /// that declares them with its property's `enum`: a mismatch fails the
    /// build on the argument's type. `<T>::__BEHEST_WIRE_VARIANTS` is the
    /// enum's own constant when `#[behest::data]` gave it one, else
    /// `NoWireVariants`' `None` (and registration compares them instead).
    pub fn enum_check_items(&self, private: &crate::tokens::Tokens) -> TokenStream {
        self.enum_checks
            .iter()
            .map(|check| {
                let EnumCheck { ty, value, message } = check;
                let span = ty.span();
                quote_spanned! {span=>
                    const _: () = {
                        #[allow(unused_imports)]
                        use #private::NoWireVariants as _;
                        ::core::assert!(
                            #private::reads_value(<#ty>::__BEHEST_WIRE_VARIANTS, #value),
                            "{}",
                            #message
                        );
                    };
                }
            })
            .collect()
    }
}

/// The strings a property's `enum` lists with their index, when it lists
/// only strings (and `null`, which `required` is about).
fn string_values(property: &Value) -> Option<Vec<(usize, String)>> {
    property
        .get("enum")?
        .as_array()?
        .iter()
        .enumerate()
        .filter(|(_, value)| !value.is_null())
        .map(|(index, value)| Some((index, value.as_str()?.to_owned())))
        .collect()
}

/// Whether a type names `Self`, which a `const` item outside the impl
/// cannot.
fn mentions_self(ty: &syn::Type) -> bool {
    crate::tokens::mentions(quote!(#ty), "Self")
}

/// The wire names of a unit-only enum's variants, as serde reads them,
/// when its attributes say everything about them (`rename_all`, `rename`,
/// `skip`); `None` for any other enum, or attributes the macro does not
/// follow (`alias`, `other`, tagging, a split `rename_all`).
pub fn wire_variants(item: &syn::DeriveInput) -> Option<Vec<String>> {
    let syn::Data::Enum(data) = &item.data else {
        return None;
    };
    if !item.generics.params.is_empty()
        || has_schemars_rename(&item.attrs)
        || is_configured(&item.attrs)
        || data
            .variants
            .iter()
            .any(|variant| is_configured(&variant.attrs))
    {
        return None;
    }
    let serde = SerdeAttrs::of(&item.attrs);
    if serde.unchecked {
        return None;
    }
    let mut names = Vec::new();
    for variant in &data.variants {
        if !matches!(variant.fields, Fields::Unit) || has_schemars_rename(&variant.attrs) {
            return None;
        }
        let attrs = SerdeAttrs::of(&variant.attrs);
        if attrs.unchecked || attrs.other_names {
            return None;
        }
        if attrs.skip {
            continue;
        }
        let ident = unraw(&variant.ident);
        names.push(
            attrs
                .rename
                .unwrap_or_else(|| serde.rename_all.apply_to_variant(&ident)),
        );
    }
    Some(names)
}

/// Whether an item is under `#[cfg]` (or `#[cfg_attr]`, which may add
/// attributes the macro cannot see).
fn is_configured(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|attr| attr.path().is_ident("cfg") || attr.path().is_ident("cfg_attr"))
}

/// `#[schemars(rename ..)]`, which would make the schema's names differ
/// from serde's.
fn has_schemars_rename(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("schemars")
            && quote::ToTokens::to_token_stream(attr)
                .to_string()
                .contains("rename")
    })
}

/// A struct field or function parameter, as the file is checked against.
pub struct Argument<'a> {
    /// Where an error about it points.
    pub ident: &'a syn::Ident,
    pub rust_name: String,
    /// Its name in JSON.
    pub wire: String,
    pub ty: &'a syn::Type,
    /// Whether it has a default (so it may be left out).
    pub defaulted: bool,
    /// Whether it is under `#[cfg]`.
    pub configured: bool,
    /// Whether a function of its own reads it (`#[serde(with = ..)]`).
    pub read_by_function: bool,
}

/// The root must describe an object, and every keyword must have a value
/// of the kind JSON Schema gives it; `shown` names the schema in messages.
/// Whether it found a problem.
/// `span_of` tells where the value at a JSON pointer was written.
pub fn check_object_schema(
    schema: &Value,
    shown: &str,
    span_of: &dyn Fn(&str) -> Span,
    cx: &mut Ctxt,
) -> bool {
    check_at(schema, "", shown, span_of, cx)
}

fn check_at(
    schema: &Value,
    at: &str,
    shown: &str,
    span_of: &dyn Fn(&str) -> Span,
    cx: &mut Ctxt,
) -> bool {
    let mut invalid = true;
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => invalid = false,
        Some(other) => cx.error_at(
            span_of(&format!("{at}/type")),
            format!(
                "{shown}: the arguments' schema must describe an object (`\"type\": \"object\"` at `{}`), but its type is {other}",
                pointer_or_root(&format!("{at}/type"))
            ),
        ),
        None => cx.error_at(
            span_of(at),
            format!(
                "{shown}: the arguments' schema must describe an object: add `\"type\": \"object\"` at `{}`",
                pointer_or_root(at)
            ),
        ),
    }
    let mut problems = Vec::new();
    keywords(schema, at, &mut problems);
    if problems.is_empty() {
        // The pointed checks above explain the usual mistakes; the draft's
        // meta-schema (the one registration checks too) catches the rest.
        if let Err((pointer, problem)) = meta_schema(schema) {
            problems.push((format!("{at}{pointer}"), problem));
        }
    }
    invalid |= !problems.is_empty();
    for (pointer, problem) in problems {
        cx.error_at(
            span_of(&pointer),
            format!(
                "{shown} is not a valid JSON Schema: `{}` {problem}",
                pointer_or_root(&pointer)
            ),
        );
    }
    invalid
}

fn article(kind: &str) -> String {
    match kind {
        "integer" | "array" | "object" => format!("an {kind}"),
        other => format!("a {other}"),
    }
}

/// The JSON type a Rust type takes, when the macro can tell from its path.
fn json_type(ty: &syn::Type) -> Option<&'static str> {
    match ty {
        syn::Type::Reference(reference) => json_type(&reference.elem),
        syn::Type::Array(_) | syn::Type::Slice(_) => Some("array"),
        syn::Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?;
            Some(match last.ident.to_string().as_str() {
                "String" | "str" | "char" | "PathBuf" => "string",
                "bool" => "boolean",
                "i8" | "i16" | "i32" | "i64" | "i128" | "isize" | "u8" | "u16" | "u32" | "u64"
                | "u128" | "usize" => "integer",
                "f32" | "f64" => "number",
                "Vec" | "VecDeque" | "HashSet" | "BTreeSet" => "array",
                "HashMap" | "BTreeMap" => "object",
                _ => return None,
            })
        }
        _ => None,
    }
}

/// Why `property` does not take values of JSON type `expected`, if it does
/// not: its `type` names another (an integer field reads a `number`
/// property's `1.5` wrongly; a `number` field reads an `integer` one fine).
fn type_agrees(property: &Value, expected: &str) -> Option<String> {
    let types: Vec<&str> = match property.get("type") {
        Some(Value::String(kind)) => vec![kind.as_str()],
        Some(Value::Array(kinds)) => kinds.iter().filter_map(Value::as_str).collect(),
        _ => return None,
    };
    // Every type the file allows must be readable (`null` aside: whether
    // an argument may be null or left out is `required`'s business), as
    // registration compares them.
    let fits = types
        .iter()
        .filter(|kind| **kind != "null")
        .all(|kind| *kind == expected || (expected == "number" && *kind == "integer"));
    (!fits).then(|| {
        let listed: Vec<String> = types.iter().map(|kind| format!("`{kind}`")).collect();
        format!("of type {}", listed.join(" or "))
    })
}

/// `T` of `Option<T>`.
fn option_inner(ty: &syn::Type) -> Option<&syn::Type> {
    let syn::Type::Path(path) = ty else {
        return None;
    };
    let last = path.path.segments.last()?;
    if last.ident != "Option" {
        return None;
    }
    let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return None;
    };
    match arguments.args.first()? {
        syn::GenericArgument::Type(inner) => Some(inner),
        _ => None,
    }
}

/// `T` of `Option<T>` (or the type itself) as code, without spaces.
fn inner_text(ty: &syn::Type) -> String {
    compact(option_inner(ty).unwrap_or(ty))
}

/// A type as code, without spaces: `Vec<u32>`.
fn compact(ty: &syn::Type) -> String {
    quote::ToTokens::to_token_stream(ty)
        .to_string()
        .replace(' ', "")
}

/// What serde attributes say about names and presence.
#[derive(Default)]
struct SerdeAttrs {
    rename: Option<String>,
    rename_all: RenameAll,
    skip: bool,
    default: bool,
    /// `flatten` (or a struct-level attribute the macro cannot follow):
    /// properties are checked at registration instead.
    unchecked: bool,
    /// `alias` or `other`: more names read than the schema shows.
    other_names: bool,
    /// `with` or `deserialize_with`: a function reads the value.
    read_by_function: bool,
}

impl SerdeAttrs {
    fn of(attrs: &[syn::Attribute]) -> Self {
        let mut found = Self::default();
        for attr in attrs.iter().filter(|attr| attr.path().is_ident("serde")) {
            let _ = attr.parse_nested_meta(|meta| {
                let key = meta
                    .path
                    .get_ident()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                match key.as_str() {
                    "rename" => {
                        if let Ok(value) = meta.value().and_then(|v| v.parse::<LitStr>()) {
                            found.rename = Some(value.value());
                        } else {
                            found.unchecked = true;
                        }
                    }
                    "rename_all" => match meta.value().and_then(|v| v.parse::<LitStr>()) {
                        Ok(value) => match RenameAll::parse(&value.value()) {
                            Some(rule) => found.rename_all = rule,
                            None => found.unchecked = true,
                        },
                        Err(_) => found.unchecked = true,
                    },
                    "skip" | "skip_deserializing" => found.skip = true,
                    "alias" | "other" => found.other_names = true,
                    "with" | "deserialize_with" => found.read_by_function = true,
                    "default" => found.default = true,
                    "flatten" | "tag" | "untagged" | "transparent" | "from" | "try_from" => {
                        found.unchecked = true;
                    }
                    _ => {}
                }
                // Skip whatever value the key has.
                if meta.input.peek(syn::Token![=]) {
                    let _ = meta.value().and_then(|v| v.parse::<syn::Expr>());
                } else if meta.input.peek(syn::token::Paren) {
                    let _ = meta.parse_nested_meta(|_| Ok(()));
                }
                Ok(())
            });
        }
        found
    }
}

/// serde's `rename_all` rules, applied to a snake_case field name.
#[derive(Default, Clone, Copy)]
enum RenameAll {
    #[default]
    None,
    Lower,
    Upper,
    Pascal,
    Camel,
    Snake,
    ScreamingSnake,
    Kebab,
    ScreamingKebab,
}

impl RenameAll {
    fn parse(rule: &str) -> Option<Self> {
        Some(match rule {
            "lowercase" => Self::Lower,
            "UPPERCASE" => Self::Upper,
            "PascalCase" => Self::Pascal,
            "camelCase" => Self::Camel,
            "snake_case" => Self::Snake,
            "SCREAMING_SNAKE_CASE" => Self::ScreamingSnake,
            "kebab-case" => Self::Kebab,
            "SCREAMING-KEBAB-CASE" => Self::ScreamingKebab,
            _ => return None,
        })
    }

    /// The rule applied to a PascalCase variant name, as serde does.
    fn apply_to_variant(self, variant: &str) -> String {
        let snake = || {
            let mut snake = String::new();
            for (i, ch) in variant.char_indices() {
                if i > 0 && ch.is_uppercase() {
                    snake.push('_');
                }
                snake.push(ch.to_ascii_lowercase());
            }
            snake
        };
        match self {
            Self::None | Self::Pascal => variant.to_owned(),
            Self::Lower => variant.to_ascii_lowercase(),
            Self::Upper => variant.to_ascii_uppercase(),
            Self::Camel => {
                let mut chars = variant.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_ascii_lowercase().to_string() + chars.as_str()
                })
            }
            Self::Snake => snake(),
            Self::ScreamingSnake => snake().to_ascii_uppercase(),
            Self::Kebab => snake().replace('_', "-"),
            Self::ScreamingKebab => snake().to_ascii_uppercase().replace('_', "-"),
        }
    }

    fn apply(self, field: &str) -> String {
        match self {
            Self::None | Self::Snake => field.to_owned(),
            Self::Lower => field.to_ascii_lowercase(),
            Self::Upper | Self::ScreamingSnake => field.to_ascii_uppercase(),
            Self::Pascal => crate::internals::case::to_upper_camel(field),
            Self::Camel => {
                let pascal = crate::internals::case::to_upper_camel(field);
                let mut chars = pascal.chars();
                chars.next().map_or_else(String::new, |first| {
                    first.to_lowercase().chain(chars).collect()
                })
            }
            Self::Kebab => field.replace('_', "-"),
            Self::ScreamingKebab => field.replace('_', "-").to_ascii_uppercase(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variants(item: &str) -> Option<Vec<String>> {
        wire_variants(&syn::parse_str(item).unwrap())
    }

    #[test]
    fn variant_names_follow_serdes_rules() {
        // serde puts `_` before every capital of a variant, acronyms too.
        let cases = [
            ("snake_case", "h_t_t_p_server"),
            ("SCREAMING_SNAKE_CASE", "H_T_T_P_SERVER"),
            ("kebab-case", "h-t-t-p-server"),
            ("SCREAMING-KEBAB-CASE", "H-T-T-P-SERVER"),
            ("camelCase", "hTTPServer"),
            ("PascalCase", "HTTPServer"),
            ("lowercase", "httpserver"),
            ("UPPERCASE", "HTTPSERVER"),
        ];
        for (rule, expected) in cases {
            let rule = RenameAll::parse(rule).unwrap();
            assert_eq!(rule.apply_to_variant("HTTPServer"), expected);
        }
    }

    #[test]
    fn unit_enums_declare_their_wire_names() {
        let names = variants(
            "#[serde(rename_all = \"snake_case\")] enum Mode { FastLane, #[serde(rename = \"s\")] Slow, #[serde(skip)] Hidden }",
        );
        assert_eq!(names, Some(vec!["fast_lane".to_owned(), "s".to_owned()]));
    }

    #[test]
    fn enums_whose_names_the_macro_cannot_follow_declare_none() {
        for item in [
            "enum Shape { Dot, Line(u32) }",
            "#[serde(tag = \"kind\")] enum Mode { A }",
            "#[serde(untagged)] enum Mode { A }",
            "enum Mode { #[serde(alias = \"b\")] A }",
            "enum Mode { A, #[serde(other)] Unknown }",
            "#[serde(rename_all(deserialize = \"lowercase\"))] enum Mode { A }",
            "enum Mode<T> { A, B(T) }",
            "enum Mode { A, #[cfg(unix)] B }",
            "enum Mode { #[cfg_attr(unix, serde(rename = \"b\"))] A }",
            "struct Mode { a: u32 }",
        ] {
            assert_eq!(variants(item), None, "{item}");
        }
    }
}

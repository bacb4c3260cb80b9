//! The set of tools a runtime serves: checked at registration, in order.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::tool::{Tool, ToolSpec};
use crate::validation::{required_names, ArgumentValidator, SchemaError};

/// The longest tool name every provider accepts.
pub const MAX_NAME_LEN: usize = 64;

/// Why a tool could not be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// A tool of that name is registered already; the first one stays.
    #[error("a tool named `{name}` is already registered (first: {existing:?}; second: {rejected:?}); the second was not registered: rename one of them")]
    DuplicateName {
        /// The name both tools have.
        name: String,
        /// Summary of the registered tool's description.
        existing: String,
        /// Summary of the refused tool's description.
        rejected: String,
    },

    /// The name breaks the rule every provider accepts.
    #[error("invalid tool name `{name}`: {reason}")]
    InvalidName {
        /// The refused name.
        name: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The input schema is not a valid JSON Schema of its draft (its
    /// `$schema`, or 2020-12).
    #[error("the input schema of tool `{name}` is invalid at `{}`: {}", error.path, error.message)]
    InvalidSchema {
        /// The tool.
        name: String,
        /// What is wrong with the schema.
        error: SchemaError,
    },

    /// The tool's spec file and the Rust type that reads its arguments
    /// disagree where the macro could not tell when the crate was built:
    /// an enum's values, or the JSON type of a type defined elsewhere.
    #[error("the spec file of tool `{name}` does not match the Rust type that reads its arguments: {message}")]
    SpecMismatch {
        /// The tool.
        name: String,
        /// Each disagreement, with the file, the JSON pointer and the fix.
        message: String,
    },

    /// The input schema does not describe an object.
    #[error("the input schema of tool `{name}` must describe an object (`\"type\": \"object\"` at the root), but {found}")]
    SchemaRootNotObject {
        /// The tool.
        name: String,
        /// What the root is instead.
        found: String,
    },
}

/// A registered tool with everything the runtime needs per call, computed
/// once at registration.
#[derive(Clone)]
pub(crate) struct Entry {
    /// The registered name, shared with the calls prepared for it.
    pub name: Arc<str>,
    pub tool: Arc<dyn Tool>,
    pub spec: ToolSpec,
    pub validator: ArgumentValidator,
    pub required: Vec<String>,
    pub timeout: Option<Duration>,
    pub reveals_panics: bool,
    pub strict: bool,
    pub external: bool,
    pub needs_approval: bool,
    /// [`Tool::keeps_checkpoints`].
    pub keeps_checkpoints: bool,
    /// The tool parses the model's text itself ([`Tool::__text_route`]):
    /// how deep its arguments nest, and whether they hold floats.
    pub text_route: Option<crate::tool::PlainArguments>,
}

/// The tools a runtime serves, in registration order.
///
/// Registration is strict: a duplicate name, a name outside
/// `^[a-zA-Z0-9_-]{1,64}$`, an input schema that is not valid JSON Schema
/// (2020-12, or the draft its `$schema` names) or whose root is not an object is a [`RegistryError`], and the
/// registry is left as it was. Each tool's validator is compiled here, once.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    entries: Vec<Entry>,
    index: HashMap<String, usize, BuildHasherDefault<NameHasher>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers `tool` under `name`, which is also the name in its spec.
    pub fn register(
        &mut self,
        name: impl Into<String>,
        tool: Arc<dyn Tool>,
    ) -> Result<&mut Self, RegistryError> {
        let name = name.into();
        check_name(&name)?;
        let mut spec = tool.spec();
        spec.name.clone_from(&name);
        if let Some(&existing) = self.index.get(&name) {
            return Err(RegistryError::DuplicateName {
                name,
                existing: summary(&self.entries[existing].spec.description),
                rejected: summary(&spec.description),
            });
        }
        check_root(&name, &spec.parameters)?;
        if let Some(message) = tool.__spec_conflict() {
            return Err(RegistryError::SpecMismatch { name, message });
        }
        let validator = ArgumentValidator::compile(&spec.parameters).map_err(|error| {
            RegistryError::InvalidSchema {
                name: name.clone(),
                error,
            }
        })?;
        let entry = Entry {
            name: Arc::from(name.as_str()),
            required: required_names(&spec.parameters),
            timeout: tool.timeout(),
            reveals_panics: tool.reveals_panics(),
            strict: tool.strict(),
            external: tool.is_external(),
            needs_approval: tool.needs_approval(),
            keeps_checkpoints: tool.keeps_checkpoints(),
            text_route: tool.__text_route(),
            tool,
            spec,
            validator,
        };
        self.index.insert(name, self.entries.len());
        self.entries.push(entry);
        Ok(self)
    }

    /// Registers `tool` under its own [`name`](Tool::name).
    pub fn register_tool(&mut self, tool: Arc<dyn Tool>) -> Result<&mut Self, RegistryError> {
        let name = tool.name().to_owned();
        self.register(name, tool)
    }

    /// Registers `tool` under its own name, builder style.
    pub fn with(mut self, tool: impl Tool) -> Result<Self, RegistryError> {
        self.register_tool(Arc::new(tool))?;
        Ok(self)
    }

    /// Registers every tool of `tools` under its own name, stopping at the
    /// first error (the tools before it stay registered).
    pub fn register_all(
        &mut self,
        tools: impl IntoIterator<Item = Arc<dyn Tool>>,
    ) -> Result<&mut Self, RegistryError> {
        for tool in tools {
            self.register_tool(tool)?;
        }
        Ok(self)
    }

    /// Whether the tool registered under `name` asks for strict mode.
    pub fn is_strict(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|entry| entry.strict)
    }

    /// The specs of all tools, in registration order.
    pub fn specs(&self) -> impl ExactSizeIterator<Item = &ToolSpec> {
        self.entries.iter().map(|entry| &entry.spec)
    }

    /// The names of all tools, in registration order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.entries.iter().map(|entry| entry.spec.name.as_str())
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.entry(name).map(|entry| &entry.tool)
    }

    /// The spec of the tool registered under `name`.
    pub fn spec(&self, name: &str) -> Option<&ToolSpec> {
        self.entry(name).map(|entry| &entry.spec)
    }

    /// The compiled validator of the tool registered under `name`.
    pub fn validator(&self, name: &str) -> Option<&ArgumentValidator> {
        self.entry(name).map(|entry| &entry.validator)
    }

    /// Whether a tool is registered under `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Overrides the timeout of the tool registered under `name`, if any.
    pub(crate) fn set_timeout(&mut self, name: &str, timeout: Duration) {
        if let Some(&index) = self.index.get(name) {
            self.entries[index].timeout = Some(timeout);
        }
    }

    pub(crate) fn entry(&self, name: &str) -> Option<&Entry> {
        self.index.get(name).map(|&index| &self.entries[index])
    }

    #[inline]
    pub(crate) fn index_of(&self, name: &str) -> Option<usize> {
        self.index.get(name).copied()
    }

    pub(crate) fn entry_at(&self, index: usize) -> &Entry {
        &self.entries[index]
    }

    /// Whether the tool registered under `name` runs outside this process
    /// ([`Tool::is_external`]).
    pub fn is_external(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|entry| entry.external)
    }

    /// Whether the tool registered under `name` asks for approval before
    /// each call ([`Tool::needs_approval`]).
    pub fn needs_approval(&self, name: &str) -> bool {
        self.entry(name).is_some_and(|entry| entry.needs_approval)
    }

    /// Whether the tool registered under `name` keeps checkpoints
    /// ([`Tool::keeps_checkpoints`]).
    pub fn keeps_checkpoints(&self, name: &str) -> bool {
        self.entry(name)
            .is_some_and(|entry| entry.keeps_checkpoints)
    }
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.names().collect::<Vec<_>>())
            .finish()
    }
}

/// Checks `name` against `^[a-zA-Z0-9_-]{1,64}$`.
pub fn check_name(name: &str) -> Result<(), RegistryError> {
    let invalid = |reason: String| RegistryError::InvalidName {
        name: name.to_owned(),
        reason,
    };
    if name.is_empty() {
        return Err(invalid("a tool name cannot be empty".to_owned()));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(invalid(format!(
            "{bad:?} is not allowed; use ASCII letters, digits, `_` and `-` only"
        )));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(format!(
            "it is {} characters long; the limit is {MAX_NAME_LEN}",
            name.len()
        )));
    }
    Ok(())
}

fn check_root(name: &str, schema: &Value) -> Result<(), RegistryError> {
    let found = match schema {
        Value::Object(map) => match map.get("type") {
            Some(Value::String(kind)) if kind == "object" => return Ok(()),
            Some(other) => format!("its `type` is {other}"),
            None => "it has no `type`".to_owned(),
        },
        other => format!("it is {other}"),
    };
    Err(RegistryError::SchemaRootNotObject {
        name: name.to_owned(),
        found,
    })
}

/// The first line of a description, shortened, for messages.
fn summary(description: &str) -> String {
    let line = description.lines().next().unwrap_or_default().trim();
    let mut short: String = line.chars().take(60).collect();
    if short.len() < line.len() {
        short.push('…');
    }
    short
}

/// A hash of tool names, eight bytes at a time: every call looks its tool
/// up, and a byte-at-a-time hash (FNV) is a chain of one multiply per byte.
/// Names are short and chosen by the programmer, so the flooding that
/// SipHash guards against cannot happen here (the model's names are only
/// looked up, never inserted).
#[derive(Default)]
struct NameHasher(u64);

impl NameHasher {
    /// Mixes one word in: a multiply whose high half is folded onto its
    /// low half, so that every input bit reaches both the low bits (the
    /// table's bucket) and the high ones (its tag).
    fn mix(&mut self, word: u64) {
        const SEED: u64 = 0x9e37_79b9_7f4a_7c15;
        let product = u128::from(self.0 ^ word) * u128::from(SEED);
        self.0 = (product as u64) ^ ((product >> 64) as u64);
    }
}

impl Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buffer = [0; 8];
            buffer.copy_from_slice(word);
            self.mix(u64::from_le_bytes(buffer));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            // A tail has at most seven bytes: the eighth says how many, with
            // its high bit set, which no byte of a name's (ASCII) words has.
            let mut buffer = [0; 8];
            buffer[..rest.len()].copy_from_slice(rest);
            buffer[7] = 0x80 | rest.len() as u8;
            self.mix(u64::from_le_bytes(buffer));
        }
    }

    fn write_u8(&mut self, byte: u8) {
        // `str` ends its bytes with `0xff`, written here.
        self.mix(u64::from(byte) | 1 << 63);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    use super::NameHasher;

    /// Names that differ in one byte, anywhere in a word, land apart in
    /// both the low bits (the bucket) and the high ones (the tag).
    #[test]
    fn similar_names_hash_apart_in_low_and_high_bits() {
        let hasher = std::hash::BuildHasherDefault::<NameHasher>::default();
        let names: Vec<String> = (0..4096)
            .map(|i| format!("filler_{i}"))
            .chain(
                [
                    "a",
                    "a\0",
                    "abcdefgh",
                    "abcdefgh\0",
                    "abcdefghi",
                    "abcdefg",
                    "abcdefg8",
                ]
                .map(String::from),
            )
            .collect();
        let hashes: Vec<u64> = names.iter().map(|name| hasher.hash_one(name)).collect();
        let all: HashSet<u64> = hashes.iter().copied().collect();
        assert_eq!(all.len(), names.len(), "two names share a hash");
        let low: HashSet<u64> = hashes.iter().map(|hash| hash & 0xfff).collect();
        let high: HashSet<u64> = hashes.iter().map(|hash| hash >> 57).collect();
        // 4 103 names in 4 096 buckets: a good hash fills most of them.
        assert!(low.len() > 2_400, "{} buckets of 4 096 used", low.len());
        assert_eq!(high.len(), 128, "every tag used");
    }
}

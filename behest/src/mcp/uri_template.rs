//! URI templates (RFC 6570) as MCP resource templates use them: a URI with
//! variables (`file:///{path}`, `test://template/{id}/data`), matched
//! against the URIs clients read to find the variables' values.
//!
//! Two kinds of expression are taken: `{name}`, simple expansion, whose
//! value in the URI holds no `/`, `?` or `#` (they would be
//! percent-encoded) and is percent-decoded when matched, so that the value
//! itself may hold any of them (`%2F` is `/`: check a value before you use
//! it as a path); and `{+name}`, reserved expansion, whose value may hold
//! `/` and is taken as it stands. Other operators (`#`,
//! `.`, `/`, `;`, `?`, `&`), lists and modifiers are refused, as are two
//! expressions with nothing between them: a URI could not tell where one
//! ends.

use std::collections::HashMap;

/// The longest URI [`UriTemplate::matches`] reads: matching costs steps in
/// the square of the length, and no resource URI needs more.
pub const MAX_URI_BYTES: usize = 2 * 1024;

/// A URI template whose variables a URI can be matched against.
///
/// ```
/// use behest::mcp::UriTemplate;
///
/// let template = UriTemplate::parse("test://template/{id}/data").unwrap();
/// let found = template.matches("test://template/12%203/data").unwrap();
/// assert_eq!(found["id"], "12 3");
/// assert!(template.matches("test://template/1/2/data").is_none());
/// assert_eq!(template.variables().collect::<Vec<_>>(), ["id"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    pieces: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Variable { name: String, reserved: bool },
}

/// Why a text is not a URI template this crate matches.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{template}` is not a URI template that can be matched: {reason}")]
pub struct UriTemplateError {
    /// The text.
    pub template: String,
    /// What is wrong with it.
    pub reason: String,
}

impl UriTemplate {
    /// Parses `text`.
    ///
    /// # Errors
    /// An unclosed or empty expression, an operator other than `+`, a
    /// variable name of other than letters, digits, `_` and `.`, a
    /// variable named twice, two expressions side by side, or a template
    /// with no variable (a fixed URI is a resource, not a template).
    pub fn parse(text: &str) -> Result<Self, UriTemplateError> {
        check(text).map_err(|fault| UriTemplateError {
            template: text.to_owned(),
            reason: format!("{} (`{}`)", fault.what, &text[fault.at..fault.end]),
        })?;
        // Checked: every `{` is closed, and nothing else needs saying.
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                pieces.push(Piece::Literal(rest[..open].to_owned()));
            }
            let close = open + rest[open..].find('}').unwrap_or(rest.len() - open);
            let expression = &rest[open + 1..close];
            let (reserved, name) = match expression.strip_prefix('+') {
                Some(name) => (true, name),
                None => (false, expression),
            };
            pieces.push(Piece::Variable {
                name: name.to_owned(),
                reserved,
            });
            rest = rest.get(close + 1..).unwrap_or("");
        }
        if !rest.is_empty() {
            pieces.push(Piece::Literal(rest.to_owned()));
        }
        Ok(Self {
            text: text.to_owned(),
            pieces,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its variables' names, in order.
    pub fn variables(&self) -> impl Iterator<Item = &str> {
        self.pieces.iter().filter_map(|piece| match piece {
            Piece::Variable { name, .. } => Some(name.as_str()),
            Piece::Literal(_) => None,
        })
    }

    /// The values of its variables in `uri`, if `uri` is one of the URIs
    /// it makes; the first way to read it, each variable as short as it
    /// can be. A URI longer than [`MAX_URI_BYTES`] matches nothing.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        if uri.len() > MAX_URI_BYTES {
            return None;
        }
        let mut found = HashMap::new();
        match_from(&self.pieces, uri, &mut found).then_some(found)
    }
}

impl std::fmt::Display for UriTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::str::FromStr for UriTemplate {
    type Err = UriTemplateError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Self::parse(text)
    }
}

/// What is wrong with a URI template: what, and the bytes it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    pub what: &'static str,
    pub at: usize,
    pub end: usize,
}

impl Fault {
    const fn of(what: &'static str, at: usize, end: usize) -> Self {
        Self { what, at, end }
    }
}

/// Checks `text` as [`UriTemplate::parse`] takes it: the one statement of
/// the rules, also run when a crate that names a template in
/// `#[resource]` builds (`const`).
pub(crate) const fn check(text: &str) -> Result<(), Fault> {
    let bytes = text.as_bytes();
    let mut at = 0;
    let mut variables = 0;
    // Where the last expression ended, to tell two side by side.
    let mut last_end = usize::MAX;
    while at < bytes.len() {
        match bytes[at] {
            b'}' => {
                return Err(Fault {
                    what: "a `}` closes nothing",
                    at,
                    end: at + 1,
                })
            }
            b'{' => {
                let mut close = at + 1;
                while close < bytes.len() && bytes[close] != b'}' {
                    close += 1;
                }
                if close == bytes.len() {
                    return Err(Fault {
                        what: "a `{` is not closed",
                        at,
                        end: bytes.len(),
                    });
                }
                if last_end == at {
                    return Err(Fault::of(
                        "an expression follows another with nothing between them",
                        at,
                        close + 1,
                    ));
                }
                let mut start = at + 1;
                if start < close && bytes[start] == b'+' {
                    start += 1;
                }
                if start == close {
                    return Err(Fault::of("an expression names no variable", at, close + 1));
                }
                if is_operator(bytes[start]) {
                    return Err(Fault::of(
                        "the operator is not taken here; use `{name}` or `{+name}`",
                        at,
                        close + 1,
                    ));
                }
                let mut name = start;
                while name < close {
                    let c = bytes[name];
                    if !(c.is_ascii_alphanumeric() || c == b'_' || c == b'.') {
                        return Err(Fault::of("not a variable name: letters, digits, `_` and `.` only, one variable an expression", at, close + 1));
                    }
                    name += 1;
                }
                if named_before(bytes, start, close) {
                    return Err(Fault::of("a variable is named twice", at, close + 1));
                }
                variables += 1;
                at = close + 1;
                last_end = at;
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    if variables == 0 {
        return Err(Fault {
            what: "it has no variable: a fixed URI is a resource of its own",
            at: 0,
            end: bytes.len(),
        });
    }
    Ok(())
}

/// Whether `c` starts an expression of an RFC 6570 operator other than `+`.
const fn is_operator(c: u8) -> bool {
    matches!(
        c,
        b'#' | b'.' | b'/' | b';' | b'?' | b'&' | b'=' | b',' | b'!' | b'@' | b'|'
    )
}

/// Whether the variable `bytes[start..end]` is named by an expression
/// before `start`.
const fn named_before(bytes: &[u8], start: usize, end: usize) -> bool {
    let mut at = 0;
    while at < start {
        if bytes[at] == b'{' {
            let mut from = at + 1;
            if bytes[from] == b'+' {
                from += 1;
            }
            let mut same = true;
            let mut k = 0;
            while same && from + k < start && start + k < end {
                same = bytes[from + k] == bytes[start + k];
                k += 1;
            }
            if same && start + k == end && bytes[from + k] == b'}' {
                return true;
            }
        }
        at += 1;
    }
    false
}

/// Whether `uri` is what `pieces` make, with the variables' values put in
/// `found`. Each (piece, place) that failed is remembered, so a hostile URI
/// costs at most pieces × length² steps, not one per way to split it.
fn match_from(pieces: &[Piece], uri: &str, found: &mut HashMap<String, String>) -> bool {
    let mut failed = std::collections::HashSet::new();
    match_at(pieces, 0, uri, 0, found, &mut failed)
}

fn match_at(
    pieces: &[Piece],
    index: usize,
    uri: &str,
    at: usize,
    found: &mut HashMap<String, String>,
    failed: &mut std::collections::HashSet<(usize, usize)>,
) -> bool {
    let Some(piece) = pieces.get(index) else {
        return at == uri.len();
    };
    if failed.contains(&(index, at)) {
        return false;
    }
    let rest = &uri[at..];
    let matched = match piece {
        Piece::Literal(literal) => {
            rest.starts_with(literal.as_str())
                && match_at(pieces, index + 1, uri, at + literal.len(), found, failed)
        }
        Piece::Variable { name, reserved } => {
            // How far the value may reach: a simple one stops at the first
            // character its expansion would have encoded.
            let reach = if *reserved {
                rest.len()
            } else {
                rest.find(['/', '?', '#']).unwrap_or(rest.len())
            };
            // Where the value may end: where what follows it begins (the
            // next literal; a variable is never followed by another), or
            // the end. Shortest first; never empty.
            let next = match pieces.get(index + 1) {
                Some(Piece::Literal(literal)) => Some(literal.as_str()),
                _ => None,
            };
            let mut ends: Vec<usize> = match next {
                Some(literal) => rest[..reach]
                    .char_indices()
                    .map(|(end, c)| end + c.len_utf8())
                    .filter(|end| rest[*end..].starts_with(literal))
                    .collect(),
                None => vec![reach],
            };
            ends.retain(|end| *end > 0);
            let mut matched = false;
            for end in ends {
                let value = &rest[..end];
                let value = if *reserved {
                    Some(value.to_owned())
                } else {
                    percent_decoded(value)
                };
                let Some(value) = value else { continue };
                if match_at(pieces, index + 1, uri, at + end, found, failed) {
                    found.insert(name.clone(), value);
                    matched = true;
                    break;
                }
            }
            matched
        }
    };
    if !matched {
        failed.insert((index, at));
    }
    matched
}

/// `text` with its `%XX` escapes decoded; `None` when one is not an
/// escape or the bytes are not UTF-8.
fn percent_decoded(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            // Two hex digits, not a sign `from_str_radix` would take.
            if !hex.bytes().all(|byte| byte.is_ascii_hexdigit()) {
                return None;
            }
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            decoded.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_are_found_where_the_template_puts_them() {
        let template = UriTemplate::parse("file:///{+path}").unwrap();
        assert_eq!(
            template.matches("file:///a/b/c.txt").unwrap()["path"],
            "a/b/c.txt"
        );
        let template = UriTemplate::parse("users://{user}/posts/{post}").unwrap();
        let found = template.matches("users://ann/posts/7").unwrap();
        assert_eq!(
            (found["user"].as_str(), found["post"].as_str()),
            ("ann", "7")
        );
        assert!(template.matches("users://ann/posts/").is_none());
        assert!(template.matches("users://ann/posts/7/more").is_none());
        assert!(template.matches("users://ann/comments/7").is_none());
        // A simple value is decoded; a bad escape matches nothing.
        let template = UriTemplate::parse("q://{term}").unwrap();
        assert_eq!(template.matches("q://a%2Fb").unwrap()["term"], "a/b");
        assert!(template.matches("q://a%zz").is_none());
        assert!(template.matches("q://a%+A").is_none());
    }

    /// A URI made to split many ways costs steps, not time past bounds;
    /// one past the longest read matches nothing.
    #[test]
    fn a_hostile_uri_is_matched_in_bounded_steps() {
        let template = UriTemplate::parse("x://{name}.{ext}/").unwrap();
        let uri = format!("x://{}/", ".".repeat(MAX_URI_BYTES));
        assert!(template.matches(&uri).is_none());
        let template = UriTemplate::parse("x://{+a}a{+b}a{+c}a{+d}a{+e}b").unwrap();
        let uri = format!("x://{}", "a".repeat(2_000));
        assert!(template.matches(&uri).is_none());
        let uri = format!("x://{}b", "a".repeat(2_000));
        let found = template.matches(&uri).unwrap();
        assert_eq!(found["a"], "a");
        assert_eq!(found["e"].len(), 2_000 - 8);
        let uri = format!("x://{}b", "a".repeat(MAX_URI_BYTES));
        assert!(template.matches(&uri).is_none());
    }

    #[test]
    fn what_cannot_be_matched_is_refused_with_its_reason() {
        for (text, says) in [
            ("a://{x}{y}", "nothing between them (`{y}`)"),
            (
                "a://{?x}",
                "operator is not taken here; use `{name}` or `{+name}` (`{?x}`)",
            ),
            ("a://{x", "not closed (`{x`)"),
            ("a://x}", "closes nothing"),
            ("a://{}", "names no variable"),
            ("a://{+}", "names no variable"),
            ("a://{x y}", "not a variable name"),
            ("a://{x}/{x}", "named twice (`{x}`)"),
            ("a://{xy}/{x}", "no variable"),
            ("a://fixed", "no variable"),
        ] {
            if text == "a://{xy}/{x}" {
                // A name that starts another is not the same name.
                assert!(UriTemplate::parse(text).is_ok());
                continue;
            }
            let error = UriTemplate::parse(text).unwrap_err();
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }
}

//! Name conversions between Rust items and tool names.

/// `get_weather` -> `GetWeather`.
pub fn to_upper_camel(snake: &str) -> String {
    snake
        .split('_')
        .filter(|part| !part.is_empty())
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect()
}

/// `WebSearch` -> `web_search`, `HTTPServer` -> `http_server`.
pub fn to_snake(camel: &str) -> String {
    let chars: Vec<char> = camel.chars().collect();
    let mut out = String::new();
    for (i, &c) in chars.iter().enumerate() {
        if c.is_uppercase() {
            let after_lower =
                i > 0 && (chars[i - 1].is_lowercase() || chars[i - 1].is_ascii_digit());
            let before_lower = chars.get(i + 1).is_some_and(|n| n.is_lowercase());
            let inside_acronym = i > 0 && chars[i - 1].is_uppercase() && before_lower;
            if after_lower || inside_acronym {
                out.push('_');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// An identifier's name without its raw prefix: `r#type` -> `type`, the
/// name serde and the schema use.
pub fn unraw(ident: &syn::Ident) -> String {
    unraw_str(&ident.to_string()).to_owned()
}

/// [`unraw`] of a name written as text (a doc comment's `# Arguments`).
pub fn unraw_str(name: &str) -> &str {
    name.strip_prefix("r#").unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upper_camel() {
        assert_eq!(to_upper_camel("get_weather"), "GetWeather");
        assert_eq!(to_upper_camel("type"), "Type");
        assert_eq!(to_upper_camel("a__b_"), "AB");
        assert_eq!(to_upper_camel("fetch_url2"), "FetchUrl2");
    }

    #[test]
    fn snake() {
        assert_eq!(to_snake("WebSearch"), "web_search");
        assert_eq!(to_snake("HTTPServer"), "http_server");
        assert_eq!(to_snake("Search2Web"), "search2_web");
        assert_eq!(to_snake("search"), "search");
    }
}

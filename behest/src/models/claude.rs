//! What Anthropic's models take wherever they are served (Anthropic's
//! own API, Bedrock, Vertex AI), by the model's name.

/// Whether a model takes structured outputs (`output_config.format`,
/// `strict` tools): the 4.5 models and later.
pub(crate) fn structured_model(model: &str) -> bool {
    let Some(rest) = ["claude-opus-", "claude-sonnet-", "claude-haiku-"]
        .iter()
        .find_map(|family| model.strip_prefix(family))
    else {
        return false;
    };
    let mut numbers = rest.split('-').map(|part| part.parse::<u32>().ok());
    match (numbers.next().flatten(), numbers.next().flatten()) {
        (Some(major), _) if major >= 5 => true,
        // A date after the major (`claude-sonnet-4-20250514`) is no minor.
        (Some(4), Some(minor)) if minor < 100 => minor >= 5,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn structured_models_by_name() {
        for yes in [
            "claude-sonnet-4-5",
            "claude-sonnet-4-5-20250929",
            "claude-haiku-4-5",
            "claude-opus-4-7",
            "claude-sonnet-5",
        ] {
            assert!(super::structured_model(yes), "{yes}");
        }
        for no in [
            "claude-sonnet-4-20250514",
            "claude-3-5-sonnet",
            "claude-sonnet-4",
            "claude-haiku-4-1",
            "gpt-4.1",
            "claude-opus-4-20250514",
            "claude-opus-4-1",
        ] {
            assert!(!super::structured_model(no), "{no}");
        }
    }
}

//! "Did you mean …?": the closest names to a misspelt one.

use std::borrow::Cow;

/// Names longer than this are not compared: the search costs the product
/// of the two lengths per candidate, and a model's misspelling of a tool
/// or field name is never this long (tool names have at most 64 bytes).
pub(crate) const MAX_COMPARED_BYTES: usize = 256;

/// How much of a long name a message repeats.
const SHOWN_CHARS: usize = 64;

/// Up to `limit` candidates close to `name`, closest first. A candidate is
/// close when its edit distance (case-insensitive) is at most a third of the
/// longer name, or when one name contains the other. Names longer than
/// [`MAX_COMPARED_BYTES`] have no close candidates.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    if name.len() > MAX_COMPARED_BYTES {
        return Vec::new();
    }
    let wanted = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|candidate| candidate.len() <= MAX_COMPARED_BYTES)
        .filter_map(|candidate| {
            let lower = candidate.to_lowercase();
            let distance = edit_distance(&wanted, &lower);
            let budget = wanted.chars().count().max(lower.chars().count()) / 3;
            let contains =
                !wanted.is_empty() && (lower.contains(&wanted) || wanted.contains(&lower));
            (distance <= budget || contains).then_some((distance, candidate))
        })
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(limit)
        .map(|(_, candidate)| candidate.to_owned())
        .collect()
}

/// `name` as a message repeats it: whole when it is short, else its first
/// characters and its length, so that a hostile name does not fill the
/// model's context (or a log) with itself.
pub(crate) fn shown(name: &str) -> Cow<'_, str> {
    match name.char_indices().nth(SHOWN_CHARS) {
        None => Cow::Borrowed(name),
        Some((end, _)) => Cow::Owned(format!("{}… ({} bytes)", &name[..end], name.len())),
    }
}

/// Levenshtein distance over chars, with adjacent swaps counted as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: the one before the previous is needed for swaps.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        current[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            current[j] = (previous[j] + 1)
                .min(current[j - 1] + 1)
                .min(previous[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                current[j] = current[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut previous);
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("get_wether", "get_weather"), 1);
        assert_eq!(edit_distance("ab", "ba"), 1);
    }

    #[test]
    fn closest_names_come_first_and_far_ones_are_left_out() {
        let names = ["get_weather", "get_time", "send_email", "weather"];
        assert_eq!(
            closest("get_wether", names, 3),
            vec!["get_weather".to_owned()]
        );
        assert_eq!(
            closest("Weather", names, 3),
            vec!["weather".to_owned(), "get_weather".to_owned()]
        );
        assert!(closest("delete_everything", names, 3).is_empty());
    }

    #[test]
    fn long_names_are_not_compared_and_are_shown_cut() {
        let long = format!("get_weather{}", "x".repeat(MAX_COMPARED_BYTES));
        assert!(closest(&long, ["get_weather"], 3).is_empty());
        let long_candidate = "y".repeat(MAX_COMPARED_BYTES + 1);
        assert!(closest("yyy", [long_candidate.as_str()], 3).is_empty());
        assert_eq!(shown("get_weather"), "get_weather");
        let cut = shown(&long);
        assert!(cut.starts_with("get_weatherxxx"), "{cut}");
        assert!(cut.ends_with(&format!("… ({} bytes)", long.len())), "{cut}");
        assert!(cut.chars().count() < 90, "{cut}");
        // Multi-byte characters are cut on a boundary.
        let accents = "é".repeat(100);
        assert!(shown(&accents).starts_with(&"é".repeat(64)));
    }
}

//! "Did you mean …?": the closest names to a misspelt one.

/// Up to `limit` candidates close to `name`, closest first. A candidate is
/// close when its edit distance (case-insensitive) is at most a third of the
/// longer name, or when one name contains the other.
pub(crate) fn closest<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let wanted = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
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
}

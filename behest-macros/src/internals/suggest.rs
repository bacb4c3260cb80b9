//! "Did you mean": the closest of the valid keys to a mistyped one.

/// The candidate closest to `word`, if it is close enough to be a typo:
/// the same once `_` and case are ignored (`readonly` for `read_only`), or
/// within a third of its length in edits.
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let plain = |text: &str| text.replace('_', "").to_lowercase();
    if let Some(same) = candidates.iter().find(|c| plain(c) == plain(word)) {
        return Some(same);
    }
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|candidate| (distance(word, candidate), *candidate))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate)
}

/// The number of one-character edits between `a` and `b`.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// `; did you mean `x`?` or nothing.
pub fn hint(word: &str, candidates: &[&str]) -> String {
    closest(word, candidates)
        .map(|found| format!("did you mean `{found}`? "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_find_their_key() {
        let keys = ["read_only", "destructive", "timeout", "name"];
        assert_eq!(closest("readonly", &keys), Some("read_only"));
        assert_eq!(closest("ReadOnly", &keys), Some("read_only"));
        assert_eq!(closest("timout", &keys), Some("timeout"));
        assert_eq!(closest("destrutive", &keys), Some("destructive"));
        assert_eq!(closest("colour", &keys), None);
    }
}

//! "Did you mean": the near misses the validator offers for a broken
//! reference and the patch engine for a misspelled op field.

/// The one candidate within edit distance 2 of `target`, if exactly one
/// is (an ambiguous or far-off guess helps nobody). Candidates and targets
/// over 128 bytes are not compared, so a hostile input stays cheap.
pub fn near_miss<'c>(
    target: &str,
    candidates: impl IntoIterator<Item = &'c str>,
) -> Option<&'c str> {
    if target.len() > 128 {
        return None;
    }
    let mut found: Option<&'c str> = None;
    for c in candidates {
        if c.len().abs_diff(target.len()) > 2 || c.len() > 128 || found == Some(c) {
            continue;
        }
        if edit_distance(c.as_bytes(), target.as_bytes()) <= 2 {
            if found.is_some() {
                return None;
            }
            found = Some(c);
        }
    }
    found
}

/// Levenshtein distance over bytes.
pub fn edit_distance(a: &[u8], b: &[u8]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance(b"claim-1", b"claim-1"), 0);
        assert_eq!(edit_distance(b"claim-1", b"clam-1"), 1);
        assert_eq!(edit_distance(b"abc", b"xyz"), 3);
    }

    #[test]
    fn only_a_unique_near_candidate_is_suggested() {
        assert_eq!(
            near_miss("postion", ["position", "parent"]),
            Some("position")
        );
        assert_eq!(near_miss("base_hash", ["baseHash", "id"]), Some("baseHash"));
        assert_eq!(near_miss("ab", ["ax", "ay"]), None);
        assert_eq!(near_miss("bogus", ["id", "key", "value"]), None);
    }
}

//! Heading slugs, identical to the reference implementation's `slugify`:
//! lowercase, NFKD, drop combining marks, keep `[a-z0-9\s-]`, collapse
//! whitespace and dashes to `-`, trim dashes.

use unicode_normalization::UnicodeNormalization;

/// Slugifies a heading title. May return an empty string (no id).
pub fn slugify(input: &str) -> String {
    let lowered = input.to_lowercase();
    let mut kept = String::with_capacity(lowered.len());
    let mut push = |c: char| {
        if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || is_js_space(c) {
            kept.push(c);
        }
        // Everything else (including combining marks U+0300–U+036F) is dropped.
    };
    if lowered.is_ascii() {
        lowered.chars().for_each(&mut push);
    } else {
        lowered.nfkd().for_each(&mut push);
    }
    let mut out = String::with_capacity(kept.len());
    let mut pending_dash = false;
    for c in kept.trim_matches(is_js_space).chars() {
        if c == '-' || is_js_space(c) {
            pending_dash = true;
        } else {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c);
        }
    }
    out
}

/// JavaScript's `\s` class (Unicode whitespace plus U+FEFF).
pub fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

#[cfg(test)]
mod tests {
    use super::slugify;

    #[test]
    fn matches_reference_examples() {
        assert_eq!(slugify("My Heading"), "my-heading");
        assert_eq!(slugify("  Risks & Mitigations  "), "risks-mitigations");
        assert_eq!(slugify("Café déjà vu"), "cafe-deja-vu");
        assert_eq!(slugify("--a -- b--"), "a-b");
        assert_eq!(slugify("!!!"), "");
        assert_eq!(slugify("Über 2.0"), "uber-20");
    }
}

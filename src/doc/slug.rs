//! Heading slugs, identical to the reference implementation's `slugify`:
//! lowercase; NFKD; drop U+0300–U+036F; NFC; drop inherited-script marks;
//! keep letters, numbers and marks of every script plus whitespace and `-`,
//! except Latin-script letters outside `a-z` (so `ß`, `ø` vanish as before);
//! then whitespace runs become `-`, dash runs collapse, edge dashes go.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};
use unicode_script::{Script, UnicodeScript};

/// Slugifies a heading title. May return an empty string.
pub fn slugify(input: &str) -> String {
    let kept: String = if input.is_ascii() {
        input
            .bytes()
            .map(|b| b.to_ascii_lowercase() as char)
            .filter(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || is_js_space(c))
            .collect()
    } else {
        let folded: String = input
            .to_lowercase()
            .nfkd()
            .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
            .collect();
        folded.nfc().filter(|&c| keep_unicode(c)).collect()
    };
    collapse(&kept)
}

/// The auto id of a heading: its slug, or `section` when the slug is empty.
pub fn heading_slug(title: &str) -> String {
    let s = slugify(title);
    if s.is_empty() {
        "section".to_string()
    } else {
        s
    }
}

fn keep_unicode(c: char) -> bool {
    if is_js_space(c) || c == '-' {
        return true;
    }
    let script = c.script();
    if script == Script::Inherited {
        return false;
    }
    let class_ok = matches!(
        c.general_category_group(),
        GeneralCategoryGroup::Letter | GeneralCategoryGroup::Number | GeneralCategoryGroup::Mark
    );
    if !class_ok {
        return false;
    }
    script != Script::Latin || c.is_ascii_lowercase()
}

/// Trim, whitespace runs → `-`, dash runs → `-`, no edge dashes.
fn collapse(kept: &str) -> String {
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
    use super::{heading_slug, slugify};

    #[test]
    fn matches_reference_examples() {
        assert_eq!(slugify("My Heading"), "my-heading");
        assert_eq!(slugify("  Risks & Mitigations  "), "risks-mitigations");
        assert_eq!(slugify("Café déjà vu"), "cafe-deja-vu");
        assert_eq!(slugify("--a -- b--"), "a-b");
        assert_eq!(slugify("!!!"), "");
        assert_eq!(slugify("Über 2.0"), "uber-20");
        assert_eq!(slugify("Straße"), "strae");
        assert_eq!(slugify("Привет мир"), "привет-мир");
        assert_eq!(slugify("日本語 見出し"), "日本語-見出し");
        assert_eq!(heading_slug("???"), "section");
    }
}

//! Heading slugs, identical to the reference implementation's `slugify`:
//! lowercase; NFKD; drop U+0300–U+036F; NFC; drop inherited-script marks;
//! keep letters, numbers and marks of every script plus whitespace and `-`,
//! except Latin-script letters outside `a-z` (so `ß`, `ø` vanish as before);
//! then whitespace runs become `-`, dash runs collapse, edge dashes go.

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategoryGroup, UnicodeGeneralCategory};
use unicode_script::{Script, UnicodeScript};

use super::ast::Text;

/// Slugifies a heading title. May return an empty string.
pub fn slugify(input: &str) -> Text {
    if input.is_ascii() {
        return slugify_ascii(input.as_bytes());
    }
    let folded: String = input
        .to_lowercase()
        .nfkd()
        .filter(|c| !('\u{300}'..='\u{36f}').contains(c))
        .collect();
    let kept: String = folded.nfc().filter(|&c| keep_unicode(c)).collect();
    collapse(&kept)
}

/// The same rules in one pass for ASCII input (the common case). Built as
/// a `String` first: `Text::push` re-checks its inline/heap form per char,
/// which made slugs 6% of a big document's `check`.
fn slugify_ascii(input: &[u8]) -> Text {
    let mut out = String::with_capacity(input.len());
    let mut pending_dash = false;
    for &b in input {
        let c = b.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c as char);
        } else if c == b'-' || c.is_ascii_whitespace() || c == 0x0b {
            pending_dash = true;
        }
        // Every other character is dropped without separating words.
    }
    Text::from(out.as_str())
}

/// The auto id of a heading: its slug, or `section` when the slug is empty.
pub fn heading_slug(title: &str) -> Text {
    let s = slugify(title);
    if s.is_empty() {
        Text::const_new("section")
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
fn collapse(kept: &str) -> Text {
    let mut out = Text::with_capacity(kept.len());
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

//! Untrusted text on a terminal: what a record's writer chose (`reason`,
//! `actor.name`, a principal, an op id, a path, a block's text) must
//! reach a person's screen as the characters it is, never as commands to
//! the terminal. [`escape`] is the one function every human-facing
//! printer passes such fields through; [`check_field`] is what writers
//! refuse at write time.

use std::borrow::Cow;
use std::fmt::Write;

/// True for a character a terminal may act on instead of showing: C0
/// controls (newline, CR, tab and ESC included), DEL, C1 controls, the
/// Unicode bidi embeddings, overrides, isolates and marks (which reorder
/// what follows them), and the line and paragraph separators.
pub fn is_unsafe(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{61c}'
        | '\u{200e}' | '\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2066}'..='\u{2069}')
}

/// `text` with every [`is_unsafe`] character written as a visible escape:
/// `\n`, `\r`, `\t`, `\e` (ESC), else `\u{XXXX}`. Borrowed, unchanged,
/// when nothing needs escaping. A backslash is left as is: the point is
/// that nothing reaches the terminal as a control, not a reversible
/// encoding.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if is_unsafe(c) => {
                let _ = write!(out, "\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A whole report's text with every [`is_unsafe`] character escaped as
/// [`escape`] does, but for newlines and tabs, which lay the report out:
/// for output assembled from many fields, whose lines stay lines.
pub fn escape_text(text: &str) -> Cow<'_, str> {
    if !text.chars().any(|c| is_unsafe(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for part in text.split_inclusive(['\n', '\t']) {
        let body = part.trim_end_matches(['\n', '\t']);
        out.push_str(&escape(body));
        out.push_str(&part[body.len()..]);
    }
    Cow::Owned(out)
}

/// A field a writer refuses to record: it holds a character
/// [`is_unsafe`] finds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{field} contains the control character U+{code:04X} at byte {at} ({shown:?} as shown); \
control characters, newlines and bidi overrides are refused in {field} because they would \
reach a reviewer's terminal as commands"
)]
pub struct UnsafeField {
    /// The field, e.g. `reason` or `actor.name`.
    pub field: String,
    /// The code point found.
    pub code: u32,
    /// Its byte offset in the field.
    pub at: usize,
    /// The field, escaped.
    pub shown: String,
}

/// `Ok` when `value` holds no [`is_unsafe`] character, else the first one
/// found, for the field named `field`.
pub fn check_field(field: &str, value: &str) -> Result<(), UnsafeField> {
    match value.char_indices().find(|(_, c)| is_unsafe(*c)) {
        None => Ok(()),
        Some((at, c)) => Err(UnsafeField {
            field: field.to_string(),
            code: c as u32,
            at,
            shown: escape(value).into_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_are_escaped_and_plain_text_is_borrowed() {
        let hostile =
            "ok\u{1b}[8m hidden\u{1b}[2K\r\u{1b}[1A\n\tx\u{9b}2J\u{202e}gnp.exe\u{2066}\u{7f}";
        let shown = escape(hostile);
        assert!(!shown.chars().any(is_unsafe), "{shown}");
        assert_eq!(
            shown,
            "ok\\e[8m hidden\\e[2K\\r\\e[1A\\n\\tx\\u{009b}2J\\u{202e}gnp.exe\\u{2066}\\u{007f}"
        );
        assert!(matches!(escape("plain é 漢字 \\e"), Cow::Borrowed(_)));
    }

    #[test]
    fn report_text_keeps_its_lines_and_tabs() {
        let text = "a\tb\n\u{1b}[1Ac\rd\n\n";
        assert_eq!(escape_text(text), "a\tb\n\\e[1Ac\\rd\n\n");
        assert!(matches!(escape_text("a\tb\n"), Cow::Borrowed(_)));
    }

    #[test]
    fn every_unsafe_class_is_found() {
        for c in [
            '\0', '\n', '\r', '\t', '\u{1b}', '\u{7f}', '\u{85}', '\u{9b}', '\u{61c}', '\u{200e}',
            '\u{200f}', '\u{2028}', '\u{2029}', '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}',
        ] {
            assert!(is_unsafe(c), "{:x}", c as u32);
        }
        for c in [' ', '~', '\u{a0}', 'é', '\u{200d}', '\u{2070}', '\u{202f}'] {
            assert!(!is_unsafe(c), "{:x}", c as u32);
        }
    }

    #[test]
    fn check_field_names_the_field_and_the_first_control() {
        assert!(check_field("reason", "fine reason").is_ok());
        let e = check_field("reason", "ab\u{1b}[8m").unwrap_err();
        assert_eq!((e.code, e.at), (0x1b, 2));
        let msg = e.to_string();
        assert!(
            msg.starts_with("reason contains the control character U+001B at byte 2"),
            "{msg}"
        );
        assert!(!msg.contains('\u{1b}'), "{msg}");
    }
}

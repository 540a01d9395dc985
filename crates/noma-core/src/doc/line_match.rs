//! Line matchers: how the parser classifies one line. Each reproduces the
//! reference implementation's regular expression exactly, by hand (no
//! regex engine), and names the expression it mirrors.

use super::slug::is_js_space;

pub(super) fn is_blank(line: &str) -> bool {
    line.chars().all(is_js_space)
}

fn trim_end_js(s: &str) -> &str {
    s.trim_end_matches(is_js_space)
}

fn skip_ws(s: &str) -> &str {
    s.trim_start_matches(is_js_space)
}

/// `^---\s*$`
pub(super) fn is_frontmatter_fence(line: &str) -> bool {
    line.strip_prefix("---").is_some_and(is_blank)
}

fn leading_colons(line: &str) -> usize {
    line.bytes().take_while(|&b| b == b':').count()
}

/// A matched directive opener.
pub(super) struct DirectiveOpen<'a> {
    pub(super) colons: u32,
    pub(super) name: &'a str,
    pub(super) attrs: Option<&'a str>,
}

/// `^(:{2,})\s*([a-zA-Z_][\w-]*(?:::[a-zA-Z_][\w-]*)*)\s*(\{.*\})?\s*$`
pub(super) fn match_directive_open(line: &str) -> Option<DirectiveOpen<'_>> {
    let colons = leading_colons(line);
    if colons < 2 {
        return None;
    }
    let rest = skip_ws(&line[colons..]);
    let name_len = scan_directive_name(rest)?;
    let name = &rest[..name_len];
    let after = trim_end_js(skip_ws(&rest[name_len..]));
    let attrs = if after.is_empty() {
        None
    } else if after.starts_with('{') && after.ends_with('}') && after.len() >= 2 {
        Some(after)
    } else {
        return None;
    };
    Some(DirectiveOpen {
        colons: colons as u32,
        name,
        attrs,
    })
}

/// Length of a (possibly namespaced) directive name at the start of `s`.
fn scan_directive_name(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let ident = |at: usize| -> Option<usize> {
        let first = *b.get(at)?;
        if !(first.is_ascii_alphabetic() || first == b'_') {
            return None;
        }
        let mut e = at + 1;
        while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_' || b[e] == b'-') {
            e += 1;
        }
        Some(e)
    };
    let mut end = ident(0)?;
    while b.get(end) == Some(&b':') && b.get(end + 1) == Some(&b':') {
        match ident(end + 2) {
            Some(e) => end = e,
            None => break,
        }
    }
    Some(end)
}

/// `^(:{2,})\s*$` → the colon count.
pub(super) fn match_directive_close(line: &str) -> Option<u32> {
    let colons = leading_colons(line);
    (colons >= 2 && is_blank(&line[colons..])).then_some(colons as u32)
}

pub(super) struct Heading<'a> {
    pub(super) level: u8,
    /// The whole heading text (trimmed), used when the braces are not attributes.
    pub(super) text: &'a str,
    /// The text before a trailing `{...}` block, when there is one.
    pub(super) title: &'a str,
    /// The content of a trailing `{...}` block (without braces).
    pub(super) attrs: Option<&'a str>,
}

/// `^(#{1,6})\s+(.+?)\s*$`, then the text splits as `^(.+?)\s+\{([^}]*)\}$`
/// (the braces count only if they tokenise strictly, see `parse_heading_attrs`).
pub(super) fn match_heading(line: &str) -> Option<Heading<'_>> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &line[hashes..];
    if !rest.chars().next().is_some_and(is_js_space) {
        return None;
    }
    let text = rest.trim_matches(is_js_space);
    // `\s+(.+?)` needs a character after the first space: with only
    // whitespace, two or more characters are needed (the title is blank).
    if text.is_empty() && rest.chars().count() < 2 {
        return None;
    }
    let level = hashes as u8;
    if let Some(without_close) = text.strip_suffix('}') {
        // `[^}]*`: the block starts after the last inner `}`; the lazy title
        // takes the earliest `{` that has whitespace and a non-empty title before it.
        let from = without_close.rfind('}').map_or(0, |p| p + 1);
        for (off, _) in without_close[from..].match_indices('{') {
            let brace = from + off;
            let before = &without_close[..brace];
            let title = trim_end_js(before);
            if before.len() > title.len() && !title.is_empty() {
                return Some(Heading {
                    level,
                    text,
                    title,
                    attrs: Some(&without_close[brace + 1..]),
                });
            }
        }
    }
    Some(Heading {
        level,
        text,
        title: text,
        attrs: None,
    })
}

/// An opening code fence: 3+ backticks (info string without backticks) or
/// 3+ tildes. The language is the info string's first word.
#[derive(Clone, Copy)]
pub(super) struct Fence<'a> {
    pub(super) ch: u8,
    pub(super) len: usize,
    pub(super) lang: &'a str,
}

/// ```` ^(`{3,})([^`]*)$|^(~{3,})(.*)$ ````
pub(super) fn match_fence_open(line: &str) -> Option<Fence<'_>> {
    let ch = *line.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = line.bytes().take_while(|&b| b == ch).count();
    if len < 3 {
        return None;
    }
    let info = &line[len..];
    if ch == b'`' && info.contains('`') {
        return None;
    }
    let lang = info
        .trim_matches(is_js_space)
        .split(is_js_space)
        .next()
        .unwrap_or("");
    Some(Fence { ch, len, lang })
}

/// A closing fence: the opener's character, at least as long, no info string.
pub(super) fn is_fence_close(line: &str, open: Fence<'_>) -> bool {
    let len = line.bytes().take_while(|&b| b == open.ch).count();
    len >= open.len && is_blank(&line[len..])
}

/// `^\s*\|.*\|\s*$`
pub(super) fn is_table_row(line: &str) -> bool {
    let t = line.trim_matches(is_js_space);
    t.len() >= 2 && t.starts_with('|') && t.ends_with('|')
}

/// `^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)+\|?\s*$`
pub(super) fn is_table_separator(line: &str) -> bool {
    let b = line.as_bytes();
    let mut i = 0;
    let ws = |i: &mut usize| {
        while *i < b.len() && (b[*i] == b' ' || b[*i] == b'\t') {
            *i += 1;
        }
    };
    let cell = |i: &mut usize| -> bool {
        if *i < b.len() && b[*i] == b':' {
            *i += 1;
        }
        let dashes = b[*i..].iter().take_while(|&&c| c == b'-').count();
        if dashes < 3 {
            return false;
        }
        *i += dashes;
        if *i < b.len() && b[*i] == b':' {
            *i += 1;
        }
        true
    };
    ws(&mut i);
    if i < b.len() && b[i] == b'|' {
        i += 1;
    }
    ws(&mut i);
    if !cell(&mut i) {
        return false;
    }
    let mut cells = 1;
    loop {
        ws(&mut i);
        if i >= b.len() {
            break;
        }
        if b[i] != b'|' {
            return false;
        }
        i += 1;
        ws(&mut i);
        if i >= b.len() {
            break;
        }
        if !cell(&mut i) {
            return false;
        }
        cells += 1;
    }
    cells >= 2
}

/// `^(?:-{3,}|\*{3,}|_{3,})\s*$`
pub(super) fn is_thematic_break(line: &str) -> bool {
    let Some(&c) = line.as_bytes().first() else {
        return false;
    };
    if !matches!(c, b'-' | b'*' | b'_') {
        return false;
    }
    let run = line.bytes().take_while(|&b| b == c).count();
    run >= 3 && is_blank(&line[run..])
}

/// `^>\s?(.*)$` → the quoted text.
pub(super) fn match_quote(line: &str) -> Option<&str> {
    let rest = line.strip_prefix('>')?;
    match rest.chars().next() {
        Some(c) if is_js_space(c) => Some(&rest[c.len_utf8()..]),
        _ => Some(rest),
    }
}

/// `^([-*])\s+(.+)$` or `^(\d+)\.\s+(.+)$` → (ordered, content).
pub(super) fn match_list_item(line: &str) -> Option<(bool, &str)> {
    let b = line.as_bytes();
    let (ordered, rest) = match b.first()? {
        b'-' | b'*' => (false, &line[1..]),
        c if c.is_ascii_digit() => {
            let d = b.iter().take_while(|c| c.is_ascii_digit()).count();
            (true, line[d..].strip_prefix('.')?)
        }
        _ => return None,
    };
    let first = rest.chars().next()?;
    if !is_js_space(first) {
        return None;
    }
    let content = skip_ws(rest);
    if !content.is_empty() {
        return Some((ordered, content));
    }
    // All whitespace: `\s+` backtracks to leave one character for `.+`.
    if rest.chars().count() >= 2 {
        let last = rest.char_indices().last().map_or(0, |(i, _)| i);
        return Some((ordered, &rest[last..]));
    }
    None
}

/// Whether `cur` (with `next` after it) ends a paragraph.
pub(super) fn breaks_paragraph(cur: &str, next: &str) -> bool {
    is_blank(cur)
        || match_heading(cur).is_some()
        || match_fence_open(cur).is_some()
        || match_directive_open(cur).is_some()
        || match_directive_close(cur).is_some()
        || is_thematic_break(cur)
        || match_quote(cur).is_some()
        || match_list_item(cur).is_some()
        || (is_table_row(cur) && is_table_separator(next))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_separator_forms() {
        assert!(is_table_separator("|:-----|------:|"));
        assert!(is_table_separator("--- | ---"));
        assert!(!is_table_separator("|---|"));
        assert!(!is_table_separator("| -- | --- |"));
    }
}

//! The text of single lines, as the reference reads and writes it:
//! JavaScript string semantics (`trim`, `/^\s*/`, `String(number)`),
//! attribute serialization, and the open-line, heading and fence rewrites
//! the ops perform on one line.

use crate::doc::lines;
use crate::doc::slug::is_js_space;

/// Splits inserted text into lines the way the reference does
/// (`text.replace(/\n+$/, "").split("\n")`), also accepting CRLF/CR input.
pub(super) fn fragment_lines(text: &str) -> Vec<String> {
    let trimmed = text.trim_end_matches(['\n', '\r']);
    lines::split(trimmed)
        .iter()
        .map(|l| l.text.to_string())
        .collect()
}

/// JavaScript's `String.prototype.trim`.
pub(super) fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

/// Leading whitespace of a line (`/^\s*/`).
pub(super) fn indent_of(s: &str) -> &str {
    &s[..s.len() - s.trim_start_matches(is_js_space).len()]
}

/// Whether `s` contains a line break.
pub(super) fn has_newline(s: &str) -> bool {
    s.contains(['\n', '\r'])
}

/// A directive attribute value to serialize.
#[derive(Debug, Clone, PartialEq)]
pub enum AttrVal {
    /// A string.
    Str(String),
    /// A number.
    Num(f64),
    /// A boolean.
    Bool(bool),
}

/// Formats a number like JavaScript's `String(n)` for ordinary values.
pub(super) fn js_num(n: f64) -> String {
    if n.is_nan() {
        return "NaN".into();
    }
    if n.is_infinite() {
        return if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if n == 0.0 {
        return "0".into();
    }
    if n.fract() == 0.0 && n.abs() < 1e21 {
        // Display prints the shortest round-trip digits, zero-padded, like
        // JavaScript (2**64 is 18446744073709552000, not ...551616).
        return format!("{n}");
    }
    let abs = n.abs();
    if (1e-7..1e21).contains(&abs) {
        format!("{n}")
    } else {
        // JavaScript switches to exponent notation: 1e-7, 1.5e+21.
        let s = format!("{n:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    }
}

/// One attribute as the reference writes it: `flag`, `k=false`, `k=1.5`,
/// `k="text"`, `k='has "quotes"'`, or `k="both \" and '"`.
pub(super) fn serialize_attr(key: &str, value: &AttrVal) -> String {
    match value {
        AttrVal::Bool(true) => key.to_string(),
        AttrVal::Bool(false) => format!("{key}=false"),
        AttrVal::Num(n) => format!("{key}={}", js_num(*n)),
        AttrVal::Str(s) => {
            if s.contains('"') {
                if s.contains('\'') {
                    format!("{key}=\"{}\"", s.replace('"', "\\\""))
                } else {
                    format!("{key}='{s}'")
                }
            } else {
                format!("{key}=\"{s}\"")
            }
        }
    }
}

/// One match of the attribute token regex
/// `([a-zA-Z_][\w-]*)(?:=("([^"]*)"|'([^']*)'|([^\s}]+)))?` in a string.
pub(super) struct AttrToken {
    /// Byte range of the whole token.
    pub start: usize,
    /// End of the whole token.
    pub end: usize,
    /// End of the key (the key is `start..key_end`).
    pub key_end: usize,
}

/// Every attribute token in `s`, scanning left to right like a global regex.
pub(super) fn attr_tokens(s: &str) -> Vec<AttrToken> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !(c.is_ascii_alphabetic() || c == b'_') {
            i += s[i..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        let start = i;
        i += 1;
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
            i += 1;
        }
        let key_end = i;
        if i < b.len() && b[i] == b'=' {
            if let Some(end) = scan_token_value(s, i + 1) {
                i = end;
            }
        }
        out.push(AttrToken {
            start,
            end: i,
            key_end,
        });
    }
    out
}

fn scan_token_value(s: &str, v: usize) -> Option<usize> {
    let b = s.as_bytes();
    let first = *b.get(v)?;
    if first == b'"' || first == b'\'' {
        if let Some(off) = memchr::memchr(first, &b[v + 1..]) {
            return Some(v + 1 + off + 1);
        }
    }
    let mut end = v;
    for (off, c) in s[v..].char_indices() {
        if is_js_space(c) || c == '}' {
            break;
        }
        end = v + off + c.len_utf8();
    }
    (end > v).then_some(end)
}

/// A directive open line split per the reference's
/// `^(\s*:{2,}\s*NAME(?:::NAME)*)(\s*\{)?(.*?)(\}\s*)?$`.
struct OpenLine<'l> {
    head: &'l str,
    inner: &'l str,
}

fn split_open_line(line: &str) -> Option<OpenLine<'_>> {
    let lead = indent_of(line).len();
    let colons = line[lead..].bytes().take_while(|&c| c == b':').count();
    if colons < 2 {
        return None;
    }
    let mut i = lead + colons;
    i += line[i..].len() - line[i..].trim_start_matches(is_js_space).len();
    let b = line.as_bytes();
    let ident = |at: usize| -> Option<usize> {
        let f = *b.get(at)?;
        if !(f.is_ascii_alphabetic() || f == b'_') {
            return None;
        }
        let mut e = at + 1;
        while e < b.len() && (b[e].is_ascii_alphanumeric() || b[e] == b'_' || b[e] == b'-') {
            e += 1;
        }
        Some(e)
    };
    let mut end = ident(i)?;
    while b.get(end) == Some(&b':') && b.get(end + 1) == Some(&b':') {
        match ident(end + 2) {
            Some(e) => end = e,
            None => break,
        }
    }
    let head = &line[..end];
    let rest = &line[end..];
    let after_ws = rest.trim_start_matches(is_js_space);
    let inner = after_ws.strip_prefix('{').unwrap_or(rest);
    let t = inner.trim_end_matches(is_js_space);
    let inner = t.strip_suffix('}').unwrap_or(inner);
    Some(OpenLine { head, inner })
}

/// Sets `key` on a directive open line (replacing every existing `key`
/// token in place, else appending). `None` when the line is not an opener.
pub(super) fn set_open_line_attr(line: &str, key: &str, value: &AttrVal) -> Option<String> {
    let open = split_open_line(line)?;
    let serialized = serialize_attr(key, value);
    let mut rewritten = String::with_capacity(open.inner.len() + serialized.len());
    let mut last = 0;
    let mut replaced = false;
    for t in attr_tokens(open.inner) {
        if &open.inner[t.start..t.key_end] == key {
            rewritten.push_str(&open.inner[last..t.start]);
            rewritten.push_str(&serialized);
            last = t.end;
            replaced = true;
        }
    }
    rewritten.push_str(&open.inner[last..]);
    let next = if replaced {
        rewritten
    } else {
        let trimmed = js_trim(open.inner);
        if trimmed.is_empty() {
            serialized
        } else {
            format!("{trimmed} {serialized}")
        }
    };
    let out = format!("{}{{{}}}", open.head, js_trim(&next));
    Some(out.trim_end_matches(is_js_space).to_string())
}

/// Removes every `key` token from a directive open line, re-joining the
/// kept tokens with single spaces. The line is returned unchanged when the
/// key is absent; `None` when the line is not an opener.
pub(super) fn remove_open_line_attr(line: &str, key: &str) -> Option<String> {
    let open = split_open_line(line)?;
    let mut kept = Vec::new();
    let mut removed = false;
    for t in attr_tokens(open.inner) {
        if &open.inner[t.start..t.key_end] == key {
            removed = true;
        } else {
            kept.push(&open.inner[t.start..t.end]);
        }
    }
    if !removed {
        return Some(line.to_string());
    }
    let joined = kept.join(" ");
    let joined = js_trim(&joined);
    let out = if joined.is_empty() {
        open.head.to_string()
    } else {
        format!("{}{{{}}}", open.head, joined)
    };
    Some(out.trim_end_matches(is_js_space).to_string())
}

/// A heading line split per `^(#+)(\s+)(.*?)(?:\s+\{([^}]*)\})?\s*$`.
pub(super) struct HeadingLine<'l> {
    /// The `#` run.
    pub hashes: &'l str,
    /// The whitespace after it.
    pub space: &'l str,
    /// The `{...}` contents, when present.
    pub attrs: Option<&'l str>,
}

/// Splits a heading line; `None` when it is not one.
pub(super) fn split_heading_line(line: &str) -> Option<HeadingLine<'_>> {
    let n = line.bytes().take_while(|&c| c == b'#').count();
    if n == 0 {
        return None;
    }
    let rest = &line[n..];
    let body = rest.trim_start_matches(is_js_space);
    let space = &rest[..rest.len() - body.len()];
    if space.is_empty() {
        return None;
    }
    let t = body.trim_end_matches(is_js_space);
    let mut attrs = None;
    if let Some(inner_end) = t.len().checked_sub(1).filter(|_| t.ends_with('}')) {
        // `[^}]*`: the block cannot contain `}`; the lazy title takes the
        // earliest `{` that is preceded by whitespace.
        let from = t[..inner_end].rfind('}').map_or(0, |p| p + 1);
        let mut p = from;
        while let Some(off) = t[p..inner_end].find('{') {
            let brace = p + off;
            let before = &t[..brace];
            if before.ends_with(is_js_space) {
                attrs = Some(&t[brace + 1..inner_end]);
                break;
            }
            p = brace + 1;
        }
    }
    Some(HeadingLine {
        hashes: &line[..n],
        space,
        attrs,
    })
}

/// Rewrites fence depth in `content`: every directive opener/closer of depth
/// `>= from` shifts by `to - from` (minimum 2); code fences are left alone.
pub(super) fn normalize_fence_depth(content: &[String], from: usize, to: usize) -> Vec<String> {
    if from == to {
        return content.to_vec();
    }
    let delta = to as i64 - from as i64;
    let mut in_fence = false;
    content
        .iter()
        .map(|line| {
            let lead = indent_of(line);
            if line[lead.len()..].starts_with("```") {
                in_fence = !in_fence;
                return line.clone();
            }
            if in_fence {
                return line.clone();
            }
            let after = &line[lead.len()..];
            let depth = after.bytes().take_while(|&c| c == b':').count();
            if depth < 2 {
                return line.clone();
            }
            let rest = &after[depth..];
            let r = rest.trim_start_matches(is_js_space);
            let ok = r.is_empty() || r.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
            if !ok || depth < from {
                return line.clone();
            }
            let new_depth = (depth as i64 + delta).max(2) as usize;
            format!("{lead}{}{rest}", ":".repeat(new_depth))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_line_attr_rewrites() {
        let l = r#"::claim{id="x" confidence=0.5}"#;
        assert_eq!(
            set_open_line_attr(l, "confidence", &AttrVal::Num(0.95)).unwrap(),
            r#"::claim{id="x" confidence=0.95}"#
        );
        assert_eq!(
            set_open_line_attr("::note", "k", &AttrVal::Str("it's".into())).unwrap(),
            r#"::note{k="it's"}"#
        );
        assert_eq!(
            set_open_line_attr("::a::b{x=1}", "t", &AttrVal::Str("say \"hi\"".into())).unwrap(),
            "::a::b{x=1 t='say \"hi\"'}"
        );
        assert_eq!(
            remove_open_line_attr(r#"::claim{id="c1" status="draft"}"#, "status").unwrap(),
            r#"::claim{id="c1"}"#
        );
        assert_eq!(
            remove_open_line_attr("::claim{flag}", "flag").unwrap(),
            "::claim"
        );
        assert!(set_open_line_attr("plain text", "k", &AttrVal::Bool(true)).is_none());
    }

    #[test]
    fn heading_split() {
        let h = split_heading_line("## Old Title {id=\"sec\"}").unwrap();
        assert_eq!(
            (h.hashes, h.space, h.attrs),
            ("##", " ", Some("id=\"sec\""))
        );
        let h = split_heading_line("# A {x} {y}").unwrap();
        assert_eq!(h.attrs, Some("y"));
        assert!(split_heading_line("#x").is_none());
    }

    #[test]
    fn fence_depth_skips_code() {
        let src = ["::claim{id=\"m\"}", "```", "::", "```", "::"].map(String::from);
        assert_eq!(
            normalize_fence_depth(&src, 2, 3),
            [":::claim{id=\"m\"}", "```", "::", "```", ":::"].map(String::from)
        );
    }

    #[test]
    fn js_numbers() {
        assert_eq!(js_num(0.95), "0.95");
        assert_eq!(js_num(14.0), "14");
        assert_eq!(js_num(-2.5), "-2.5");
    }
}

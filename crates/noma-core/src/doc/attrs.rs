//! The attribute grammar: `{key="quoted" key='single' key=bare key=0.8 flag}`.
//!
//! Tokenising follows the reference implementation: whitespace separates
//! tokens; a key is `[a-zA-Z_][\w-]*`; `key` alone is a `true` flag;
//! double-quoted values understand `\"` and `\\` escapes, single-quoted values
//! are raw; an unterminated quote falls back to a bare value. Only bare
//! values are coerced (`true`/`false`, integers, decimals) and `id` never is.
//! The lenient mode (directives) skips stray characters; the strict mode
//! (heading attribute blocks) rejects the whole list instead.

use super::ast::{AttrValue, Attrs, Text};
use super::slug::is_js_space;

/// Parses a directive attribute block. `raw` may include the braces.
pub fn parse_attrs(raw: &str) -> Attrs {
    let inner = raw.strip_prefix('{').unwrap_or(raw);
    let inner = inner.strip_suffix('}').unwrap_or(inner);
    let inner = inner.trim_matches(is_js_space);
    read_attrs(inner, false).map_or_else(Attrs::default, |(attrs, _)| attrs)
}

/// Parses a heading's `{...}` content strictly: `None` when a stray
/// character appears or no token has a value (so `# Set {a, b}` keeps its
/// braces in the title).
pub fn parse_heading_attrs(inner: &str) -> Option<Attrs> {
    let (attrs, any_value) = read_attrs(inner, true)?;
    any_value.then_some(attrs)
}

/// Adds one `key[=value]` token: a flag is `true`, a quoted value (and any
/// `id`) a string, a bare value coerced. A repeated key keeps its first
/// place and takes the last value.
fn add(attrs: &mut Attrs, key: &str, value: Option<Text>, quoted: bool) {
    let value = match value {
        None => AttrValue::Bool(true),
        Some(v) if quoted || key == "id" => AttrValue::Str(v),
        Some(v) => coerce_owned(v),
    };
    attrs.set(key, value);
}

/// The attributes of `inner` and whether any token had a value; `None`
/// when `strict` and a stray character appears.
fn read_attrs(inner: &str, strict: bool) -> Option<(Attrs, bool)> {
    let b = inner.as_bytes();
    // Sized up front: most lists are `key=value` pairs, and a growing vector
    // would keep room for four (20,000 directives of a big document held
    // 1.9 MB of slack).
    let mut attrs = Attrs(Vec::with_capacity(memchr::memchr_iter(b'=', b).count()));
    let mut any_value = false;
    let mut i = 0usize;
    let at_boundary = |at: usize| at >= b.len() || starts_with_space(&inner[at..]);
    while i < b.len() {
        if b[i].is_ascii_whitespace() || b[i] == 0x0b {
            i += 1;
            continue;
        }
        if b[i] >= 0x80 {
            if let Some(c) = inner[i..].chars().next().filter(|&c| is_js_space(c)) {
                i += c.len_utf8();
                continue;
            }
        }
        if !is_key_start(b[i]) {
            if strict {
                return None;
            }
            i += utf8_len(b[i]);
            continue;
        }
        let key_start = i;
        i += 1;
        while i < b.len() && is_key_char(b[i]) {
            i += 1;
        }
        let key = &inner[key_start..i];
        if b.get(i) != Some(&b'=') {
            if strict && !at_boundary(i) {
                return None;
            }
            add(&mut attrs, key, None, false);
            continue;
        }
        let value_start = i + 1;
        if let Some(&q) = b.get(value_start) {
            if q == b'"' || q == b'\'' {
                if let Some((value, next)) = scan_quoted(inner, value_start + 1, q) {
                    if strict && !at_boundary(next) {
                        return None;
                    }
                    add(&mut attrs, key, Some(value), true);
                    any_value = true;
                    i = next;
                    continue;
                }
            }
        }
        let bare_len = bare_value_len(&inner[value_start..]);
        if bare_len == 0 {
            if strict {
                return None;
            }
            // `key=` with nothing after: a flag; the `=` is skipped next round.
            add(&mut attrs, key, None, false);
            continue;
        }
        let value = Text::from(&inner[value_start..value_start + bare_len]);
        add(&mut attrs, key, Some(value), false);
        any_value = true;
        i = value_start + bare_len;
    }
    Some((attrs, any_value))
}

/// Length of a bare value (`\S+`) at the start of `s`.
fn bare_value_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c < 0x80 {
            if c.is_ascii_whitespace() || c == 0x0b {
                return i;
            }
            i += 1;
        } else {
            match s[i..].chars().next() {
                Some(ch) if is_js_space(ch) => return i,
                Some(ch) => i += ch.len_utf8(),
                None => return i,
            }
        }
    }
    i
}

/// Scans a quoted value from byte `from` (just past the opening quote).
fn scan_quoted(s: &str, from: usize, quote: u8) -> Option<(Text, usize)> {
    let b = s.as_bytes();
    let mut value = Text::default();
    let mut j = from;
    let mut run = from;
    while j < b.len() {
        let c = b[j];
        if c == quote {
            value.push_str(&s[run..j]);
            return Some((value, j + 1));
        }
        if quote == b'"' && c == b'\\' && matches!(b.get(j + 1), Some(b'"') | Some(b'\\')) {
            value.push_str(&s[run..j]);
            value.push(b[j + 1] as char);
            j += 2;
            run = j;
            continue;
        }
        j += 1;
    }
    None
}

fn starts_with_space(s: &str) -> bool {
    match s.as_bytes().first() {
        Some(&c) if c < 0x80 => c.is_ascii_whitespace() || c == 0x0b,
        _ => s.chars().next().is_some_and(is_js_space),
    }
}

fn is_key_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

fn utf8_len(first: u8) -> usize {
    match first {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        _ => 4,
    }
}

/// Serialises one attribute so [`parse_attrs`] reads back the same value:
/// `true` as a bare flag, numbers and `false` bare, strings quoted (single
/// quotes when the value has `"` but no `'`, else double quotes with `\"`
/// and significant backslashes escaped).
pub fn serialize_attr(key: &str, value: &AttrValue) -> String {
    match value {
        AttrValue::Bool(true) => key.to_string(),
        AttrValue::Bool(false) => format!("{key}=false"),
        AttrValue::Num(n) => format!("{key}={}", super::ast::format_number(*n)),
        AttrValue::Str(s) => {
            if s.contains('"') && !s.contains('\'') {
                return format!("{key}='{s}'");
            }
            let mut out = String::with_capacity(s.len() + key.len() + 3);
            out.push_str(key);
            out.push_str("=\"");
            let chars: Vec<char> = s.chars().collect();
            for (k, &c) in chars.iter().enumerate() {
                match c {
                    '"' => out.push_str("\\\""),
                    // A backslash is escaped only where it would be read as an escape.
                    '\\' if matches!(chars.get(k + 1), None | Some('\\') | Some('"')) => {
                        out.push_str("\\\\")
                    }
                    _ => out.push(c),
                }
            }
            out.push('"');
            out
        }
    }
}

/// Serialises a whole attribute list as `{k=v ...}` (empty string when empty).
pub fn serialize_attrs(attrs: &Attrs) -> String {
    if attrs.is_empty() {
        return String::new();
    }
    let parts: Vec<String> = attrs.iter().map(|(k, v)| serialize_attr(k, v)).collect();
    format!("{{{}}}", parts.join(" "))
}

/// [`coerce`] without copying a string value.
fn coerce_owned(v: Text) -> AttrValue {
    match coerce_scalar(&v) {
        Some(x) => x,
        None => AttrValue::Str(v),
    }
}

/// The non-string coercions: booleans and number literals.
fn coerce_scalar(v: &str) -> Option<AttrValue> {
    match v {
        "true" => Some(AttrValue::Bool(true)),
        "false" => Some(AttrValue::Bool(false)),
        _ if is_number_literal(v) => v.parse::<f64>().ok().map(AttrValue::Num),
        _ => None,
    }
}

/// Coerces a raw value: `true`/`false` → bool, `-?\d+` and `-?\d+\.\d+` → number.
pub fn coerce(v: &str) -> AttrValue {
    coerce_scalar(v).unwrap_or_else(|| AttrValue::Str(v.into()))
}

/// Whether `v` matches `^-?\d+$` or `^-?\d+\.\d+$`.
pub fn is_number_literal(v: &str) -> bool {
    let digits = v.strip_prefix('-').unwrap_or(v);
    let (int, frac) = match digits.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (digits, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    all_digits(int) && frac.is_none_or(all_digits)
}

/// Splits an `aliases=` value on commas and whitespace.
pub fn split_aliases(v: &str) -> Vec<Text> {
    v.split(|c: char| c == ',' || is_js_space(c))
        .filter(|s| !s.is_empty())
        .map(Text::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let a = parse_attrs(
            r#"{id="claim-1" tone=warning columns=3 confidence=0.82 done pinned=false t='x y'}"#,
        );
        assert_eq!(a.get_str("id"), Some("claim-1"));
        assert_eq!(a.get_str("tone"), Some("warning"));
        assert_eq!(a.get("columns"), Some(&AttrValue::Num(3.0)));
        assert_eq!(a.get("confidence"), Some(&AttrValue::Num(0.82)));
        assert_eq!(a.get("done"), Some(&AttrValue::Bool(true)));
        assert_eq!(a.get("pinned"), Some(&AttrValue::Bool(false)));
        assert_eq!(a.get_str("t"), Some("x y"));
    }

    #[test]
    fn quoted_values_stay_strings_and_unterminated_quotes_are_bare() {
        let a = parse_attrs(r#"{n="42" id=7 m=42 s="open}"#);
        assert_eq!(a.get_str("n"), Some("42"));
        assert_eq!(a.get_str("id"), Some("7"));
        assert_eq!(a.get("m"), Some(&AttrValue::Num(42.0)));
        assert_eq!(a.get_str("s"), Some("\"open"));
    }

    #[test]
    fn double_quoted_escapes() {
        let a = parse_attrs(r#"{t="say \"hi\" \\ c:\x"}"#);
        assert_eq!(a.get_str("t"), Some(r#"say "hi" \ c:\x"#));
    }

    #[test]
    fn serialisation_roundtrips() {
        for v in [
            "plain",
            "with \"quote\"",
            "both \" and '",
            r"back\slash",
            r"end\",
            r#"q\""#,
            "",
        ] {
            let text = serialize_attr("k", &AttrValue::Str(v.into()));
            let back = parse_attrs(&format!("{{{text}}}"));
            assert_eq!(back.get_str("k"), Some(v), "{text}");
        }
        assert_eq!(serialize_attr("n", &AttrValue::Num(0.9)), "n=0.9");
        assert_eq!(serialize_attr("f", &AttrValue::Bool(true)), "f");
    }

    #[test]
    fn heading_attrs_are_strict() {
        assert!(parse_heading_attrs("a, b").is_none());
        assert!(parse_heading_attrs("flag").is_none());
        let a = parse_heading_attrs(r#"id="x" aliases="a,b""#).unwrap();
        assert_eq!(a.get_str("id"), Some("x"));
    }

    #[test]
    fn later_duplicate_wins_in_place() {
        let a = parse_attrs("{a=1 b=2 a=3}");
        assert_eq!(a.0[0], ("a".into(), AttrValue::Num(3.0)));
        assert_eq!(a.len(), 2);
    }

    #[test]
    fn empty_value_is_a_flag() {
        let a = parse_attrs("{key= x}");
        assert_eq!(a.get("key"), Some(&AttrValue::Bool(true)));
        assert_eq!(a.get("x"), Some(&AttrValue::Bool(true)));
    }

    #[test]
    fn non_ascii_is_skipped_safely() {
        let a = parse_attrs("{é ü=1 k=ü}");
        assert_eq!(a.get_str("k"), Some("ü"));
    }
}

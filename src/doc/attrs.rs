//! The attribute grammar: `{key="quoted" key='single' key=bare key=0.8 flag}`.
//!
//! The scanner reproduces the reference's global regex
//! `([a-zA-Z_][\w-]*)(?:=("([^"]*)"|'([^']*)'|([^\s]+)))?` exactly: it walks
//! the text, skipping characters that cannot start a key, and every value is
//! coerced (`true`/`false`, integers and decimals become booleans/numbers).

use super::ast::{AttrValue, Attrs};
use super::slug::is_js_space;

/// Parses an attribute block. `raw` may include the surrounding braces.
pub fn parse_attrs(raw: &str) -> Attrs {
    let mut attrs = Attrs::default();
    let inner = raw.strip_prefix('{').unwrap_or(raw);
    let inner = inner.strip_suffix('}').unwrap_or(inner);
    let inner = inner.trim_matches(is_js_space);
    let b = inner.as_bytes();
    let mut i = 0usize;
    while i < b.len() {
        if !is_key_start(b[i]) {
            // Advance one whole character.
            i += utf8_len(b[i]);
            continue;
        }
        let key_start = i;
        i += 1;
        while i < b.len() && is_key_char(b[i]) {
            i += 1;
        }
        let key = &inner[key_start..i];
        if i < b.len() && b[i] == b'=' {
            let v = i + 1;
            if let Some((value, next)) = scan_value(inner, v) {
                attrs.set(key, coerce(value));
                i = next;
                continue;
            }
        }
        attrs.set(key, AttrValue::Bool(true));
    }
    attrs
}

/// Scans a value starting at byte `v`; `None` when no value form matches.
fn scan_value(s: &str, v: usize) -> Option<(&str, usize)> {
    let b = s.as_bytes();
    if v >= b.len() {
        return None;
    }
    for q in [b'"', b'\''] {
        if b[v] == q {
            if let Some(off) = memchr::memchr(q, &b[v + 1..]) {
                let end = v + 1 + off;
                return Some((&s[v + 1..end], end + 1));
            }
        }
    }
    // Bare value: one or more non-whitespace characters.
    let mut end = v;
    for (off, c) in s[v..].char_indices() {
        if is_js_space(c) {
            break;
        }
        end = v + off + c.len_utf8();
    }
    if end == v {
        None
    } else {
        Some((&s[v..end], end))
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

/// Coerces a raw value: `true`/`false` → bool, `-?\d+` and `-?\d+\.\d+` → number.
pub fn coerce(v: &str) -> AttrValue {
    match v {
        "true" => return AttrValue::Bool(true),
        "false" => return AttrValue::Bool(false),
        _ => {}
    }
    if is_number_literal(v) {
        if let Ok(n) = v.parse::<f64>() {
            return AttrValue::Num(n);
        }
    }
    AttrValue::Str(v.to_string())
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
pub fn split_aliases(v: &str) -> Vec<String> {
    v.split(|c: char| c == ',' || is_js_space(c))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let a = parse_attrs(r#"{id="claim-1" tone=warning columns=3 confidence=0.82 done pinned=false t='x y'}"#);
        assert_eq!(a.get_str("id"), Some("claim-1"));
        assert_eq!(a.get_str("tone"), Some("warning"));
        assert_eq!(a.get("columns"), Some(&AttrValue::Num(3.0)));
        assert_eq!(a.get("confidence"), Some(&AttrValue::Num(0.82)));
        assert_eq!(a.get("done"), Some(&AttrValue::Bool(true)));
        assert_eq!(a.get("pinned"), Some(&AttrValue::Bool(false)));
        assert_eq!(a.get_str("t"), Some("x y"));
    }

    #[test]
    fn quoted_numbers_are_coerced_and_unterminated_quotes_are_bare() {
        let a = parse_attrs(r#"{n="42" s="open}"#);
        assert_eq!(a.get("n"), Some(&AttrValue::Num(42.0)));
        assert_eq!(a.get_str("s"), Some("\"open"));
    }

    #[test]
    fn later_duplicate_wins_in_place() {
        let a = parse_attrs("{a=1 b=2 a=3}");
        assert_eq!(a.0[0], ("a".to_string(), AttrValue::Num(3.0)));
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

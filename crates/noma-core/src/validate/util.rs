//! Small value helpers shared by the rule families: JavaScript-compatible
//! truthiness and number parsing (the reference validator's semantics),
//! and ISO-8601 date parsing for the citation window.

use serde_json::Value;

use crate::doc::slug::is_js_space;
use crate::doc::AttrValue;

/// Whether an attribute is "set" the way `if (attrs.x)` reads in the
/// reference: present and not `""`, `0` or `false`.
pub(super) fn truthy(v: Option<&AttrValue>) -> bool {
    match v {
        None => false,
        Some(AttrValue::Str(s)) => !s.is_empty(),
        Some(AttrValue::Num(n)) => *n != 0.0 && !n.is_nan(),
        Some(AttrValue::Bool(b)) => *b,
    }
}

/// JavaScript `Number(s)` for the forms documents use, finite results only:
/// surrounding whitespace is ignored, `0x`/`0o`/`0b` integers and decimal
/// literals (`.5`, `5.`, `1e3`, signs) parse; `""` and words do not.
pub(super) fn js_number(s: &str) -> Option<f64> {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return None;
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            return u64::from_str_radix(digits, radix).ok().map(|n| n as f64);
        }
    }
    // Rust's float grammar also takes `inf`/`nan`; JS does not (except
    // `Infinity`, which is not finite anyway), so allow only literal characters.
    if !t
        .bytes()
        .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return None;
    }
    t.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A finite number from an attribute: numbers as-is, strings via [`js_number`].
pub(super) fn attr_number(v: Option<&AttrValue>) -> Option<f64> {
    match v? {
        AttrValue::Num(n) if n.is_finite() => Some(*n),
        AttrValue::Str(s) if !s.trim_matches(is_js_space).is_empty() => js_number(s),
        _ => None,
    }
}

/// A strictly positive number from an attribute (`stale_after_days=`).
pub(super) fn attr_positive(v: Option<&AttrValue>) -> Option<f64> {
    match v? {
        AttrValue::Num(n) => Some(*n),
        AttrValue::Str(s) => js_number(s),
        AttrValue::Bool(_) => None,
    }
    .filter(|n| *n > 0.0)
}

/// A strictly positive number from frontmatter (`stale_citation_days:`).
pub(super) fn json_positive(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => js_number(s),
        _ => None,
    }
    .filter(|n| n.is_finite() && *n > 0.0)
}

/// The string a value prints as (`String(v)` in the reference).
pub(super) fn display(v: &AttrValue) -> String {
    v.to_display_string()
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Parses an ISO-8601 date or date-time (`YYYY`, `YYYY-MM`, `YYYY-MM-DD`,
/// optionally `THH:MM[:SS[.fff]]` and `Z`/`±HH:MM`) to Unix milliseconds.
/// Times without an offset are read as UTC. Anything else is `None`.
pub(super) fn parse_iso_ms(s: &str) -> Option<i64> {
    let b = s.trim_matches(is_js_space).as_bytes();
    let num = |from: usize, len: usize| -> Option<i64> {
        let part = b.get(from..from + len)?;
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        std::str::from_utf8(part).ok()?.parse().ok()
    };
    let year = num(0, 4)?;
    let (mut month, mut day, mut i) = (1u32, 1u32, 4usize);
    if b.get(i) == Some(&b'-') {
        month = u32::try_from(num(i + 1, 2)?).ok()?;
        i += 3;
        if b.get(i) == Some(&b'-') {
            day = u32::try_from(num(i + 1, 2)?).ok()?;
            i += 3;
        }
    }
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let mut ms = days_from_civil(year, month, day) * 86_400_000;
    if i == b.len() {
        return Some(ms);
    }
    if !matches!(b.get(i), Some(b'T' | b't')) || i < 10 {
        return None;
    }
    let (h, mi) = (num(i + 1, 2)?, num(i + 4, 2)?);
    if b.get(i + 3) != Some(&b':') || h > 24 || mi > 59 {
        return None;
    }
    ms += (h * 60 + mi) * 60_000;
    i += 6;
    if b.get(i) == Some(&b':') {
        let sec = num(i + 1, 2)?;
        if sec > 59 {
            return None;
        }
        ms += sec * 1000;
        i += 3;
        if b.get(i) == Some(&b'.') {
            let start = i + 1;
            i = start;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == start {
                return None;
            }
            let frac = std::str::from_utf8(b.get(start..i.min(start + 3))?).ok()?;
            let frac_ms: i64 = format!("{frac:0<3}").parse().ok()?;
            ms += frac_ms;
        }
    }
    match b.get(i) {
        None => Some(ms),
        Some(b'Z' | b'z') if i + 1 == b.len() => Some(ms),
        Some(sign @ (b'+' | b'-')) => {
            let (oh, om) = (num(i + 1, 2)?, num(i + 4, 2)?);
            if b.get(i + 3) != Some(&b':') || i + 6 != b.len() {
                return None;
            }
            let offset = (oh * 60 + om) * 60_000;
            Some(if *sign == b'+' {
                ms - offset
            } else {
                ms + offset
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_number_matches_javascript_for_common_forms() {
        assert_eq!(js_number(" 42 "), Some(42.0));
        assert_eq!(js_number(".5"), Some(0.5));
        assert_eq!(js_number("5."), Some(5.0));
        assert_eq!(js_number("-1e3"), Some(-1000.0));
        assert_eq!(js_number("0x1F"), Some(31.0));
        for bad in [
            "", "  ", "abc", "inf", "NaN", "Infinity", "1e999", "1,000", "-0x10",
        ] {
            assert_eq!(js_number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn truthiness() {
        assert!(!truthy(None));
        assert!(!truthy(Some(&AttrValue::Str(Default::default()))));
        assert!(!truthy(Some(&AttrValue::Num(0.0))));
        assert!(!truthy(Some(&AttrValue::Bool(false))));
        assert!(truthy(Some(&AttrValue::Str("x".into()))));
        assert!(truthy(Some(&AttrValue::Num(-1.0))));
    }

    #[test]
    fn iso_dates() {
        assert_eq!(parse_iso_ms("1970-01-01"), Some(0));
        assert_eq!(parse_iso_ms("1970-01-02"), Some(86_400_000));
        assert_eq!(parse_iso_ms("2024"), parse_iso_ms("2024-01-01"));
        assert_eq!(parse_iso_ms("2000-03-01"), Some(951_868_800_000));
        assert_eq!(parse_iso_ms("1970-01-01T01:00:00.5Z"), Some(3_600_500));
        assert_eq!(parse_iso_ms("1970-01-01T01:00+01:00"), Some(0));
        for bad in [
            "",
            "yesterday",
            "2024-13-01",
            "2023-02-29",
            "2024-01-01T",
            "2024-1-1",
            "2024-01-01Zx",
        ] {
            assert_eq!(parse_iso_ms(bad), None, "{bad:?}");
        }
        assert!(parse_iso_ms("2024-02-29").is_some());
    }
}

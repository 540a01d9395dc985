//! The two YAML facilities the dataset ops need: loading a body into JSON
//! values (order kept; the conversion is `doc::yaml`'s, shared with
//! frontmatter), and writing one row as a js-yaml style flow sequence
//! (`[legal, 3.4, '14']`).

use serde_json::Value;

use crate::patch::line_text::js_num;

/// Loads YAML text through the crate's one converter
/// ([`crate::doc::yaml`]); `None` when it is not valid YAML.
pub(super) fn load(text: &str) -> Option<Value> {
    crate::doc::yaml::yaml_to_json_value(text).ok()
}

/// A number value as JavaScript prints it.
pub(super) fn number_text(n: &serde_json::Number) -> String {
    match n.as_i64() {
        // Beyond 2^53 JavaScript only has the nearest double.
        Some(i) if i.unsigned_abs() <= 1 << 53 => i.to_string(),
        _ => js_num(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// One row as a flow sequence.
pub(super) fn flow_row(cells: &[Value]) -> String {
    let parts: Vec<String> = cells.iter().map(flow_value).collect();
    format!("[{}]", parts.join(", "))
}

fn flow_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_text(n),
        Value::String(s) => scalar(s),
        Value::Array(items) => flow_row(items),
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}: {}", scalar(k), flow_value(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// Whether a plain scalar `s` would read back as something other than a string.
fn resolves_as_non_string(s: &str) -> bool {
    if matches!(
        s,
        "" | "~"
            | "null"
            | "Null"
            | "NULL"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
    ) {
        return true;
    }
    // YAML 1.1 booleans and base-60 numbers: YAML 1.2 reads them as
    // strings, but 1.1 readers (and js-yaml's compatible dump, which the
    // reference uses) do not, so they are quoted too.
    if matches!(
        s,
        "y" | "Y"
            | "yes"
            | "Yes"
            | "YES"
            | "n"
            | "N"
            | "no"
            | "No"
            | "NO"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    ) || is_base60(s)
    {
        return true;
    }
    let lower = s.to_ascii_lowercase();
    let unsigned = lower.trim_start_matches(['-', '+']);
    if matches!(unsigned, ".inf" | ".nan") {
        return true;
    }
    if let Some(h) = unsigned.strip_prefix("0x") {
        return !h.is_empty() && h.bytes().all(|c| c.is_ascii_hexdigit() || c == b'_');
    }
    if let Some(o) = unsigned.strip_prefix("0o") {
        return !o.is_empty() && o.bytes().all(|c| (b'0'..=b'7').contains(&c) || c == b'_');
    }
    if let Some(b) = unsigned.strip_prefix("0b") {
        return !b.is_empty() && b.bytes().all(|c| c == b'0' || c == b'1' || c == b'_');
    }
    // Decimal int/float: digits, optional fraction, optional exponent.
    let (mant, exp) = match unsigned.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (unsigned, None),
    };
    let digits = |t: &str| t.bytes().all(|c| c.is_ascii_digit() || c == b'_');
    let mant_ok = match mant.split_once('.') {
        Some((i, f)) => (!i.is_empty() || !f.is_empty()) && digits(i) && digits(f),
        None => !mant.is_empty() && digits(mant),
    };
    let exp_ok = exp.is_none_or(|e| {
        let e = e.trim_start_matches(['-', '+']);
        !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit())
    });
    mant_ok
        && exp_ok
        && mant
            .bytes()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || c == b'.')
}

/// `[-+]?[0-9_]+(:[0-9_]+)+(\.[0-9_]*)?` (YAML 1.1 sexagesimal).
fn is_base60(s: &str) -> bool {
    let t = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit() || c == b'_');
    let mut parts = int.split(':');
    parts.clone().count() >= 2
        && parts.all(digits)
        && frac.bytes().all(|c| c.is_ascii_digit() || c == b'_')
}

fn plain_ok(s: &str) -> bool {
    let Some(first) = s.chars().next() else {
        return false;
    };
    if first.is_whitespace() || "-?:,[]{}#&*!|>'\"%@`=".contains(first) {
        return false;
    }
    if s.ends_with(char::is_whitespace) || s.ends_with(':') {
        return false;
    }
    if s.contains(": ") || s.contains(" #") {
        return false;
    }
    if s.chars().any(|c| ",[]{}".contains(c) || c.is_control()) {
        return false;
    }
    !resolves_as_non_string(s)
}

/// A string scalar: plain when safe, else single-quoted, else double-quoted.
pub(super) fn scalar(s: &str) -> String {
    if plain_ok(s) {
        return s.to_string();
    }
    if s.chars().any(char::is_control) {
        let mut out = String::from("\"");
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\x{:02X}", c as u32)),
                c => out.push(c),
            }
        }
        out.push('"');
        return out;
    }
    format!("'{}'", s.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flow_rows_like_js_yaml() {
        assert_eq!(
            flow_row(&[json!("legal"), json!(3.4), json!(14)]),
            "[legal, 3.4, 14]"
        );
        assert_eq!(
            flow_row(&[json!("14"), json!(""), json!(null), json!("a, b")]),
            "['14', '', null, 'a, b']"
        );
        assert_eq!(flow_row(&[json!("true"), json!("it's")]), "['true', it's]");
        // YAML 1.1 booleans and sexagesimals are quoted; look-alikes are not.
        assert_eq!(
            flow_row(&[json!("yes"), json!("Off"), json!("n"), json!("1:30")]),
            "['yes', 'Off', 'n', '1:30']"
        );
        assert_eq!(
            flow_row(&[json!("yess"), json!("oN"), json!("1:x"), json!("12")]),
            "[yess, oN, 1:x, '12']"
        );
    }

    #[test]
    fn loads_like_frontmatter() {
        // One converter (doc::yaml): blank text is null, u64 stays exact,
        // and nesting past the old 64-level limit is kept.
        assert_eq!(load(""), Some(Value::Null));
        assert_eq!(load("[18446744073709551615]"), Some(json!([u64::MAX])));
        let deep = format!("{}x{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(flow_row(&[load(&deep).unwrap()]), format!("[{deep}]"));
        assert_eq!(load("a: [1"), None);
    }

    #[test]
    fn loads_in_order() {
        let v = load("schema:\n  b: string\n  a: number\nrows:\n  - [x, 1]\n").unwrap();
        let keys: Vec<&String> = v["schema"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(v["rows"][0][1], json!(1));
    }
}

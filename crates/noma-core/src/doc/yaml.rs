//! YAML → JSON, the one converter for the whole crate: frontmatter
//! (`parse.rs`) and `::dataset` bodies (`patch::dataset::yaml_flow`) both read YAML
//! through [`yaml_to_json_value`], so a value means the same thing in a
//! document's metadata and in a dataset patch.
//!
//! Conversion rules: mapping order is kept; integers stay exact (`i64`, and
//! `u64` above `i64::MAX`); other numbers go through [`number_to_json`]
//! (whole floats become integers, NaN and ±infinity become `null`, as
//! `JSON.stringify` writes them); tags are dropped (the tagged value is
//! kept); a non-string mapping key becomes its JSON text (`1`, `true`,
//! `null`, `["a"]`).

use serde_json::{Map, Value};

use super::ast::number_to_json;

/// Nesting deeper than this converts to `null`. serde_yaml_ng refuses input
/// nested more than 128 collections deep (a parse error), so only tags,
/// which add a level here but not there, can reach it.
pub const MAX_DEPTH: usize = 128;

/// Parses YAML text into JSON (`null` for an empty document).
pub fn yaml_to_json_value(raw: &str) -> Result<Value, serde_yaml_ng::Error> {
    if raw.trim().is_empty() {
        return Ok(Value::Null);
    }
    let value: serde_yaml_ng::Value = serde_yaml_ng::from_str(raw)?;
    Ok(yaml_to_json(value, 0))
}

/// `^[\w"'][\w\s"'.-]*:(?:\s|$)` on the first non-blank, non-comment line.
pub(super) fn looks_like_yaml_mapping(raw: &str) -> bool {
    let Some(first) = raw
        .split('\n')
        .find(|l| !l.trim().is_empty() && !l.trim().starts_with('#'))
    else {
        return false;
    };
    let b = first.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    if !b
        .first()
        .is_some_and(|&c| word(c) || c == b'"' || c == b'\'')
    {
        return false;
    }
    // The key part may contain word chars, whitespace, quotes, dots and dashes.
    for (k, &c) in b.iter().enumerate().skip(1) {
        if c == b':' {
            return b.get(k + 1).is_none_or(|n| n.is_ascii_whitespace());
        }
        if !(word(c) || c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'.' | b'-')) {
            return false;
        }
    }
    false
}

/// Converts a parsed YAML value; anything nested deeper than [`MAX_DEPTH`]
/// becomes `null`.
fn yaml_to_json(v: serde_yaml_ng::Value, depth: usize) -> Value {
    use serde_yaml_ng::Value as Y;
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    match v {
        Y::Null => Value::Null,
        Y::Bool(b) => Value::Bool(b),
        Y::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::from(i)
            } else if let Some(u) = n.as_u64() {
                Value::from(u)
            } else {
                n.as_f64().map_or(Value::Null, number_to_json)
            }
        }
        Y::String(s) => Value::String(s),
        Y::Sequence(seq) => Value::Array(
            seq.into_iter()
                .map(|x| yaml_to_json(x, depth + 1))
                .collect(),
        ),
        Y::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                let key = match k {
                    Y::String(s) => s,
                    other => match yaml_to_json(other, depth + 1) {
                        Value::String(s) => s,
                        j => j.to_string(),
                    },
                };
                out.insert(key, yaml_to_json(v, depth + 1));
            }
            Value::Object(out)
        }
        Y::Tagged(t) => yaml_to_json(t.value, depth + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn nested(depth: usize, tag: &str) -> String {
        format!("{}x{}", format!("{tag}[").repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn numbers_follow_json() {
        let v =
            yaml_to_json_value("[1, -2, 18446744073709551615, 2.5, 1.0e3, .nan, -.inf]").unwrap();
        // u64 above i64::MAX stays exact; whole floats become integers;
        // NaN and infinities become null, as JSON.stringify writes them.
        assert_eq!(v, json!([1, -2, u64::MAX, 2.5, 1000, null, null]));
        assert!(v[4].is_i64(), "{v}");
    }

    #[test]
    fn keys_and_tags() {
        let v = yaml_to_json_value("1: a\ntrue: b\n~: c\n[k]: d\n!t e: !t f\n").unwrap();
        assert_eq!(
            v,
            json!({"1": "a", "true": "b", "null": "c", "[\"k\"]": "d", "e": "f"})
        );
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["1", "true", "null", "[\"k\"]", "e"]);
    }

    #[test]
    fn blank_text_is_null_and_broken_text_is_an_error() {
        assert_eq!(yaml_to_json_value("").ok(), Some(Value::Null));
        assert_eq!(yaml_to_json_value(" \n\t\n").ok(), Some(Value::Null));
        assert_eq!(
            yaml_to_json_value("# only a comment").ok(),
            Some(Value::Null)
        );
        assert!(yaml_to_json_value("a: [1").is_err());
    }

    #[test]
    fn depth_limit() {
        // The parser itself takes 128 nested collections and no more, and
        // everything it takes converts in full.
        let deepest = yaml_to_json_value(&nested(128, "")).unwrap();
        let mut v = &deepest;
        for _ in 0..128 {
            v = &v[0];
        }
        assert_eq!(v, &json!("x"));
        assert!(yaml_to_json_value(&nested(129, "")).is_err());
        // Tags add a level here: past MAX_DEPTH the value is null.
        let tagged = yaml_to_json_value(&nested(100, "!t ")).unwrap();
        let mut v = &tagged;
        let mut levels = 0;
        while let Some(inner) = v.get(0) {
            v = inner;
            levels += 1;
        }
        assert_eq!(v, &Value::Null);
        assert_eq!(levels, MAX_DEPTH / 2);
    }
}

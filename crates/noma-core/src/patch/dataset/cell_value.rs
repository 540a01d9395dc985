//! Cell values as the reference reads them: JavaScript's number and
//! boolean parsing, coercion by a column's schema type, the type inferred
//! for a new column, and a value's text.

use serde_json::Value;

use super::yaml_flow;
use crate::doc::number_to_json;
use crate::patch::line_text;

/// JavaScript's `Number(s)` for strings: `None` when NaN.
fn js_number(s: &str) -> Option<f64> {
    let t = line_text::js_trim(s);
    if t.is_empty() {
        return Some(0.0);
    }
    let radix = |p: &str, r: u32| u64::from_str_radix(p, r).ok().map(|v| v as f64);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return radix(h, 16);
    }
    if let Some(o) = t.strip_prefix("0o").or_else(|| t.strip_prefix("0O")) {
        return radix(o, 8);
    }
    if let Some(b) = t.strip_prefix("0b").or_else(|| t.strip_prefix("0B")) {
        return radix(b, 2);
    }
    match t.trim_start_matches(['+', '-']) {
        "Infinity" => {
            return Some(if t.starts_with('-') {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            })
        }
        u if u.is_empty()
            || !u
                .bytes()
                .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-')) =>
        {
            return None
        }
        _ => {}
    }
    t.parse::<f64>().ok()
}

fn finite_number(s: &str) -> Option<f64> {
    js_number(s).filter(|n| n.is_finite())
}

fn boolean_text(s: &str) -> Option<bool> {
    match line_text::js_trim(s).to_lowercase().as_str() {
        "true" | "yes" | "1" => Some(true),
        "false" | "no" | "0" => Some(false),
        _ => None,
    }
}

fn schema_type(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.to_lowercase()),
        Value::Object(m) => m.get("type").and_then(Value::as_str).map(str::to_lowercase),
        _ => None,
    }
}

pub(super) fn coerce(value: &str, schema: Option<&Value>) -> Value {
    match schema_type(schema).as_deref() {
        Some("number" | "integer") => {
            if line_text::js_trim(value).is_empty() {
                return Value::Null;
            }
            finite_number(value).map_or_else(|| Value::String(value.into()), number_to_json)
        }
        Some("boolean") => {
            if line_text::js_trim(value).is_empty() {
                return Value::Null;
            }
            boolean_text(value).map_or_else(|| Value::String(value.into()), Value::Bool)
        }
        Some(_) => Value::String(value.into()),
        None => {
            let t = line_text::js_trim(value);
            if t.is_empty() {
                return Value::String(value.into());
            }
            if let Some(b) = boolean_text(t) {
                return Value::Bool(b);
            }
            let numeric_start = t
                .strip_prefix('-')
                .unwrap_or(t)
                .starts_with(|c: char| c.is_ascii_digit());
            match finite_number(t) {
                Some(n) if numeric_start => number_to_json(n),
                _ => Value::String(value.into()),
            }
        }
    }
}

pub(super) fn infer_type(values: &[String]) -> &'static str {
    let present: Vec<&str> = values
        .iter()
        .map(|v| line_text::js_trim(v))
        .filter(|v| !v.is_empty())
        .collect();
    if present.is_empty() {
        "string"
    } else if present.iter().all(|v| finite_number(v).is_some()) {
        "number"
    } else if present.iter().all(|v| boolean_text(v).is_some()) {
        "boolean"
    } else {
        "string"
    }
}

pub(super) fn scalar_text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => yaml_flow::number_text(n),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coercion_follows_schema() {
        assert_eq!(
            coerce("3.8", Some(&Value::String("number".into()))),
            serde_json::json!(3.8)
        );
        assert_eq!(
            coerce("x", Some(&Value::String("number".into()))),
            serde_json::json!("x")
        );
        assert_eq!(coerce("14", None), serde_json::json!(14));
        assert_eq!(coerce("yes", None), serde_json::json!(true));
        assert_eq!(
            coerce("", Some(&Value::String("number".into()))),
            Value::Null
        );
        assert_eq!(infer_type(&["14".into(), "".into()]), "number");
    }
}

//! JavaScript value semantics: values written the way `JSON.stringify`
//! writes them (compact, keys in JavaScript property order, numbers in
//! JavaScript notation) and read the way `String(value)` reads them.

use serde_json::{Map, Value};

use crate::patch::dataset::cell_value::scalar_text;
use crate::patch::dataset::yaml_flow::number_text;

/// An object's keys in JavaScript property order: array-index keys
/// ascending, then the rest in insertion order.
pub(super) fn js_keys(m: &Map<String, Value>) -> Vec<&String> {
    let mut index_keys: Vec<(u32, &String)> = m
        .keys()
        .filter_map(|k| array_index(k).map(|i| (i, k)))
        .collect();
    index_keys.sort_unstable_by_key(|(i, _)| *i);
    index_keys
        .into_iter()
        .map(|(_, k)| k)
        .chain(m.keys().filter(|k| array_index(k).is_none()))
        .collect()
}

/// A canonical array index (`0` to `4294967294`).
fn array_index(k: &str) -> Option<u32> {
    if k.is_empty() || (k.len() > 1 && k.starts_with('0')) || !k.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    k.parse::<u32>().ok().filter(|&i| i < u32::MAX)
}

/// `JSON.stringify` of a string.
pub(super) fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// `JSON.stringify(value)` (compact).
pub(super) fn js_json(v: &Value) -> String {
    let mut out = String::new();
    write_js_json(v, &mut out);
    out
}

pub(super) fn js_json_array(cells: &[Value]) -> String {
    let mut out = String::from("[");
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_js_json(c, &mut out);
    }
    out.push(']');
    out
}

// Recursion depth is bounded by serde_json's parse depth limit (128) for
// parsed values; coerced cells are scalars.
fn write_js_json(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number_text(n)),
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => out.push_str(&js_json_array(items)),
        Value::Object(m) => {
            out.push('{');
            for (i, k) in js_keys(m).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&json_string(k));
                out.push(':');
                if let Some(val) = m.get(k) {
                    write_js_json(val, out);
                }
            }
            out.push('}');
        }
    }
}

/// JavaScript's `String(value)` for a parsed JSON value.
pub(super) fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Array(items) => items
            .iter()
            .map(|x| match x {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
        other => scalar_text(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn js_semantics() {
        let v: Value =
            serde_json::from_str(r#"{"b":1,"2":2,"a":[1.5,"x\n",null],"1":true}"#).unwrap();
        assert_eq!(
            js_json(&v),
            r#"{"1":true,"2":2,"b":1,"a":[1.5,"x\n",null]}"#
        );
        assert_eq!(js_string(&json!([1, null, "a"])), "1,,a");
        assert_eq!(
            js_json(&json!(12345678901234567890u64)),
            "12345678901234567000"
        );
        assert_eq!(array_index("01"), None);
        assert_eq!(array_index("7"), Some(7));
    }
}

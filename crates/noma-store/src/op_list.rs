//! Where a patch request's op-list comes from on a command line: JSON
//! text (`--op`), a file or stdin (`--ops`), in any of the accepted
//! shapes: one op object, an array of ops, or `{"ops": [...]}`.

use std::path::Path;

use serde_json::Value;

/// Reads the op-list from `op` (JSON text) or the file `ops` (`-`: stdin).
pub fn read(op: Option<&str>, ops: Option<&Path>) -> Result<Vec<Value>, String> {
    let (text, from) = match (op, ops) {
        (Some(s), _) => (s.to_string(), "--op".to_string()),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(|e| format!("stdin: {e}"))?;
            (s, "stdin".into())
        }
        (None, Some(p)) => (
            crate::fsio::read_regular(p)
                .and_then(|b| {
                    String::from_utf8(b)
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })
                // One wording for a missing file across commands.
                .map_err(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => format!("{}: no such file", p.display()),
                    _ => format!("{}: {e}", p.display()),
                })?,
            p.display().to_string(),
        ),
        (None, None) => return Err("give --op JSON or --ops FILE".into()),
    };
    parse(&text, &from)
}

/// The op-list in `text`, read from `from` (named in the errors): a
/// non-empty list of JSON objects.
pub fn parse(text: &str, from: &str) -> Result<Vec<Value>, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "{from}: invalid JSON: {e}; quote every key and string (`noma schema patch-op` \
             shows each op's fields)"
        )
    })?;
    let ops = match value {
        Value::Array(a) => a,
        Value::Object(mut o) if o.contains_key("ops") && !o.contains_key("op") => {
            match o.remove("ops") {
                Some(Value::Array(a)) => a,
                _ => return Err(format!("{from}: `ops` must be an array")),
            }
        }
        v @ Value::Object(_) => vec![v],
        _ => return Err(format!("{from}: expected an op object or an array of ops")),
    };
    if ops.is_empty() {
        return Err(format!("{from}: the op-list is empty"));
    }
    if let Some(i) = ops.iter().position(|o| !o.is_object()) {
        return Err(format!("{from}: op {i} is not a JSON object"));
    }
    Ok(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_accepted_shape_is_a_list_of_objects() {
        let one = parse(r#"{"op": "delete_block", "id": "a"}"#, "--op").unwrap();
        assert_eq!(one.len(), 1);
        let list = parse(r#"[{"op": "a"}, {"op": "b"}]"#, "--op").unwrap();
        assert_eq!(list.len(), 2);
        let wrapped = parse(r#"{"ops": [{"op": "a"}]}"#, "f.json").unwrap();
        assert_eq!(wrapped[0]["op"], "a");
        assert_eq!(parse("[]", "x").unwrap_err(), "x: the op-list is empty");
        assert_eq!(
            parse(r#"[{"op": "a"}, 3]"#, "x").unwrap_err(),
            "x: op 1 is not a JSON object"
        );
        assert_eq!(
            parse(r#"{"ops": 3}"#, "x").unwrap_err(),
            "x: `ops` must be an array"
        );
        assert!(parse("nope", "x")
            .unwrap_err()
            .starts_with("x: invalid JSON: "));
        assert_eq!(
            read(None, None).unwrap_err(),
            "give --op JSON or --ops FILE"
        );
    }
}

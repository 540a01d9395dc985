//! Where a patch request's op-list comes from on a command line: JSON
//! text (`--op`), a file or stdin (`--ops`), in any of the accepted
//! shapes: one op object, an array of ops, or `{"ops": [...]}`.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// Why no op-list was read.
#[derive(Debug, thiserror::Error)]
pub enum OpListError {
    /// Neither `--op` nor `--ops` was given.
    #[error("give --op JSON or --ops FILE")]
    NoSource,
    /// Standard input could not be read.
    #[error("stdin: {0}")]
    Stdin(std::io::Error),
    /// The `--ops` file does not exist.
    #[error("{}: no such file", .0.display())]
    Missing(PathBuf),
    /// The `--ops` file could not be read as UTF-8 text.
    #[error("{}: {error}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// The text is not JSON.
    #[error(
        "{from}: invalid JSON: {error}; quote every key and string (`noma schema patch-op` \
         shows each op's fields)"
    )]
    InvalidJson {
        /// Where the text came from.
        from: String,
        /// The parser's complaint.
        error: serde_json::Error,
    },
    /// `{"ops": …}` whose `ops` is not an array.
    #[error("{from}: `ops` must be an array")]
    OpsNotArray {
        /// Where the text came from.
        from: String,
    },
    /// Neither an op object nor an array.
    #[error("{from}: expected an op object or an array of ops")]
    NotOps {
        /// Where the text came from.
        from: String,
    },
    /// An empty list.
    #[error("{from}: the op-list is empty")]
    Empty {
        /// Where the text came from.
        from: String,
    },
    /// An element that is not an object.
    #[error("{from}: op {index} is not a JSON object")]
    NotAnObject {
        /// Where the text came from.
        from: String,
        /// Its position in the list.
        index: usize,
    },
}

/// Reads the op-list from `op` (JSON text) or the file `ops` (`-`: stdin).
pub fn read(op: Option<&str>, ops: Option<&Path>) -> Result<Vec<Value>, OpListError> {
    let (text, from) = match (op, ops) {
        (Some(s), _) => (s.to_string(), "--op".to_string()),
        (None, Some(p)) if p.as_os_str() == "-" => {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
                .map_err(OpListError::Stdin)?;
            (s, "stdin".into())
        }
        (None, Some(p)) => (
            crate::fsio::read_regular(p)
                .and_then(|b| {
                    String::from_utf8(b)
                        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
                })
                // One wording for a missing file across commands.
                .map_err(|error| match error.kind() {
                    std::io::ErrorKind::NotFound => OpListError::Missing(p.to_path_buf()),
                    _ => OpListError::Unreadable {
                        path: p.to_path_buf(),
                        error,
                    },
                })?,
            p.display().to_string(),
        ),
        (None, None) => return Err(OpListError::NoSource),
    };
    parse(&text, &from)
}

/// The op-list in `text`, read from `from` (named in the errors): a
/// non-empty list of JSON objects.
pub fn parse(text: &str, from: &str) -> Result<Vec<Value>, OpListError> {
    let from = || from.to_string();
    let value: Value = serde_json::from_str(text).map_err(|error| OpListError::InvalidJson {
        from: from(),
        error,
    })?;
    let ops = match value {
        Value::Array(a) => a,
        Value::Object(mut o) if o.contains_key("ops") && !o.contains_key("op") => {
            match o.remove("ops") {
                Some(Value::Array(a)) => a,
                _ => return Err(OpListError::OpsNotArray { from: from() }),
            }
        }
        v @ Value::Object(_) => vec![v],
        _ => return Err(OpListError::NotOps { from: from() }),
    };
    if ops.is_empty() {
        return Err(OpListError::Empty { from: from() });
    }
    if let Some(i) = ops.iter().position(|o| !o.is_object()) {
        return Err(OpListError::NotAnObject {
            from: from(),
            index: i,
        });
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
        let said = |r: Result<Vec<Value>, OpListError>| r.unwrap_err().to_string();
        assert_eq!(said(parse("[]", "x")), "x: the op-list is empty");
        assert_eq!(
            said(parse(r#"[{"op": "a"}, 3]"#, "x")),
            "x: op 1 is not a JSON object"
        );
        assert_eq!(
            said(parse(r#"{"ops": 3}"#, "x")),
            "x: `ops` must be an array"
        );
        assert!(said(parse("nope", "x")).starts_with("x: invalid JSON: "));
        assert_eq!(said(read(None, None)), "give --op JSON or --ops FILE");
    }
}

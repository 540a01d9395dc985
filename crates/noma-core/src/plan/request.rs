//! Request checks: every op of a request must be an op of the v1.0
//! catalogue with the right field types before anything is recorded.

use serde_json::Value;

use crate::patch::PatchErrorCode;

/// An op that is not an op of the v1.0 catalogue (not a JSON object, an
/// unknown `op`, a missing field or a field of the wrong type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("op {index} of the request is not a v1.0 patch op: {message}; nothing was recorded")]
pub struct InvalidOp {
    /// 0-based position of the op in the request.
    pub index: usize,
    /// What is wrong with it.
    pub message: String,
    /// Whether the op names an op of the catalogue (then only a field is
    /// wrong).
    pub known_op: bool,
}

impl InvalidOp {
    /// The §3.5 code of the refusal: `unsupported_op` when the op is not
    /// in the catalogue (§3.1); a catalogue op with a missing or mistyped
    /// field is `invalid_content`, as the reference answers (§3.5 names
    /// no code for it).
    pub fn code(&self) -> PatchErrorCode {
        if self.known_op {
            PatchErrorCode::InvalidContent
        } else {
            PatchErrorCode::UnsupportedOp
        }
    }
}

/// Checks that every op of a request is an op of the v1.0 catalogue with
/// the right field types. A request that fails is refused whole and writes
/// nothing: it was never attempted. The extension op
/// [`crate::patch::REPLACE_LINES`] is refused here too: it records hand
/// edits and is written only by `noma record`, which plans directly.
pub fn check_request(ops: &[Value]) -> Result<(), InvalidOp> {
    for (index, op) in ops.iter().enumerate() {
        if !op.is_object() {
            return Err(InvalidOp {
                index,
                message: format!("expected a JSON object, got {}", json_kind(op)),
                known_op: false,
            });
        }
        if let Some(name) = crate::patch::op_name(op) {
            if !crate::patch::is_catalogue_op(name) {
                let message = if name == crate::patch::REPLACE_LINES {
                    format!("`{name}` records hand edits and is written only by `noma record`")
                } else if name == crate::patch::REMOVE_DOCUMENT {
                    format!(
                        "`{name}` records a document's removal and is written only by `noma rm`"
                    )
                } else {
                    crate::patch::unknown_op_message(name)
                };
                return Err(InvalidOp {
                    index,
                    message,
                    known_op: false,
                });
            }
        }
        let known_op = crate::patch::op_name(op).is_some();
        crate::patch::Op::parse(op).map_err(|e| InvalidOp {
            index,
            message: e.to_string(),
            known_op,
        })?;
    }
    Ok(())
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_request_of_non_ops_is_refused_before_anything_is_recorded() {
        for bad in [
            json!("delete_block"),
            json!(3),
            json!([]),
            json!(null),
            json!(true),
        ] {
            let e = check_request(&[json!({"op":"delete_block","id":"a"}), bad]).unwrap_err();
            assert_eq!(e.index, 1);
            assert_eq!(e.code(), PatchErrorCode::UnsupportedOp);
        }
        assert!(check_request(&[json!({"op":"explode","id":"a"})]).is_err());
        let lines = json!({"op": crate::patch::REPLACE_LINES, "line": 1, "old": "", "new": "x\n"});
        assert!(crate::patch::apply_one("", &lines).is_ok());
        let e = check_request(&[lines]).unwrap_err();
        assert!(e.message.contains("noma record"), "{e}");
        let e = check_request(&[crate::patch::removal_op("")]).unwrap_err();
        assert!(e.message.contains("noma rm"), "{e}");
        let e = check_request(&[json!({"op":"explode","id":"a"})]).unwrap_err();
        assert_eq!(e.code(), PatchErrorCode::UnsupportedOp);
        let e = check_request(&[json!({"id":"a"})]).unwrap_err();
        assert_eq!(e.code(), PatchErrorCode::UnsupportedOp);
        for bad in [
            json!({"op":"replace_body","id":"a"}),
            json!({"op":"rename_id","from":"a","to":3}),
        ] {
            let e = check_request(&[bad]).unwrap_err();
            assert_eq!(e.code(), PatchErrorCode::InvalidContent, "{e}");
        }
        assert!(check_request(&[json!({"op":"delete_block","id":"a"})]).is_ok());
    }
}

//! `x-noma/remove_document`: the second extension op, written only by
//! `noma rm` as a document's final record.
//!
//! ```json
//! {"op":"x-noma/remove_document","sha256":"…"}
//! ```
//!
//! The op turns the document into the empty one, so its record's
//! `post_sha256` is the sha256 of no bytes and its `pre_sha256` names the
//! state that was removed. `sha256` names that state inside the op, which
//! a signature binds (the chain's hashes are not bound): the op applies
//! only to the document it names, so a signed removal cannot be replayed
//! onto another document. Removals written before the field existed have
//! none and apply to any state. The transcript (and the provenance
//! sidecar beside it) stays in the repository as the document's tombstone:
//! it replays to the empty document, which is what an absent file reads as
//! when the transcript ends with this op. Like
//! [`super::REPLACE_LINES`] it is outside the v1.0 catalogue: agents'
//! patch requests refuse it as `unsupported_op`
//! ([`crate::plan::check_request`]).

/// The op's name (namespaced: it is not a v1.0 op).
pub const REMOVE_DOCUMENT: &str = "x-noma/remove_document";

/// The op of a removal record removing the document `source`.
pub fn removal_op(source: &str) -> serde_json::Value {
    let sha256 = crate::doc::hash::sha256_hex(source.as_bytes());
    serde_json::json!({ "op": REMOVE_DOCUMENT, "sha256": sha256 })
}

/// Applies a removal to `source`: the empty document, when `sha256` (if
/// given) names `source`.
pub(super) fn remove(source: &str, sha256: Option<&str>) -> super::OpResult<String> {
    match sha256 {
        Some(want) if crate::doc::hash::sha256_hex(source.as_bytes()) != want => super::fail(
            super::PatchErrorCode::ShaMismatch,
            format!(
                "this removal names the document with sha256 {}, not this one",
                want.get(..8).unwrap_or(want)
            ),
        ),
        _ => Ok(String::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_document_becomes_the_empty_one() {
        for src in ["# T\n\nprose\n", "\u{feff}::claim{id=\"c\"}\nX.\n::\n", "a"] {
            assert_eq!(crate::patch::apply_one(src, &removal_op(src)).unwrap(), "");
            let unnamed = serde_json::json!({ "op": REMOVE_DOCUMENT });
            assert_eq!(crate::patch::apply_one(src, &unnamed).unwrap(), "");
        }
        let e = crate::patch::apply_one(
            "a\n",
            &serde_json::json!({"op": REMOVE_DOCUMENT, "id": "x"}),
        )
        .unwrap_err();
        assert_eq!(
            e.code,
            crate::patch::PatchErrorCode::InvalidContent,
            "{e:?}"
        );
    }

    /// A removal naming one document does not apply to another.
    #[test]
    fn a_removal_applies_only_to_the_document_it_names() {
        let e = crate::patch::apply_one("b\n", &removal_op("a\n")).unwrap_err();
        assert_eq!(e.code, crate::patch::PatchErrorCode::ShaMismatch, "{e:?}");
    }
}

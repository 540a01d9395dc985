//! `x-noma/remove_document`: the second extension op, written only by
//! `noma rm` as a document's final record.
//!
//! ```json
//! {"op":"x-noma/remove_document"}
//! ```
//!
//! The op takes no field and turns any document into the empty one, so its
//! record's `post_sha256` is the sha256 of no bytes and its `pre_sha256`
//! names the state that was removed. The transcript (and the provenance
//! sidecar beside it) stays in the repository as the document's tombstone:
//! it replays to the empty document, which is what an absent file reads as
//! when the transcript ends with this op. Like
//! [`super::REPLACE_LINES`] it is outside the v1.0 catalogue: agents'
//! patch requests refuse it as `unsupported_op`
//! (`noma_store::engine::check_request`).

/// The op's name (namespaced: it is not a v1.0 op).
pub const REMOVE_DOCUMENT: &str = "x-noma/remove_document";

/// The op of a removal record.
pub fn removal_op() -> serde_json::Value {
    serde_json::json!({ "op": REMOVE_DOCUMENT })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_document_becomes_the_empty_one() {
        for src in ["# T\n\nprose\n", "\u{feff}::claim{id=\"c\"}\nX.\n::\n", "a"] {
            assert_eq!(crate::patch::apply_one(src, &removal_op()).unwrap(), "");
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
}

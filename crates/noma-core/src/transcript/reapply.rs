//! Re-applying a recorded op onto the state it starts from: the step
//! every replay takes (`noma replay`, the hook, the merge driver, the PR
//! check, `noma record`, block history). Each caller checks the record's
//! `pre_sha256` its own way and words the outcome for its own report.

use crate::doc::hash::sha256_hex;
use crate::doc::ParseMemo;
use crate::patch::{apply_ops_with, PatchError};

use super::Record;

/// A state an op left, with its sha256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reapplied {
    /// The document after the op.
    pub text: String,
    /// Its sha256, hex.
    pub sha256: String,
}

/// Why an applied record's op does not reproduce the record.
#[derive(Debug, Clone)]
pub enum ReapplyError {
    /// The op fails on the state.
    Fails(PatchError),
    /// The op applies but leaves another state than the record's
    /// `post_sha256`: the state it left.
    Differs(Reapplied),
}

/// Re-applies the applied record `rec`'s op onto `text`, the state its
/// `pre_sha256` names (the caller checks that), parsing `text` through
/// `memo`; the state left must hash to the record's `post_sha256`.
pub fn reapply(memo: &mut ParseMemo, text: &str, rec: &Record) -> Result<Reapplied, ReapplyError> {
    let next =
        apply_ops_with(memo, text, std::slice::from_ref(&rec.op)).map_err(ReapplyError::Fails)?;
    let sha256 = sha256_hex(next.as_bytes());
    let left = Reapplied { text: next, sha256 };
    if left.sha256 == rec.post_sha256 {
        Ok(left)
    } else {
        Err(ReapplyError::Differs(left))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(op: serde_json::Value, pre: &str, post: &str) -> Record {
        let mut r = super::super::tests::sample();
        r.op = op;
        r.pre_sha256 = sha256_hex(pre.as_bytes());
        r.post_sha256 = sha256_hex(post.as_bytes());
        r.patch_result = super::super::PatchResult::Applied;
        r
    }

    #[test]
    fn the_three_outcomes() {
        let pre = "# D\n\n::note{id=\"n\"}\nold\n::\n";
        let post = "# D\n\n::note{id=\"n\"}\nnew\n::\n";
        let op = serde_json::json!({"op": "replace_block", "id": "n", "content": "::note{id=\"n\"}\nnew\n::"});
        let mut memo = ParseMemo::new();
        let ok = reapply(&mut memo, pre, &record(op.clone(), pre, post)).unwrap();
        assert_eq!(ok.text, post);
        assert_eq!(ok.sha256, sha256_hex(post.as_bytes()));
        match reapply(&mut memo, pre, &record(op, pre, "other")) {
            Err(ReapplyError::Differs(left)) => assert_eq!(left.text, post),
            other => panic!("{other:?}"),
        }
        let missing = serde_json::json!({"op": "replace_block", "id": "zz", "content": "::note{id=\"zz\"}\nx\n::"});
        assert!(matches!(
            reapply(&mut memo, pre, &record(missing, pre, post)),
            Err(ReapplyError::Fails(_))
        ));
    }
}

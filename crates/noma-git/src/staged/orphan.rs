//! A transcript staged without its document: deleted, moved away from,
//! or left behind by a merge across a move.

use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use noma_core::diag::shell_word;
use noma_core::transcript::transcript_path;

/// A document missing from the index: its transcript must not stay.
pub(super) fn orphan(
    g: &Guard<'_>,
    staged: &Staged,
    doc: &str,
    head_path: &str,
) -> Result<Option<Finding>, GitError> {
    let tpath = transcript_path(doc);
    if g.repo.staged_blob(staged, &tpath)?.is_none() {
        return Ok(None); // both gone (or neither there): nothing to check
    }
    let at_head = g.reference_blob(head_path)?.is_some();
    let f = if head_path != doc && at_head {
        Finding::error(
            "transcript-orphaned",
            &tpath,
            None,
            format!("the transcript moved but its document {head_path} did not move along"),
        )
        .fix(format!(
            "git mv {head_path_sh} {doc_sh}",
            head_path_sh = shell_word(head_path),
            doc_sh = shell_word(doc)
        ))
    } else if at_head {
        Finding::error(
            "transcript-orphaned",
            &tpath,
            None,
            format!("{doc} is deleted but its transcript stays, and it records no removal"),
        )
        .fix(format!(
            "keep the document (git restore --staged --worktree --source=HEAD {doc_sh}), then remove it with a record: noma rm {doc_sh}",
            doc_sh = shell_word(doc),
        ))
    } else if let Some(moved) = moved_copy_of(g, staged, &tpath)? {
        // A merge across a rename git did not detect for the transcript
        // (its records are long unique lines) leaves the other branch's
        // copy at the old path. While the operation is in progress its
        // records are merged at the new path by `noma repair`, which keeps
        // their actors; recording them would make them the committer's.
        if let Some(fix) = repair_during_operation(g, doc, &moved) {
            return Ok(Some(
                Finding::error(
                    "transcript-orphaned",
                    &tpath,
                    None,
                    format!(
                        "the transcript is staged without its document {doc}; it starts with the records of {moved}, so the document moved there and this is the other side's copy, left by git at the old path: noma repair merges its records into {moved} (their actors and signatures kept) and removes it"
                    ),
                )
                .fix(fix),
            ));
        }
        Finding::error(
            "transcript-orphaned",
            &tpath,
            None,
            format!(
                "the transcript is staged without its document {doc}; it starts with the records of {moved}, so the document moved there and this is an old copy (a merge across the move leaves it): record what it added with `noma record` on the moved document, then remove it"
            ),
        )
        // Idempotent: another finding's fix (the moved document's repair)
        // may have removed it already.
        .fix(format!(
            "git rm -q -f --ignore-unmatch {tpath_sh}",
            tpath_sh = shell_word(&tpath)
        ))
    } else {
        Finding::error(
            "transcript-orphaned",
            &tpath,
            None,
            format!("the transcript is staged without its document {doc}"),
        )
        .fix(format!("git add {doc_sh}", doc_sh = shell_word(doc)))
    };
    Ok(Some(f))
}

/// During a merge, rebase or cherry-pick, the `noma repair` fix for the
/// document moved from `doc` to the document of `moved` (a transcript
/// path) by one side of it; None otherwise.
fn repair_during_operation(g: &Guard<'_>, doc: &str, moved: &str) -> Option<String> {
    let new = noma_core::transcript::document_path(moved)?;
    let head = g.head?;
    let (other, base) = crate::merge::moved::operation_commits(g.repo, head)?;
    let old = crate::merge::moved::moved_from(g.repo, base, &[head, other], new)?;
    if old != doc {
        return None;
    }
    let sidecar = [head, other].iter().any(|c| {
        [new, doc].iter().any(|p| {
            let side = noma_provenance::sidecar::sidecar_rel(p);
            g.repo.blob_id_at(*c, &side).ok().flatten().is_some()
        })
    });
    Some(super::merging::repair_fix(g, new, doc, sidecar))
}

/// Another staged transcript whose first line is the first line of
/// the one at `tpath`: the same history under a new path.
fn moved_copy_of(g: &Guard<'_>, staged: &Staged, tpath: &str) -> Result<Option<String>, GitError> {
    let first_line = |b: &[u8]| {
        b.split_inclusive(|&c| c == b'\n')
            .next()
            .map(<[u8]>::to_vec)
    };
    let Some(ours) = g
        .repo
        .staged_blob(staged, tpath)?
        .and_then(|b| first_line(&b))
    else {
        return Ok(None);
    };
    for other in g.repo.index_paths_ending_with(&transcript_path(".noma"))? {
        if other == tpath {
            continue;
        }
        let first = g.repo.index_blob(&other)?.and_then(|b| first_line(&b));
        if first.as_deref() == Some(ours.as_slice()) {
            return Ok(Some(other));
        }
    }
    Ok(None)
}

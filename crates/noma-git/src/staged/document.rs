//! The check of one staged document: its bytes, the validator, then its
//! transcript (see the parent module's docs for the order), and the
//! causes a failed transcript check is traced to (a join, records or
//! changes left unstaged).

use super::findings::{
    joined_finding, missing_transcript_finding, removed_transcript_finding, too_large,
};
use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use noma_core::diag::{shell_word, Severity};
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::transcript_path;
use noma_merge::joined;

/// The findings for the staged document at `path` (at `head_path` in
/// the reference commit) and whether it has a transcript to verify.
pub(super) fn check_doc(
    g: &Guard<'_>,
    staged: &Staged,
    path: &str,
    head_path: &str,
    bytes: &[u8],
) -> Result<(Vec<Finding>, bool), GitError> {
    if let Some(f) = too_large(path, bytes.len()) {
        return Ok((vec![f], false));
    }
    let text = match noma_core::doc::source::decode(path, bytes) {
        Ok(t) => t,
        Err(e) => {
            let f = Finding::error("not-text", path, None, format!("staged content: {e}")).fix(
                format!(
                    "save it as UTF-8 text, then git add {path_sh}",
                    path_sh = shell_word(path)
                ),
            );
            return Ok((vec![f], false));
        }
    };
    let mut out = Vec::new();
    validate(g, staged, path, text, &mut out)?;
    let tpath = transcript_path(path);
    let head_tpath = transcript_path(head_path);
    let paths = [path, head_path, tpath.as_str()];
    if let Some(found) = super::streamed::streamed_append(g, staged, paths, text)? {
        out.extend(found);
        return Ok((out, true));
    }
    let staged_t = g.repo.staged_blob(staged, &tpath)?;
    let head_t = g.reference_blob(&head_tpath)?;
    let Some(staged_t) = staged_t else {
        if let Some(f) = restored_under_old_name(g, staged, path)? {
            out.push(f);
            return Ok((out, false));
        }
        out.extend(without_staged_transcript(
            g,
            paths,
            &head_tpath,
            head_t.is_some(),
            text,
        )?);
        return Ok((out, false));
    };
    out.extend(check_staged_transcript(g, paths, head_t, &staged_t, text)?);
    if !out.iter().any(|f| f.blocking) {
        remember_end(g, staged, &tpath, &staged_t)?;
    }
    Ok((out, true))
}

/// Remembers how the accepted staged transcript `bytes` (at `tpath`)
/// ends, so the next commit's append reads only its own staged blob
/// ([`super::streamed::streamed_append`]): this check held it whole already.
fn remember_end(g: &Guard<'_>, staged: &Staged, tpath: &str, bytes: &[u8]) -> Result<(), GitError> {
    let end = noma_core::transcript::prefix::End::of(bytes);
    if let (Some(end), Some(id)) = (end, g.repo.staged_blob_id(staged, tpath)?) {
        g.cache.remember_transcript_ends(&[(id.as_bytes(), &end)]);
    }
    Ok(())
}

/// The finding for a document staged without a transcript (`paths` =
/// [document, its path at HEAD, transcript]): the reference commit's
/// was removed or left behind, a new one is left unstaged, or the
/// policy requires one.
fn without_staged_transcript(
    g: &Guard<'_>,
    paths: [&str; 3],
    head_tpath: &str,
    had_transcript: bool,
    text: &str,
) -> Result<Option<Finding>, GitError> {
    let [path, head_path, tpath] = paths;
    if had_transcript {
        return Ok(Some(removed_transcript_finding(
            [path, head_path],
            [tpath, head_tpath],
        )));
    }
    // `git commit -a` and `git commit <doc>` leave a new transcript
    // behind: its records would miss the commit.
    if let Some(f) = unstaged_transcript(g, paths, None, text)? {
        return Ok(Some(f));
    }
    Ok(g.policy
        .requires_transcript(path)
        .then(|| missing_transcript_finding(path, tpath)))
}

/// The findings for a staged transcript (`head_t` the reference
/// commit's): the transcript check, with a failure traced to its cause
/// when one is known.
pub(super) fn check_staged_transcript(
    g: &Guard<'_>,
    paths: [&str; 3],
    head_t: Option<Vec<u8>>,
    staged_t: &[u8],
    text: &str,
) -> Result<Vec<Finding>, GitError> {
    let [path, head_path, tpath] = paths;
    let cut = head_t.as_ref().is_some_and(|h| !staged_t.starts_with(h));
    if cut && undoes_reverted_commit(g, paths, staged_t, text)? {
        return Ok(Vec::new());
    }
    let head_doc = g.head_state(head_path)?;
    let mut found = Vec::new();
    super::transcript::check_transcript(g, paths, head_t, head_doc, staged_t, text, &mut found)?;
    if let Some(f) = joined_cause([path, tpath], staged_t, &found) {
        return Ok(vec![f]);
    }
    explain_unrecorded(g, paths, staged_t, text, &mut found)?;
    restored_removal(g, paths, staged_t, text, &mut found);
    Ok(found)
}

/// Reports a document staged beside a transcript that is its tombstone
/// (it ends with the document's `noma rm`), in place of an unrecorded
/// edit, when git brought the document back: during a merge, rebase or
/// cherry-pick (the other side moved it with `git mv`, or patched it,
/// while this one removed it: git's rename/delete or modify/delete
/// conflict), or staged exactly as the removal removed it. The fix keeps
/// the removal: the document leaves the index and the transcript, with
/// the other side's records merged into it, stays as its tombstone.
/// Recording the document instead (the unrecorded edit's fix) would
/// record another side's state as the committer's re-creation of it.
fn restored_removal(
    g: &Guard<'_>,
    [path, _, tpath]: [&str; 3],
    staged_t: &[u8],
    text: &str,
    found: &mut Vec<Finding>,
) {
    // The removal leaves the empty document; a tombstone's own check
    // passes "" here.
    if text.is_empty() {
        return;
    }
    let Some((line, removal)) = noma_core::transcript::tombstone::removal(staged_t) else {
        return;
    };
    let unrecorded = |f: &Finding| f.blocking && f.code == "unrecorded-edit" && f.path == path;
    let removed = removal.op.get("sha256").and_then(|v| v.as_str());
    let as_removed = removed == Some(sha256_hex(text.as_bytes()).as_str());
    let in_operation = g
        .head
        .is_some_and(|h| crate::merge::moved::operation_commits(g.repo, h).is_some());
    if !(as_removed || in_operation) {
        return;
    }
    found.retain(|f| !unrecorded(f));
    found.push(
        Finding::error(
            "removed-document-restored",
            path,
            None,
            format!(
                "{tpath} ends with this document's removal (`noma rm`, line {line}), but the document is staged again: git kept the other side's version (it moved or changed the document while this side removed it); the transcript, with both sides' records, stays as its tombstone"
            ),
        )
        .fix(format!("git rm -q -f -- {}", shell_word(path))),
    );
}

/// During a merge, rebase or cherry-pick: the document at `path` is the
/// other side's version of one this side moved (`git mv`) and then removed
/// (`noma rm`). Git's modify/delete conflict left it under the old name,
/// where no transcript is staged; the moved transcript, with both sides'
/// records, is its tombstone, and the fix keeps the removal.
fn restored_under_old_name(
    g: &Guard<'_>,
    staged: &Staged,
    path: &str,
) -> Result<Option<Finding>, GitError> {
    let Some(head) = g.head else {
        return Ok(None);
    };
    let Some((_, base)) = crate::merge::moved::operation_commits(g.repo, head) else {
        return Ok(None);
    };
    let Ok(moved) = g.repo.moved_documents(base, head) else {
        return Ok(None);
    };
    let Some(new) = moved.iter().find(|(_, old)| *old == path).map(|(n, _)| n) else {
        return Ok(None);
    };
    if g.repo.staged_blob(staged, new)?.is_some() {
        return Ok(None);
    }
    let tpath = transcript_path(new);
    let Some(t) = g.repo.staged_blob(staged, &tpath)? else {
        return Ok(None);
    };
    let Some((line, _)) = noma_core::transcript::tombstone::removal(&t) else {
        return Ok(None);
    };
    Ok(Some(
        Finding::error(
            "removed-document-restored",
            path,
            None,
            format!(
                "this side moved {path} to {new} and removed it (`noma rm`, {tpath} line {line}), but git kept the other side's version under the old name: the moved transcript, with both sides' records, stays as its tombstone"
            ),
        )
        .fix(format!("git rm -q -f -- {}", shell_word(path))),
    ))
}

/// Replaces a blocking unrecorded edit of the document by its cause
/// when the working tree shows it: the records are in the working
/// tree's transcript, unstaged (`git commit <doc>`), so `git add` is
/// the whole fix; or the document is staged in part.
fn explain_unrecorded(
    g: &Guard<'_>,
    paths: [&str; 3],
    staged_t: &[u8],
    text: &str,
    found: &mut Vec<Finding>,
) -> Result<(), GitError> {
    let [path, _, tpath] = paths;
    let unrecorded = |f: &Finding| f.blocking && f.code == "unrecorded-edit" && f.path == path;
    if !found.iter().any(unrecorded) {
        return Ok(());
    }
    let cause = match unstaged_transcript(g, paths, Some(staged_t), text)? {
        Some(f) => Some(f),
        None => partly_staged(g, path, tpath, staged_t),
    };
    if let Some(f) = cause {
        found.retain(|f| !unrecorded(f));
        found.push(f);
    }
    Ok(())
}

/// `git revert -n` of the commit that made the document and transcript
/// what HEAD holds, then `git commit`: the staged pair is byte for byte
/// what the reverted commit's parent held, a pair this hook accepted
/// then. `git revert` without `-n` writes the same bytes and commits
/// without running the hook, so both are treated alike.
fn undoes_reverted_commit(
    g: &Guard<'_>,
    [path, _, tpath]: [&str; 3],
    staged_t: &[u8],
    staged_doc: &str,
) -> Result<bool, GitError> {
    let Ok(reverted) = g.repo.resolve("REVERT_HEAD") else {
        return Ok(false);
    };
    let Some(parent) = g.repo.first_parent(reverted) else {
        return Ok(false);
    };
    Ok(g.repo.blob_at(parent, tpath)?.as_deref() == Some(staged_t)
        && g.repo.blob_at(parent, path)?.as_deref() == Some(staged_doc.as_bytes()))
}

/// The finding for a working-tree transcript that differs from the
/// staged one (`staged_t`, None when absent) and explains the staged
/// document on its own: the edit is recorded, only `git add` is missing.
/// This is the one read of the working tree, and only a check that
/// would otherwise pass a bare document or report an unrecorded edit
/// makes it.
fn unstaged_transcript(
    g: &Guard<'_>,
    paths: [&str; 3],
    staged_t: Option<&[u8]>,
    staged_doc: &str,
) -> Result<Option<Finding>, GitError> {
    let [path, head_path, tpath] = paths;
    let Some(work_t) = g.repo.worktree_file(tpath) else {
        return Ok(None);
    };
    if staged_t == Some(work_t.as_slice()) {
        return Ok(None);
    }
    let head_t = g.reference_blob(&transcript_path(head_path))?;
    let head_doc = g.head_state(head_path)?;
    let mut found = Vec::new();
    super::transcript::check_transcript(
        g, paths, head_t, head_doc, &work_t, staged_doc, &mut found,
    )?;
    if found.iter().any(|f| f.blocking) {
        return Ok(None);
    }
    let what = if staged_t.is_some() {
        "its new records are not staged"
    } else {
        "it is untracked (`git commit -a` leaves new files out)"
    };
    Ok(Some(
        Finding::error(
            "transcript-unstaged",
            tpath,
            None,
            format!("records the staged change of {path}, but {what}"),
        )
        .fix(format!("git add {tpath_sh}", tpath_sh = shell_word(tpath))),
    ))
}

/// The finding for a document staged in part (`git add -p`) while its
/// transcript is staged whole: the working-tree document is exactly the
/// state the staged transcript ends at, so staging the rest is the fix.
fn partly_staged(g: &Guard<'_>, path: &str, tpath: &str, staged_t: &[u8]) -> Option<Finding> {
    let work = g.repo.worktree_file(path)?;
    let end = crate::merge::final_state(staged_t)?;
    (sha256_hex(&work) == end).then(|| {
        Finding::error(
            "document-unstaged",
            path,
            None,
            format!(
                "the staged document lacks changes that {tpath} records, and the working-tree document has them all (`git add -p` stages part of a file): stage the whole document, or make the edits you want to commit separately, one commit each"
            ),
        )
        .fix(format!("git add {path_sh}", path_sh = shell_word(path)))
    })
}

/// The validator's findings for `text` (infos dropped), with the options
/// every entry point builds from the policy; its datasets are read from
/// the index, the content being committed.
fn validate(
    g: &Guard<'_>,
    staged: &Staged,
    path: &str,
    text: &str,
    out: &mut Vec<Finding>,
) -> Result<(), GitError> {
    let doc = noma_core::doc::parse(text);
    let datasets = crate::datasets::Datasets::read(path, &doc, |p| g.repo.staged_blob(staged, p))?;
    let opts = noma_provenance::config::validate_options(
        g.policy,
        &noma_provenance::config::Overrides::default(),
        std::sync::Arc::new(datasets),
    );
    for d in noma_core::validate::validate(&doc, &opts) {
        if d.severity == Severity::Info {
            continue;
        }
        out.push(Finding {
            blocking: d.severity == Severity::Error,
            severity: d.severity,
            code: d.code,
            path: path.to_string(),
            line: d.pos.map(|p| p.line as usize),
            column: d.pos.map(|p| p.column as usize),
            message: d.message,
            fix: None,
        });
    }
    Ok(())
}

/// When the transcript check blocked and the staged transcript holds two
/// branches' records joined line by line ([`joined`]), that one cause: a
/// fork finding (at a merge) keeps its account of both sides and gains
/// the fix. Looked for only when something failed: it reads every line.
fn joined_cause([path, tpath]: [&str; 2], staged_t: &[u8], found: &[Finding]) -> Option<Finding> {
    if !found.iter().any(|f| f.blocking) {
        return None;
    }
    let join = joined::find_join(staged_t)?;
    let fix = joined_finding(path, tpath, join);
    Some(match found.iter().find(|f| f.code == "transcript-fork") {
        Some(fork) => Finding {
            fix: fix.fix,
            ..fork.clone()
        },
        None => fix,
    })
}

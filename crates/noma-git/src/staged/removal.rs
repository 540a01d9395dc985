//! A document missing from the index. Removed with `noma rm`, its staged
//! transcript ends with the removal record and is the document's
//! tombstone: it is checked like any transcript (append-only, chained,
//! replaying) against the empty document the record leaves, and its
//! records' signatures like any others. Deleted together with the
//! transcript the reference commit had, nothing records who removed it:
//! `document-removed`, blocking when the reference commit's policy
//! requires signatures, a warning otherwise. A transcript left without its
//! document is [`super::orphan::orphan`]'s.

use super::{Finding, Guard, Report};
use crate::git::repo::{GitError, Staged};
use noma_core::diag::{shell_word, Severity};
use noma_core::transcript::{tombstone, transcript_path};
use noma_provenance::config::{Policy, SignatureLevel, CONFIG_PATH};

/// The code of a guarded document deleted without a removal record.
const DOCUMENT_REMOVED: &str = "document-removed";
/// The code of a guarded transcript deleted.
pub(super) const TRANSCRIPT_REMOVED: &str = "transcript-removed";

/// Checks `doc` (at `head_path` in the reference commit), which the
/// index does not hold, into `report`.
pub(super) fn check_missing(
    g: &Guard<'_>,
    staged: &Staged,
    [doc, head_path]: [&str; 2],
    report: &mut Report,
) -> Result<(), GitError> {
    let tpath = transcript_path(doc);
    let staged_t = g.repo.staged_blob(staged, &tpath)?;
    let tombstone = staged_t
        .as_deref()
        .filter(|t| tombstone::removal(t).is_some());
    if let Some(t) = tombstone {
        report.transcripts += 1;
        let head_t = g.reference_blob(&transcript_path(head_path))?;
        if head_t.as_deref() == Some(t) {
            // The reference commit held the document beside its tombstone
            // (git brought it back in a rebase, which runs no hook): the
            // removal is recorded already, and dropping it agrees.
            return Ok(());
        }
        let paths = [doc, head_path, tpath.as_str()];
        let found = super::document::check_staged_transcript(g, paths, head_t, t, "")?;
        report.findings.extend(found);
        return Ok(());
    }
    if staged_t.is_none() {
        // A document git pairs as moved, whose transcript it does not
        // pair (too short to stay 50% alike with a new record), is
        // checked at its new path against this one's transcript.
        let moved_to = |p: &str| {
            (staged.changes.iter())
                .find(|c| c.old_path.as_deref() == Some(p))
                .map(|c| c.path.as_str())
        };
        let to = moved_to(doc);
        if moved_transcript(g, staged, head_path, moved_to(&tpath))? {
            // Moved with `git mv` (and perhaps removed with `noma rm`
            // since: the other side of a merge did both): the transcript
            // went along, and is checked at its own path.
            return Ok(());
        }
        if !to.is_some_and(|p| g.policy.is_checked(p)) {
            let unguarded = to.map(|d| [d, moved_to(&transcript_path(doc)).unwrap_or("")]);
            report
                .findings
                .extend(unrecorded_removal(g, doc, unguarded)?);
            report.findings.extend(erased_tombstone(g, doc)?);
        }
        return Ok(());
    }
    report
        .findings
        .extend(super::orphan::orphan(g, staged, doc, head_path)?);
    Ok(())
}

/// Whether the deleted transcript of `head_path` went to another staged
/// transcript that guards its document: a tombstone (its document not
/// staged), or one beside its staged document under a checked name. At
/// `moved`, where git pairs it as moved, else at a transcript new to the
/// index that starts with the same first record (a short transcript with
/// new records stays less than 50% alike, so git does not pair it).
fn moved_transcript(
    g: &Guard<'_>,
    staged: &Staged,
    head_path: &str,
    moved: Option<&str>,
) -> Result<bool, GitError> {
    let guarded_at = |t: &str| -> Result<bool, GitError> {
        let Some(doc) = noma_core::transcript::document_path(t) else {
            return Ok(false);
        };
        if g.repo.staged_blob(staged, doc)?.is_some() {
            return Ok(g.policy.is_checked(doc));
        }
        let bytes = g.repo.staged_blob(staged, t)?;
        Ok(bytes.as_deref().and_then(tombstone::removal).is_some())
    };
    if let Some(t) = moved {
        return guarded_at(t);
    }
    let Some(head_t) = g.reference_blob(&transcript_path(head_path))? else {
        return Ok(false);
    };
    let first = |b: &[u8]| b.split(|&c| c == b'\n').next().map(<[u8]>::to_vec);
    let want = first(&head_t);
    for c in &staged.changes {
        let added = c.kind == crate::git::repo::ChangeKind::Added;
        if !(added && c.path.ends_with(".noma.patches")) {
            continue;
        }
        let Some(t) = g.repo.staged_blob(staged, &c.path)? else {
            continue;
        };
        if first(&t) == want && guarded_at(&c.path)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// The finding for `doc` deleted with its transcript, when the
/// reference commit had both (a document with no transcript was never
/// guarded, and one new in this commit was never committed), or moved
/// with it to `unguarded` (its new path and its transcript's, empty when
/// that was not moved): a name the policy does not guard.
fn unrecorded_removal(
    g: &Guard<'_>,
    doc: &str,
    unguarded: Option<[&str; 2]>,
) -> Result<Option<Finding>, GitError> {
    let tpath = transcript_path(doc);
    if g.reference_blob(doc)?.is_none() || g.reference_blob(&tpath)?.is_none() {
        return Ok(None);
    }
    let side = noma_provenance::sidecar::sidecar_rel(doc);
    let mut restore = vec![shell_word(doc), shell_word(&tpath)];
    if g.reference_blob(&side)?.is_some() {
        restore.push(shell_word(&side));
    }
    let removal = "a document with a transcript is removed with `noma rm`, which appends a signed final record and keeps the transcript as its tombstone";
    let mut f = match unguarded {
        None => Finding::error(
            DOCUMENT_REMOVED,
            doc,
            None,
            format!("{doc} is deleted with its transcript and no record says who removed it or why; {removal}"),
        )
        .fix(format!(
            "git restore --staged --worktree --source=HEAD -- {} && noma rm {}",
            restore.join(" "),
            shell_word(doc)
        )),
        Some([to, to_t]) => {
            let mut back = format!("git mv -f -- {} {}", shell_word(to), shell_word(doc));
            if !to_t.is_empty() {
                back += &format!(" && git mv -f -- {} {}", shell_word(to_t), shell_word(&tpath));
            }
            Finding::error(
                DOCUMENT_REMOVED,
                doc,
                None,
                format!("{doc} is moved to {to}, a path the policy does not guard (not a `.noma` name, or outside the globs of {CONFIG_PATH}): no transcript guards it there and no record says who removed it from the guarded documents or why; a name that keeps the `.noma` suffix inside the globs keeps its guard, and {removal}"),
            )
            .fix(back)
        }
    };
    if !signatures_required(g)? {
        f.severity = Severity::Warning;
        f.blocking = false;
    }
    Ok(Some(f))
}

/// The finding for the tombstone of `doc` (absent in the reference
/// commit, its transcript there) deleted: a removed document's history is
/// append-only like any other, and without it nothing says it existed.
fn erased_tombstone(g: &Guard<'_>, doc: &str) -> Result<Option<Finding>, GitError> {
    let tpath = transcript_path(doc);
    if g.reference_blob(doc)?.is_some() || g.reference_blob(&tpath)?.is_none() {
        return Ok(None);
    }
    let side = noma_provenance::sidecar::sidecar_rel(doc);
    let mut restore = vec![shell_word(&tpath)];
    if g.reference_blob(&side)?.is_some() {
        restore.push(shell_word(&side));
    }
    Ok(Some(
        Finding::error(
            super::removal::TRANSCRIPT_REMOVED,
            &tpath,
            None,
            format!(
                "the tombstone of {doc} (its transcript) is deleted: a removed document's history is append-only; it stays to say who removed it"
            ),
        )
        .fix(format!(
            "git restore --staged --worktree --source=HEAD -- {}",
            restore.join(" ")
        )),
    ))
}

/// Whether the reference commit's policy says `signatures: required`
/// (an unreadable policy counts as requiring them).
fn signatures_required(g: &Guard<'_>) -> Result<bool, GitError> {
    let config = g.reference_blob(CONFIG_PATH)?.unwrap_or_default();
    Ok(
        Policy::from_yaml(&String::from_utf8_lossy(&config)).map_or(true, |p| {
            p.file.provenance.signatures == SignatureLevel::Required
        }),
    )
}

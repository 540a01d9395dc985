//! A document the branch removed. With `noma rm` its transcript ends with
//! an `x-noma/remove_document` record and stays as the tombstone: the
//! tombstone is checked as the document's history ending at the empty
//! text (append-only, replay, the record's signature and, for an agent,
//! its approval), and a note lists the removal. Without that record, a
//! document the merge base guarded with a transcript is
//! `document-removed`: an error when the base's policy requires
//! signatures (nobody signed the removal), else a warning; a removed
//! document that never had a transcript is listed with a note.

use super::{finding, Branch, DocFiles, DocReport, Finding, ReconcileError};
use noma_core::diag::shell_word;
use noma_core::transcript::{tombstone, transcript_path};
use noma_provenance::config::{Policy, SignatureLevel, CONFIG_PATH};

/// [`DocReport::removed`] of a removal `noma rm` recorded.
pub(super) const RECORDED: &str = "recorded";
/// [`DocReport::removed`] of a deletion no record explains.
pub(super) const UNRECORDED: &str = "unrecorded";
/// The code that lists a removed document.
pub(super) const DOCUMENT_REMOVED: &str = "document-removed";
/// The code of a guarded transcript or sidecar the branch deleted.
pub(super) const TRANSCRIPT_REMOVED: &str = "transcript-removed";
/// The code of a transcript that does not continue the merge base's.
pub(super) const TRANSCRIPT_REWRITTEN: &str = "transcript-rewritten";

/// How many whole lines `a` and `b` share from their start.
fn common_lines(a: &[u8], b: &[u8]) -> usize {
    let same = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    a[..same].iter().filter(|&&c| c == b'\n').count()
}

/// The code of a document in the tree beside its tombstone.
pub(crate) const REMOVED_DOCUMENT_RESTORED: &str = "removed-document-restored";

/// A document HEAD holds beside a transcript that is its tombstone (it
/// ends with the document's `noma rm`): git brought back the other side's
/// version (a rename/delete or modify/delete conflict continued with `git
/// add -A` in a rebase, which runs no hook to stop it). One finding that
/// keeps the removal replaces the replay divergence, whose `noma record`
/// would record another side's document as a re-creation of it.
pub(super) fn restored_removal(rep: &mut DocReport, files: &DocFiles, head_doc: &str) {
    if head_doc.is_empty() {
        return;
    }
    let Some((line, _)) = tombstone::removal(files.head_transcript()) else {
        return;
    };
    rep.findings.retain(|f| f.code != "replay-diverged");
    rep.replays = false;
    let f = finding(
        "error",
        REMOVED_DOCUMENT_RESTORED,
        &rep.path,
        format!(
            "{tpath} ends with this document's removal (`noma rm`, line {line}), but the document is in the tree again: git kept the other side's version (it moved or changed the document while this side removed it); the transcript, with both sides' records, stays as its tombstone; fix: git rm -q -f -- {doc}, then commit",
            tpath = files.tpath,
            doc = shell_word(&rep.path)
        ),
    );
    rep.findings.push(f);
}

impl Branch<'_> {
    /// The report of `path`, absent at HEAD: `None` when it is the old
    /// path of a document the branch moved (reported under its new path)
    /// or the merge base never had it.
    pub(super) fn check_removed(&self, path: &str) -> Result<Option<DocReport>, ReconcileError> {
        if self.moved.values().any(|old| old == path) {
            return Ok(None);
        }
        let tpath = transcript_path(path);
        let head_t = self.blob(self.head, &tpath);
        if let Some((line, rec)) = head_t.as_deref().and_then(tombstone::removal) {
            let why = rec
                .reason
                .as_deref()
                .map(|r| format!(": \"{r}\""))
                .unwrap_or_default();
            let note = finding(
                "note",
                DOCUMENT_REMOVED,
                path,
                format!(
                    "removed with `noma rm` by {} {} (the record at {tpath}:{line}{why}); its transcript stays as the tombstone",
                    format!("{:?}", rec.actor.kind).to_lowercase(),
                    rec.actor.name
                ),
            );
            let mut rep = self.check_text(path, b"", false)?;
            rep.removed = Some(RECORDED);
            rep.findings.insert(0, note);
            return Ok(Some(rep));
        }
        let erased = self.erased_history(path, &tpath, head_t.as_deref());
        if self.blob(self.merge_base, path).is_none() {
            // A tombstone at the merge base: its history must stay.
            return Ok((!erased.is_empty()).then(|| {
                let mut rep = DocReport::unchecked(path);
                rep.append_only = false;
                rep.findings = erased;
                rep
            }));
        }
        let guarded = self.blob(self.merge_base, &tpath).is_some();
        let level = match (guarded, self.base_requires_signatures()) {
            (false, _) => "note",
            (true, true) => "error",
            (true, false) => "warning",
        };
        let message = if guarded {
            let kept = match head_t {
                Some(_) => "stays but does not end with a removal record",
                None => "was deleted with it",
            };
            let mut restore = vec![shell_word(path), shell_word(&tpath)];
            let side = noma_provenance::sidecar::sidecar_rel(path);
            if self.blob(self.merge_base, &side).is_some() {
                restore.push(shell_word(&side));
            }
            format!(
                "removed without a record (its transcript {tpath} {kept}): nothing says who removed it or why; fix: git restore --source={} -- {} && noma rm {}",
                shell_word(self.base_rev),
                restore.join(" "),
                shell_word(path)
            )
        } else {
            "removed (it had no transcript: nothing records who removed it)".to_string()
        };
        let mut rep = DocReport::unchecked(path);
        rep.removed = Some(UNRECORDED);
        rep.findings
            .push(finding(level, DOCUMENT_REMOVED, path, message));
        // A removal without a record is judged above; what it did to the
        // history it kept is judged here.
        let cut: Vec<Finding> = (erased.into_iter())
            .filter(|f| f.code == TRANSCRIPT_REWRITTEN)
            .collect();
        rep.append_only &= cut.is_empty();
        rep.findings.extend(cut);
        Ok(Some(rep))
    }

    /// The history of `path` (absent at HEAD) the branch erased: its
    /// transcript `tpath` or sidecar, which the merge base has, deleted
    /// (`transcript-removed`), or the transcript no longer starting with
    /// the merge base's (`transcript-rewritten`: cut before its removal
    /// record, or edited). A tombstone is history like any transcript, so
    /// it is append-only too; without this, deleting one left nothing to
    /// check.
    fn erased_history(&self, path: &str, tpath: &str, head_t: Option<&[u8]>) -> Vec<Finding> {
        let mut out = Vec::new();
        let restore = |p: &str| {
            format!(
                "git restore --source={} -- {}",
                shell_word(self.base_rev),
                shell_word(p)
            )
        };
        if let Some(mb_t) = self.blob(self.merge_base, tpath) {
            match head_t {
                None => out.push(finding(
                    "error",
                    TRANSCRIPT_REMOVED,
                    tpath,
                    format!(
                        "the transcript of {path}, which the merge base has, is deleted: a document's history (a tombstone's too) is append-only; fix: {}",
                        restore(tpath)
                    ),
                )),
                Some(t) if !t.starts_with(&mb_t) => {
                    let mut f = finding(
                        "error",
                        TRANSCRIPT_REWRITTEN,
                        tpath,
                        format!(
                            "the transcript of {path} no longer starts with the merge base's: its records were cut or edited (a document's history, a tombstone's too, is append-only); fix: {}",
                            restore(tpath)
                        ),
                    );
                    f.line = Some(common_lines(&mb_t, t) + 1);
                    out.push(f);
                }
                Some(_) => {}
            }
        }
        let side = noma_provenance::sidecar::sidecar_rel(path);
        if self.blob(self.merge_base, &side).is_some() && self.blob(self.head, &side).is_none() {
            out.push(finding(
                "error",
                TRANSCRIPT_REMOVED,
                &side,
                format!(
                    "the provenance sidecar of {path}, which the merge base has, is deleted: the signatures of its history must stay; fix: {}",
                    restore(&side)
                ),
            ));
        }
        out
    }

    /// Whether the base revision's policy says `signatures: required` (an
    /// unreadable policy counts as requiring them: the removal is not let
    /// through on a file nobody can read).
    fn base_requires_signatures(&self) -> bool {
        let config = self.blob(self.base_tip, CONFIG_PATH).unwrap_or_default();
        Policy::from_yaml(&String::from_utf8_lossy(&config)).map_or(true, |p| {
            p.file.provenance.signatures == SignatureLevel::Required
        })
    }
}

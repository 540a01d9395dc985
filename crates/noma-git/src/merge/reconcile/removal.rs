//! A document the branch removed. With `noma rm` its transcript ends with
//! an `x-noma/remove_document` record and stays as the tombstone: the
//! tombstone is checked as the document's history ending at the empty
//! text (append-only, replay, the record's signature and, for an agent,
//! its approval), and a note lists the removal. Without that record, a
//! document the merge base guarded with a transcript is
//! `document-removed`: an error when the base's policy requires
//! signatures (nobody signed the removal), else a warning; a removed
//! document that never had a transcript is listed with a note.

use super::{finding, Branch, DocReport, ReconcileError};
use noma_core::diag::shell_word;
use noma_core::transcript::{tombstone, transcript_path};
use noma_provenance::config::{Policy, SignatureLevel, CONFIG_PATH};

/// [`DocReport::removed`] of a removal `noma rm` recorded.
pub(super) const RECORDED: &str = "recorded";
/// [`DocReport::removed`] of a deletion no record explains.
pub(super) const UNRECORDED: &str = "unrecorded";
/// The code that lists a removed document.
pub const DOCUMENT_REMOVED: &str = "document-removed";

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
        if self.blob(self.merge_base, path).is_none() {
            return Ok(None);
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
        Ok(Some(rep))
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

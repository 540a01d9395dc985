//! Merge copies of the branch's own records (decision
//! `a-merge-copy-comes-from-another-line` in `.noma/provenance.noma`).
//!
//! A merge copy stands for an op made on another line of history: the
//! side a merge brought in, or the branch's own commits before a rebase,
//! cherry-pick or squash rewrote them. The merge driver keeps HEAD's
//! transcript as a byte prefix, so a record that HEAD's own line of
//! history (its first-parent commits since the base) holds is never
//! turned into a copy of itself. A copy in the checked range whose
//! original such a commit holds is therefore the branch's own record
//! relabelled, which would borrow its original's signature and approval
//! for a record moved (an `add_block`'s position is not signed) and
//! skip the approved-draft check that only originals get.

use std::collections::HashSet;

use super::{finding, Branch, DocReport};
use crate::git::Oid;
use noma_core::transcript::{parse_record, split_lines, transcript_path};

/// The code of a merge copy whose original is a record of the branch's
/// own line of history.
pub(super) const COPY_OF_OWN_RECORD: &str = "copy-of-own-record";

/// A copy of the checked range: its line, its op_id and its original's.
struct Claim {
    line: usize,
    op_id: String,
    original: String,
}

impl Branch<'_> {
    /// Reports each merge copy of `rep.records` whose original a
    /// first-parent commit of HEAD since the base holds, in the
    /// document's transcript at `path` or at its merge-base path `old`;
    /// such a copy is neither signed nor approved by its original's
    /// lines. Reads history only when the range holds a copy (a merge of
    /// a side branch, a rebase or a cherry-pick): each distinct
    /// transcript blob of that line once.
    pub(super) fn own_copies(&self, rep: &mut DocReport, path: &str, old: &str) {
        let mut claims: Vec<Claim> = (rep.records.iter())
            .filter_map(|s| {
                Some(Claim {
                    line: s.line,
                    op_id: s.op_id.clone(),
                    original: s.copy_of.clone()?,
                })
            })
            .collect();
        if claims.is_empty() {
            return;
        }
        let mut tpaths = vec![transcript_path(path)];
        if old != path {
            tpaths.push(transcript_path(old));
        }
        // A copy the base's transcript holds itself was made on the base's
        // line (a merge there) and came to the branch with `git merge`: not
        // the branch's relabelling, whatever its original's history. Nor
        // is a copy of an original the base holds: that op is the base's,
        // even when the branch's line held it too (it forked after it).
        let base_held: Vec<Vec<u8>> = (tpaths.iter())
            .filter_map(|t| self.repo.blob_id_at(self.base_tip, t).ok().flatten())
            .filter_map(|id| self.repo.blob(id).ok())
            .collect();
        claims.retain(|c| {
            !base_held
                .iter()
                .any(|b| held_at(b, &c.op_id).is_some() || held_at(b, &c.original).is_some())
        });
        if claims.is_empty() {
            return;
        }
        let mut read: HashSet<Oid> = HashSet::new();
        let mut found: Vec<(Claim, Oid, &str, usize)> = Vec::new();
        // The base's history is left out: its records leave the range
        // when a copy proves equal to one, and are not the branch's own.
        let line = (self.repo.first_parents_since(self.head, self.base_tip)).unwrap_or_default();
        for c in line.into_iter().filter(|c| *c != self.head) {
            for tpath in &tpaths {
                let Some(id) = self.repo.blob_id_at(c, tpath).ok().flatten() else {
                    continue;
                };
                if !read.insert(id) {
                    continue;
                }
                let Ok(bytes) = self.repo.blob(id) else {
                    continue;
                };
                let (own, rest) = (claims.into_iter())
                    .partition::<Vec<_>, _>(|claim| held_at(&bytes, &claim.original).is_some());
                claims = rest;
                for claim in own {
                    let at = held_at(&bytes, &claim.original).unwrap_or_default();
                    found.push((claim, c, tpath, at));
                }
            }
            if claims.is_empty() {
                break;
            }
        }
        // The base may hold the document under another name (both sides
        // moved it: git's rename/rename keeps both names): a copy or an
        // original found in any of the base's transcripts is the base's.
        // Read only on the error path.
        if !found.is_empty() {
            let held = self.held_by_base(&found);
            found.retain(|(claim, ..)| !held.contains(&claim.line));
        }
        for (claim, c, tpath, at) in &found {
            report(rep, claim, (*c, tpath, *at));
        }
    }

    /// The lines of `found`'s claims whose copy or original a transcript
    /// of the base revision holds, under any name.
    fn held_by_base(&self, found: &[(Claim, Oid, &str, usize)]) -> HashSet<usize> {
        let ids = (self.repo.blobs_named(self.base_tip, ".noma.patches")).unwrap_or_default();
        let _ = self.repo.prefetch_blobs(ids.iter().copied());
        let mut held = HashSet::new();
        for bytes in ids.into_iter().filter_map(|id| self.repo.blob(id).ok()) {
            for (claim, ..) in found {
                if held_at(&bytes, &claim.op_id).is_some()
                    || held_at(&bytes, &claim.original).is_some()
                {
                    held.insert(claim.line);
                }
            }
        }
        held
    }
}

/// The 1-based line of the record of `transcript` whose op_id is
/// `op_id`, if any.
fn held_at(transcript: &[u8], op_id: &str) -> Option<usize> {
    memchr::memmem::find(transcript, op_id.as_bytes())?;
    let (lines, _) = split_lines(transcript);
    lines.iter().find_map(|l| {
        memchr::memmem::find(l.raw, op_id.as_bytes())?;
        let rec = parse_record(l.number, l.raw).ok()?;
        (rec.op_id == op_id).then_some(l.number)
    })
}

/// The error at the copy, and its record's status without the signer and
/// approver its original's lines named.
fn report(rep: &mut DocReport, claim: &Claim, (commit, tpath, line): (Oid, &str, usize)) {
    let short = &commit.to_string()[..10];
    let mut f = finding(
        "error",
        COPY_OF_OWN_RECORD,
        &transcript_path(&rep.path),
        format!(
            "record {} claims to be a merge copy of op {}, but that op is this branch's own record (commit {short}, {tpath}:{line}): a merge copies the other side's records, never its own line's, so its original's signature and approval do not vouch for it. fix: undo the commit that rewrote the record (the pre-commit hook refuses rewriting a committed record)",
            claim.op_id, claim.original
        ),
    );
    f.line = Some(claim.line);
    rep.findings.push(f);
    if let Some(s) = rep.records.iter_mut().find(|s| s.line == claim.line) {
        s.signed_by = None;
        s.approved_by = None;
    }
}

//! The signatures of the staged documents' records, trusted from the
//! reference commit, so that a commit cannot trust a key it adds itself.

use std::collections::BTreeMap;

use super::{Finding, Guard};
use crate::git::repo::{GitError, Staged};
use noma_core::diag::{shell_word, Severity};
use noma_core::transcript::transcript_path;

/// The provenance findings of the staged documents (nothing read past
/// the reference commit's policy when it turns provenance off).
pub(super) fn check_signatures(
    g: &Guard<'_>,
    staged: &Staged,
    docs: &BTreeMap<String, String>,
    out: &mut Vec<Finding>,
) -> Result<(), GitError> {
    use crate::provenance::check;
    use noma_provenance::ALLOWED_SIGNERS_PATH;
    let config = g.reference_blob(noma_provenance::config::CONFIG_PATH)?;
    let mut trust = match check::trust_from(config.as_deref(), || {
        g.reference_blob(ALLOWED_SIGNERS_PATH).ok().flatten()
    }) {
        Ok(Some(t)) => t,
        Ok(None) => return Ok(()),
        Err(e) => {
            out.push(Finding::error(
                check::TRUST_INVALID,
                noma_provenance::config::CONFIG_PATH,
                None,
                e.to_string(),
            ));
            return Ok(());
        }
    };
    // The commit being made now holds the staged records.
    trust.not_after = Some(noma_provenance::signers::now());
    let their_trust = merged_in_trust(g, trust.not_after)?;
    if !docs.is_empty() {
        for l in check::signer_warnings(&trust) {
            let line = Some(l.problem.line).filter(|n| *n > 0);
            let mut f = Finding::error(l.problem.code, &l.path, line, l.problem.message);
            f.severity = Severity::Warning;
            f.blocking = false;
            out.push(f);
        }
    }
    for (doc, head_path) in docs {
        check_document(g, staged, &trust, their_trust.as_ref(), doc, head_path, out)?;
    }
    Ok(())
}

/// During a merge, the trust the merged-in parent states, by which its
/// records are judged (decision merge-trust-follows-the-side), with the
/// same time cap; `None` outside a merge or when that side's policy
/// cannot be read (then the reference commit's judges everything).
fn merged_in_trust(
    g: &Guard<'_>,
    not_after: Option<u64>,
) -> Result<Option<(crate::git::Oid, Option<noma_provenance::verify::Trust>)>, GitError> {
    use noma_provenance::ALLOWED_SIGNERS_PATH;
    let Some((_, mh)) = g.merge else {
        return Ok(None);
    };
    let config = g.repo.blob_at(mh, noma_provenance::config::CONFIG_PATH)?;
    let signers = g.repo.blob_at(mh, ALLOWED_SIGNERS_PATH)?;
    Ok(
        match crate::provenance::check::trust_from(config.as_deref(), || signers) {
            Ok(t) => Some((
                mh,
                t.map(|mut t| {
                    t.not_after = not_after;
                    t
                }),
            )),
            Err(_) => None,
        },
    )
}

/// One staged document's provenance findings: a rename that left its
/// files behind, then each record's signature and approval.
fn check_document(
    g: &Guard<'_>,
    staged: &Staged,
    trust: &noma_provenance::verify::Trust,
    their_trust: Option<&(crate::git::Oid, Option<noma_provenance::verify::Trust>)>,
    doc: &str,
    head_path: &str,
    out: &mut Vec<Finding>,
) -> Result<(), GitError> {
    use crate::provenance::check;
    use noma_provenance::sidecar::sidecar_rel;
    {
        let mut staged_files = std::collections::HashMap::new();
        for p in [
            transcript_path(doc),
            transcript_path(head_path),
            sidecar_rel(doc),
            sidecar_rel(head_path),
        ] {
            let there = g.repo.staged_blob(staged, &p)?.is_some();
            staged_files.insert(p, there);
        }
        if let Some((l, fix)) = check::rename_problem(doc, head_path, &|p| {
            staged_files.get(p).copied().unwrap_or(false)
        }) {
            out.push(Finding::error(l.problem.code, &l.path, None, l.problem.message).fix(fix));
        }
        let t = g.repo.staged_blob(staged, &transcript_path(doc))?;
        let head_t = g.reference_blob(&transcript_path(head_path))?;
        let side = g.repo.staged_blob(staged, &sidecar_rel(doc))?;
        let head_side = g.reference_blob(&sidecar_rel(head_path))?;
        let theirs = match their_trust {
            Some((mh, _)) => Some([
                g.repo.blob_at(*mh, &transcript_path(doc))?,
                g.repo.blob_at(*mh, &sidecar_rel(doc))?,
            ]),
            None => None,
        };
        let merged_in = match (their_trust, &theirs) {
            (Some((_, trust)), Some([mt, ms])) => Some(check::MergedIn {
                trust: trust.as_ref(),
                transcript: mt.as_deref(),
                sidecar: ms.as_deref(),
            }),
            _ => None,
        };
        for p in check::hook_problems(
            trust,
            doc,
            [t.as_deref(), head_t.as_deref()],
            [side.as_deref(), head_side.as_deref()],
            merged_in,
        ) {
            let l = p.located;
            let line = Some(l.problem.line).filter(|n| *n > 0);
            let mut f = Finding::error(l.problem.code, &l.path, line, l.problem.message);
            // `signatures: warn` reports without blocking.
            if l.problem.level != "error" {
                f.severity = Severity::Warning;
                f.blocking = false;
            }
            let fix = if p.merged_in {
                // Judged by the merged-in side's own trust: the record is
                // wrong there, and only that branch can mend it.
                "the record came with the branch being merged and fails that branch's own \
                 allowed signers: mend it there (sign it with its writer's key), then merge again"
                    .to_string()
            } else {
                format!(
                    "sign with the writer's key (noma patch --key, NOMA_SIGNING_KEY) and git add {}",
                    shell_word(&sidecar_rel(doc))
                )
            };
            out.push(f.fix(fix));
        }
    }
    Ok(())
}

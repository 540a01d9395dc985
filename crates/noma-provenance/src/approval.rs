//! `noma approve`'s steps that are not printing: which agent records wait
//! for a person's approval, and the signed approval appended to the
//! document's sidecar.

use std::path::{Path, PathBuf};

use noma_core::transcript::{ActorKind, Entry, Record};

use super::{canonical, sidecar, RecordStatus, Signer, SignerError};

/// Why an approval could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ApprovalError {
    /// `--through` names a record the transcript does not hold.
    #[error("{}: no record {op_id}", transcript.display())]
    NoRecord {
        /// The transcript.
        transcript: PathBuf,
        /// The op_id asked for.
        op_id: String,
    },
    /// The signer could not sign.
    #[error(transparent)]
    Sign(#[from] SignerError),
    /// The transcript's lock or the sidecar's append failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The records of `entries` (with `statuses`, their verdicts in the same
/// order) that an agent made — by `actor.kind` or by a principal the
/// policy marks as an agent — and that no valid approval covers yet, in
/// transcript order, up to and including `through` when given.
pub fn pending<'a>(
    transcript: &Path,
    entries: &'a [Entry],
    statuses: &[RecordStatus],
    through: Option<&str>,
) -> Result<Vec<&'a Entry>, ApprovalError> {
    if let Some(id) = through {
        if !entries.iter().any(|e| e.record.op_id == id) {
            return Err(ApprovalError::NoRecord {
                transcript: transcript.to_path_buf(),
                op_id: id.to_string(),
            });
        }
    }
    let mut pending = Vec::new();
    for (e, s) in entries.iter().zip(statuses) {
        let agent = e.record.actor.kind == ActorKind::Agent || s.needs_approval;
        // A record older than the policy waits for nobody.
        let pre_policy = s
            .problems
            .iter()
            .any(|p| p.code == super::verify::codes::PRE_POLICY);
        if agent && s.approved_by.is_none() && !pre_policy {
            pending.push(e);
        }
        if through == Some(e.record.op_id.as_str()) {
            break;
        }
    }
    Ok(pending)
}

/// Signs `signer`'s approval of `records` (transcript order, not empty)
/// of the document of lineage `lineage`, and appends it to `doc`'s sidecar under the writers' lock on its
/// transcript `tpath`, like every sidecar append. Returns the sidecar.
pub fn write(
    signer: &Signer,
    doc: &Path,
    tpath: &Path,
    records: &[&Record],
    lineage: &canonical::Lineage,
) -> Result<PathBuf, ApprovalError> {
    // Copies a merge wrote stand for their originals.
    let originals: Vec<Record> = records
        .iter()
        .map(|r| canonical::original_of(r).unwrap_or_else(|| (*r).clone()))
        .collect();
    let refs: Vec<&Record> = originals.iter().collect();
    let last = records
        .last()
        .map(|r| r.post_sha256.clone())
        .unwrap_or_default();
    let uri = records.first().map(|r| r.doc_uri.as_str()).unwrap_or("");
    let entry = signer.approve(uri, &refs, &last, lineage)?;
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ApprovalError::Io { path, source }
    };
    let locked = noma_store::fsio::LockedTranscript::open(tpath).map_err(io(tpath))?;
    let side = sidecar::sidecar_path(doc);
    sidecar::append(&side, std::slice::from_ref(&entry)).map_err(io(&side))?;
    drop(locked);
    Ok(side)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::record;

    fn status(needs: bool, approved: bool) -> RecordStatus {
        RecordStatus {
            line: 1,
            op_id: String::new(),
            actor: "agent bot".into(),
            signed_by: None,
            needs_approval: needs,
            approved_by: approved.then(|| "alice".into()),
            problems: Vec::new(),
            copy_of: None,
        }
    }

    #[test]
    fn pending_are_unapproved_agent_records_up_to_through() {
        // 1: an agent's; 2: a person's; 3: a person's actor signed by an
        // agent principal; 4: an agent's, approved; 5: an agent's.
        let entries: Vec<Entry> = [false, true, true, false, false]
            .iter()
            .enumerate()
            .map(|(i, human)| record(i + 1, *human))
            .collect();
        let statuses = vec![
            status(true, false),
            status(false, false),
            status(true, false),
            status(true, true),
            status(true, false),
        ];
        let id = |i: usize| entries[i - 1].record.op_id.clone();
        let t = Path::new("d.noma.patches");
        let lines = |through: Option<String>| -> Vec<usize> {
            pending(t, &entries, &statuses, through.as_deref())
                .unwrap()
                .iter()
                .map(|e| e.line)
                .collect()
        };
        assert_eq!(lines(None), [1, 3, 5]);
        assert_eq!(lines(Some(id(3))), [1, 3]);
        assert_eq!(lines(Some(id(4))), [1, 3]);
        assert_eq!(lines(Some(id(1))), [1]);
        let e = pending(t, &entries, &statuses, Some("zz")).unwrap_err();
        assert_eq!(e.to_string(), "d.noma.patches: no record zz");
    }
}

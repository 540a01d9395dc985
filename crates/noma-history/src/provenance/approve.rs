//! `noma approve`: the agent records of a document that no valid approval
//! covers, with the blocks each changed (the binary lists them for the
//! person about to approve them), and the signed approval written once
//! they agree.

use std::path::{Path, PathBuf};

use noma_core::transcript::{self, Entry, Record};
use noma_store::engine::default_transcript_path;

use super::{check, writer, Error};
use noma_merge::diff::{diff_docs, DocDiff};
use noma_provenance::{approval, Signer, Trust};

/// What an approval would cover.
pub struct Plan {
    /// Who approves.
    pub signer: Signer,
    /// The document's transcript.
    pub transcript: PathBuf,
    bytes: Vec<u8>,
    /// The document before the transcript's first applied record (`None`:
    /// the empty document of a genesis record), or why it was not found.
    start: Result<Option<String>, BlocksError>,
    entries: Vec<Entry>,
    /// Indices into `entries` of the records waiting, in order.
    pending: Vec<usize>,
}

/// Why the blocks the waiting records changed are unknown.
#[derive(Debug, Clone, thiserror::Error)]
pub enum BlocksError {
    /// The document cannot be read.
    #[error("{0}")]
    Document(std::sync::Arc<noma_core::doc::source::SourceError>),
    /// No version of the document is the state the transcript starts from.
    #[error("the transcript starts from sha256 {}, and no version of the document has it ({})", transcript::short_sha(pre), searched.as_ref().map_or_else(|why| why.to_string(), |s| s.to_string()))]
    NoStart {
        /// The sha256 the transcript starts from.
        pre: String,
        /// Where it was looked for, or why nowhere.
        searched: Result<crate::history_replay::Searched, crate::history_replay::NotSearched>,
    },
    /// Replay diverges, or a record's op does not apply, at a line.
    #[error("line {line}: {message}")]
    Line {
        /// The transcript line.
        line: usize,
        /// What went wrong there.
        message: String,
    },
}

/// The approver's signer (`key`, else the environment or git: approving is
/// signing) and the agent records of `doc` waiting for approval, up to
/// and including `through` when given. Err before anything is written
/// when no approval by that key could ever count ([`never_counts`]).
pub fn plan(doc: &Path, key: Option<&Path>, through: Option<&str>) -> Result<Plan, Error> {
    let signer = writer::approver_signer(doc, key)?.ok_or(Error::NoSigningKey)?;
    let (trust, _) = check::worktree_trust(doc)?;
    if let Some(why) = never_counts(&signer, &trust) {
        return Err(why);
    }
    let tpath = default_transcript_path(doc);
    // The approval is appended to the sidecar under the transcript's lock:
    // a link or a FIFO in either place is refused before anything is read.
    for p in [&tpath, &noma_provenance::sidecar_path(doc)] {
        noma_store::fsio::contain::check_writable(p).map_err(Error::io(p))?;
    }
    if std::fs::symlink_metadata(&tpath).is_err() {
        return Err(Error::NoTranscript {
            doc: doc.to_path_buf(),
            transcript: tpath,
        });
    }
    let report = super::report::for_doc(doc, None)?;
    let bytes = noma_store::fsio::read_regular(&tpath).map_err(Error::io(&tpath))?;
    let parsed = transcript::parse_transcript(&bytes).map_err(|error| Error::Transcript {
        path: tpath.clone(),
        error,
    })?;
    // The work tree's policy says which principals are agents (the check
    // trusts the base's).
    let waiting: std::collections::HashSet<usize> =
        approval::pending(&tpath, &parsed.entries, &report.records, through)?
            .into_iter()
            .map(|e| e.line)
            .collect();
    let pending = (parsed.entries.iter().enumerate())
        .filter(|(_, e)| waiting.contains(&e.line))
        .map(|(i, _)| i)
        .collect();
    let start = start_state(doc, &parsed.entries);
    Ok(Plan {
        signer,
        transcript: tpath,
        bytes,
        start,
        entries: parsed.entries,
        pending,
    })
}

impl Plan {
    /// The records waiting, in transcript order.
    pub fn pending(&self) -> Vec<&Entry> {
        self.pending.iter().map(|&i| &self.entries[i]).collect()
    }

    /// The blocks each waiting record changed, in [`Plan::pending`]'s
    /// order (as `noma changed` diffs them), or why they are unknown.
    pub fn changed_blocks(&self) -> Result<Vec<DocDiff>, BlocksError> {
        let pending = self.pending();
        (self.start.clone())
            .and_then(|start| pending_blocks(start, &self.bytes, &self.entries, &pending))
    }

    /// Appends the signed approval of every waiting record to `doc`'s
    /// sidecar; returns the sidecar's path.
    pub fn approve(&self, doc: &Path) -> Result<PathBuf, Error> {
        let records: Vec<&Record> = self.pending().into_iter().map(|e| &e.record).collect();
        let Some(first) = self.entries.first() else {
            return Err(Error::NothingToApprove(self.transcript.clone()));
        };
        let lineage = noma_provenance::canonical::Lineage::of(&first.record);
        Ok(approval::write(
            &self.signer,
            doc,
            &self.transcript,
            &records,
            &lineage,
        )?)
    }
}

/// Why an approval signed by `signer` could never count under `trust`
/// (the work tree's policy and allowed signers; the check trusts the
/// base's, of which the work tree is the approver's best view): its
/// principal is an agent principal, or the allowed signers do not list its
/// key for that principal. `None`: it can count.
pub(crate) fn never_counts(signer: &Signer, trust: &Trust) -> Option<Error> {
    let principal = &signer.principal;
    if trust.policy.is_agent_principal(principal) {
        return Some(Error::AgentApprover {
            principal: principal.clone(),
        });
    }
    if !trust.signers.allows(principal, signer.public_key()) {
        return Some(Error::KeyNotListed {
            principal: principal.clone(),
            fingerprint: (signer.public_key())
                .fingerprint(ssh_key::HashAlg::Sha256)
                .to_string(),
            key: signer.public_key().to_openssh().unwrap_or_default(),
        });
    }
    None
}

/// The document before the first applied record of `entries`, found as
/// `noma replay` finds its start: the empty document of a genesis record
/// (`None`), the document itself when it is still at that state, else the
/// version with that sha256 in its git history (by content, under any
/// name). Err says what was searched.
fn start_state(doc: &Path, entries: &[Entry]) -> Result<Option<String>, BlocksError> {
    let first = entries
        .iter()
        .find(|e| e.record.patch_result == transcript::PatchResult::Applied);
    let Some(pre) = first.map(|e| e.record.pre_sha256.as_str()) else {
        return Ok(None);
    };
    if pre == noma_core::doc::hash::EMPTY_SHA256 {
        return Ok(None);
    }
    let text = noma_store::fsio::read_document(doc)
        .map_err(|e| BlocksError::Document(std::sync::Arc::new(e)))?;
    if noma_core::doc::hash::sha256_hex(text.as_bytes()) == pre {
        return Ok(Some(text));
    }
    match crate::history_replay::find_in_worktree_history(doc, None, pre) {
        (Some(found), _) => Ok(Some(found)),
        (None, searched) => Err(BlocksError::NoStart {
            pre: pre.to_string(),
            searched,
        }),
    }
}

/// The blocks each of `pending` changed, as `noma changed` diffs them:
/// the transcript is replayed from `start` ([`start_state`]) up to the
/// first of them, then each applied record's op is applied in turn and
/// each pending one's before and after are diffed.
fn pending_blocks(
    start: Option<String>,
    t_bytes: &[u8],
    entries: &[Entry],
    pending: &[&Entry],
) -> Result<Vec<DocDiff>, BlocksError> {
    let first = pending.first().map_or(0, |e| e.offset);
    let mut text = transcript::replay::state_after(&t_bytes[..first], start.as_deref())
        .map_err(|d| BlocksError::Line {
            line: d.line,
            message: d.message.clone(),
        })?
        .unwrap_or_default();
    let mut memo = noma_core::doc::memo::ParseMemo::new();
    let mut out = Vec::with_capacity(pending.len());
    let mut wanted = pending.iter().peekable();
    for e in entries.iter().skip_while(|e| e.offset < first) {
        let Some(next) = wanted.peek() else { break };
        let after = if e.record.patch_result == transcript::PatchResult::Applied {
            noma_core::patch::apply_ops_with(&mut memo, &text, std::slice::from_ref(&e.record.op))
                .map_err(|err| BlocksError::Line {
                line: e.line,
                message: err.message,
            })?
        } else {
            text.clone()
        };
        if next.line == e.line {
            out.push(diff_docs(&text, &after));
            wanted.next();
        }
        text = after;
    }
    Ok(out)
}

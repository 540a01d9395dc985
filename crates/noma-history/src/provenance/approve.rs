//! `noma approve`: the agent records of a document that no valid approval
//! covers, with the blocks each changed (the binary lists them for the
//! person about to approve them), and the signed approval written once
//! they agree.

use std::path::{Path, PathBuf};

use noma_core::transcript::{self, Entry, Record};
use noma_store::engine::default_transcript_path;

use super::{check, writer};
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
    start: Result<Option<String>, String>,
    entries: Vec<Entry>,
    /// Indices into `entries` of the records waiting, in order.
    pending: Vec<usize>,
}

/// The approver's signer (`key`, else the environment or git: approving is
/// signing) and the agent records of `doc` waiting for approval, up to
/// and including `through` when given. Err before anything is written
/// when no approval by that key could ever count ([`never_counts`]).
pub fn plan(doc: &Path, key: Option<&Path>, through: Option<&str>) -> Result<Plan, String> {
    let signer = writer::approver_signer(doc, key)
        .map_err(|e| e.to_string())?
        .ok_or("no signing key: pass --key FILE, set NOMA_SIGNING_KEY, or configure git's user.signingkey with gpg.format=ssh")?;
    let (trust, _) = check::worktree_trust(doc)?;
    if let Some(why) = never_counts(&signer, &trust) {
        return Err(why);
    }
    let tpath = default_transcript_path(doc);
    // The approval is appended to the sidecar under the transcript's lock:
    // a link or a FIFO in either place is refused before anything is read.
    for p in [&tpath, &noma_provenance::sidecar_path(doc)] {
        noma_store::fsio::contain::check_writable(p)
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    if std::fs::symlink_metadata(&tpath).is_err() {
        return Err(format!(
            "{}: no transcript ({}), so no record waits for approval; start one with \
             `noma record {}` (agents' `noma patch --inplace` and MCP edits record themselves)",
            doc.display(),
            tpath.display(),
            doc.display()
        ));
    }
    let report = super::report::for_doc(doc, None)?;
    let bytes =
        noma_store::fsio::read_regular(&tpath).map_err(|e| format!("{}: {e}", tpath.display()))?;
    let parsed =
        transcript::parse_transcript(&bytes).map_err(|e| format!("{}: {e}", tpath.display()))?;
    // The work tree's policy says which principals are agents (the check
    // trusts the base's).
    let waiting: std::collections::HashSet<usize> =
        approval::pending(&tpath, &parsed.entries, &report.records, through)
            .map_err(|e| e.to_string())?
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
    pub fn changed_blocks(&self) -> Result<Vec<DocDiff>, String> {
        let pending = self.pending();
        (self.start.clone())
            .and_then(|start| pending_blocks(start, &self.bytes, &self.entries, &pending))
    }

    /// Appends the signed approval of every waiting record to `doc`'s
    /// sidecar; returns the sidecar's path.
    pub fn approve(&self, doc: &Path) -> Result<PathBuf, String> {
        let records: Vec<&Record> = self.pending().into_iter().map(|e| &e.record).collect();
        let Some(first) = self.entries.first() else {
            return Err(format!(
                "{}: no record to approve",
                self.transcript.display()
            ));
        };
        let lineage = noma_provenance::canonical::Lineage::of(&first.record);
        approval::write(&self.signer, doc, &self.transcript, &records, &lineage)
            .map_err(|e| e.to_string())
    }
}

/// Why an approval signed by `signer` could never count under `trust`
/// (the work tree's policy and allowed signers; the check trusts the
/// base's, of which the work tree is the approver's best view): its
/// principal is an agent principal, or the allowed signers do not list its
/// key for that principal. `None`: it can count.
pub(crate) fn never_counts(signer: &Signer, trust: &Trust) -> Option<String> {
    let principal = &signer.principal;
    if trust.policy.is_agent_principal(principal) {
        return Some(format!(
            "{principal} is an agent principal (agent_principals in {}): only a person approves, so an approval signed with this key would never count; nothing was written",
            noma_provenance::config::CONFIG_PATH
        ));
    }
    if !trust.signers.allows(principal, signer.public_key()) {
        return Some(format!(
            "{} does not list this key ({}) for {principal}: an approval signed with it would never count; nothing was written (list `{principal} namespaces=\"noma\" {}` there on the base branch, or approve with a listed key)",
            noma_provenance::ALLOWED_SIGNERS_PATH,
            signer.public_key().fingerprint(ssh_key::HashAlg::Sha256),
            signer.public_key().to_openssh().unwrap_or_default()
        ));
    }
    None
}

/// The document before the first applied record of `entries`, found as
/// `noma replay` finds its start: the empty document of a genesis record
/// (`None`), the document itself when it is still at that state, else the
/// version with that sha256 in its git history (by content, under any
/// name). Err says what was searched.
fn start_state(doc: &Path, entries: &[Entry]) -> Result<Option<String>, String> {
    let first = entries
        .iter()
        .find(|e| e.record.patch_result == transcript::PatchResult::Applied);
    let Some(pre) = first.map(|e| e.record.pre_sha256.as_str()) else {
        return Ok(None);
    };
    if pre == noma_core::doc::hash::EMPTY_SHA256 {
        return Ok(None);
    }
    let text = noma_store::fsio::read_document(doc).map_err(|e| e.to_string())?;
    if noma_core::doc::hash::sha256_hex(text.as_bytes()) == pre {
        return Ok(Some(text));
    }
    match crate::history_replay::find_in_worktree_history(doc, None, pre) {
        (Some(found), _) => Ok(Some(found)),
        (None, searched) => Err(format!(
            "the transcript starts from sha256 {}, and no version of the document has it ({})",
            transcript::short_sha(pre),
            searched.unwrap_or_else(|why| why)
        )),
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
) -> Result<Vec<DocDiff>, String> {
    let first = pending.first().map_or(0, |e| e.offset);
    let mut text = transcript::replay::state_after(&t_bytes[..first], start.as_deref())
        .map_err(|d| format!("line {}: {}", d.line, d.message))?
        .unwrap_or_default();
    let mut memo = noma_core::doc::memo::ParseMemo::new();
    let mut out = Vec::with_capacity(pending.len());
    let mut wanted = pending.iter().peekable();
    for e in entries.iter().skip_while(|e| e.offset < first) {
        let Some(next) = wanted.peek() else { break };
        let after = if e.record.patch_result == transcript::PatchResult::Applied {
            noma_core::patch::apply_ops_with(&mut memo, &text, std::slice::from_ref(&e.record.op))
                .map_err(|err| format!("line {}: {}", e.line, err.message))?
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

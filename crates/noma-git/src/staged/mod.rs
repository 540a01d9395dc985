//! Guard checks run by the git hooks: staged documents, transcripts replaying
//! to the committed bytes, fork detection on merges, `noma record`.
//!
//! Everything is judged from the index and the object database, and only
//! the staged `.noma` documents and transcripts are touched, so a hook
//! costs what the change costs, not what the repository holds. The working
//! tree is read for one thing: when a staged document has no transcript
//! staged, or an unrecorded edit, the transcript file beside it may hold
//! the records, left out by `git commit -a` (new files) or `git commit
//! <doc>`; that is reported as `transcript-unstaged` with `git add` as the
//! fix (a gitignored transcript is never consulted).
//!
//! A document staged as a symlink (or whose transcript is) is refused
//! (`symlinked-document`): git stores the link's target path, not the
//! bytes a transcript hashes, so following it in the hook would pass what
//! clones and the merge driver never see. A document missing from the
//! index must not leave its transcript there (`transcript-orphaned`),
//! unless the transcript ends with `noma rm`'s removal record: then it is
//! the document's tombstone, checked like any transcript against the empty
//! document; a guarded document deleted with its transcript is
//! `document-removed` (`removal`). A commit that changes only a
//! provenance sidecar is checked as a change of its document.
//!
//! Per staged document the checks are, in order: the blob is text; the
//! validator passes (errors block, warnings block under `strict`); and when
//! it has a transcript (`<doc>.patches`) or the policy requires one:
//!
//! 1. append-only: the reference transcript (HEAD's; during a merge the
//!    parent's that the merged transcript extends; for `git commit
//!    --amend` HEAD's parent's, see [`crate::git::amend`]) is a byte prefix of the
//!    staged one, otherwise the first rewritten or removed line is named;
//! 2. the new records chain onto the reference's last line and replay from
//!    the reference document (or, for a transcript new in this commit, from
//!    the blob in the path's history whose sha256 is the first applied
//!    record's `pre_sha256`) to exactly the staged document;
//! 3. a document that differs from what its transcript explains is an
//!    unrecorded edit, reported with the blocks that differ.
//!
//! During a merge, a merged transcript that is not linear on either parent
//! (one parent's transcript followed by records that replay on top of it)
//! is accepted when it is a successor of both parents under
//! [`noma_merge::lineage`] (every op of both kept exactly once, the
//! whole replaying to the staged document). Otherwise, when both parents
//! appended records to one transcript after their merge base, the fork is
//! reported with the first record of each side: both claim the same
//! prior state. Forks are never merged silently.
//!
//! The checks live in files named for their step: the per-document check
//! (`document`), the transcript check (`transcript`) and the replay of its
//! new records (`replay`), the streamed check
//! of a plain append (`streamed`), the merge-in-progress rules
//! (`merging`), a transcript left without its document (`orphan`),
//! signatures (`signatures`), a staged private key (`secrets`, any file)
//! and the findings they report (`findings`).
//! Each step is a plain function of its file taking the [`Guard`] (which
//! holds what they share) as `g`, called by its path (`document::check_doc`),
//! so a reader follows a call to its file by name; `Guard`'s own methods,
//! all in this file, are the run's sequence ([`Guard::check_index`]) and
//! the reference commit's reads (decision `patch-request-one-path`).

mod document;
mod findings;
mod merging;
mod orphan;
mod removal;
mod replay;
mod secrets;
mod signatures;
mod streamed;
mod transcript;

pub use findings::{Finding, Report};

use std::collections::{BTreeMap, HashSet};

use findings::symlink_finding;

use crate::cache::BlockCache;
use crate::git::repo::{GitError, Repo, Staged};
use crate::git::Oid;
use noma_core::transcript::{document_path, transcript_path};
use noma_provenance::config::Policy;

/// Everything a check run needs.
pub struct Guard<'a> {
    repo: &'a Repo,
    policy: &'a Policy,
    cache: &'a BlockCache,
    /// HEAD when the guard was made.
    head: Option<Oid>,
    /// (HEAD, MERGE_HEAD) during a merge.
    merge: Option<(Oid, Oid)>,
    /// The commit the new one will follow, which staged transcripts must
    /// extend: HEAD, or HEAD's parent for `git commit --amend` (HEAD is
    /// being replaced, so its records may be rewritten), settled by
    /// [`Guard::check_index`]. `None` before the first commit.
    reference: std::cell::Cell<Option<Oid>>,
}

impl<'a> Guard<'a> {
    /// A guard over `repo`'s index. Fork detection is on whenever a merge
    /// is in progress (pre-merge-commit, or a commit concluding a
    /// conflicted merge).
    pub fn new(repo: &'a Repo, policy: &'a Policy, cache: &'a BlockCache) -> Self {
        let head = repo.head_commit();
        Guard {
            repo,
            policy,
            cache,
            head,
            merge: head.zip(repo.merge_head()),
            reference: std::cell::Cell::new(head),
        }
    }

    /// The staged changes against the reference commit. Whether git is
    /// amending is asked only when a transcript changed against HEAD (the
    /// only case it decides), so other commits inspect no process.
    fn staged_against_reference(&self) -> Result<Staged, GitError> {
        self.reference.set(self.head);
        let staged = self.repo.staged_against(self.head)?;
        let transcript_changed = staged
            .changes
            .iter()
            .any(|c| document_path(&c.path).is_some());
        let Some(head) = self.head else {
            return Ok(staged);
        };
        if self.merge.is_some() || !transcript_changed || !crate::git::amend::amend_in_progress() {
            return Ok(staged);
        }
        self.reference.set(self.repo.first_parent(head));
        self.repo.staged_against(self.reference.get())
    }

    /// `path` in the reference commit (see `reference`).
    fn reference_blob(&self, path: &str) -> Result<Option<Vec<u8>>, GitError> {
        match self.reference.get() {
            Some(c) => self.repo.blob_at(c, path),
            None => Ok(None),
        }
    }

    /// Checks every staged document selected by the policy.
    pub fn check_index(&self, hook: &str) -> Result<Report, GitError> {
        let mut report = Report {
            hook: hook.to_string(),
            ..Report::default()
        };
        let staged = self.staged_against_reference()?;
        // A merge's changes are the other branch's, committed there.
        if self.merge.is_none() {
            report
                .findings
                .extend(secrets::private_keys(self, &staged)?);
        }
        let docs = self.documents_of(&staged);
        let links = self.staged_links(&staged, &docs)?;
        for (doc, head_path) in &docs {
            self.check_entry(&staged, [doc, head_path], &links, &mut report)?;
        }
        // Signatures, trusted from the reference commit (a commit cannot
        // trust a key it adds): a forgery blocks the commit, a missing
        // approval never does.
        if report.transcripts > 0 {
            signatures::check_signatures(self, &staged, &docs, &mut report.findings)?;
        }
        report.blocked = report.findings.iter().any(|f| f.blocking);
        Ok(report)
    }

    /// The documents the staged changes concern and the policy selects:
    /// doc path -> its path at HEAD (differs for renames).
    fn documents_of(&self, staged: &Staged) -> BTreeMap<String, String> {
        let mut docs: BTreeMap<String, String> = BTreeMap::new();
        for ch in &staged.changes {
            // A commit that changes only a provenance sidecar is checked as
            // a change of its document (where its transcript's path says
            // the document was: a sidecar can follow a move a commit late).
            if let Some(doc) = noma_provenance::sidecar_change::document_of(&ch.path) {
                if self.policy.is_checked(doc) {
                    docs.entry(doc.to_string())
                        .or_insert_with(|| doc.to_string());
                }
                continue;
            }
            if let Some(doc) = document_path(&ch.path) {
                if self.policy.is_checked(doc) {
                    let head = ch
                        .old_path
                        .as_deref()
                        .and_then(document_path)
                        .unwrap_or(doc);
                    docs.entry(doc.to_string())
                        .or_insert_with(|| head.to_string());
                }
                continue;
            }
            if !self.policy.is_checked(&ch.path) {
                // A guarded document moved to a name the policy does not
                // guard leaves its transcript's guard: it is checked as
                // missing at its old path, as `noma reconcile` does.
                if let Some(old) = (ch.old_path.as_deref())
                    .filter(|o| document_path(o).is_none() && self.policy.is_checked(o))
                {
                    docs.insert(old.to_string(), old.to_string());
                }
                continue;
            }
            // A deleted document is kept in the list: its transcript must go
            // too. git pairs a document removed with `noma rm` with a
            // similar new one as a rename; its tombstone says it is not.
            let head = match ch.old_path.as_deref() {
                Some(old) if !self.removed_in_index(staged, old) => old.to_string(),
                _ => ch.path.clone(),
            };
            docs.insert(ch.path.clone(), head);
        }
        docs
    }

    /// Whether the index holds `doc`'s transcript as a tombstone (its
    /// last record a removal). A transcript that cannot be read counts as
    /// none here; its own check reports it.
    fn removed_in_index(&self, staged: &Staged, doc: &str) -> bool {
        let tpath = noma_core::transcript::transcript_path(doc);
        (self.repo.staged_blob(staged, &tpath).ok().flatten())
            .is_some_and(|t| noma_core::transcript::tombstone::removal(&t).is_some())
    }

    /// Which of the documents and their transcripts are staged as
    /// symlinks, which are refused; the index tells (one read, only when
    /// there is something to check).
    fn staged_links(
        &self,
        staged: &Staged,
        docs: &BTreeMap<String, String>,
    ) -> Result<HashSet<String>, GitError> {
        if docs.is_empty() {
            return Ok(Default::default());
        }
        let mut paths: Vec<String> = Vec::with_capacity(docs.len() * 2);
        for doc in docs.keys() {
            paths.push(doc.clone());
            paths.push(transcript_path(doc));
        }
        let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
        self.repo.staged_symlinks(staged, &paths)
    }

    /// Checks one document (`[doc, its path at HEAD]`) into `report`: a
    /// missing one for an orphaned transcript, a symlinked one (or
    /// transcript) refused, any other by [`document::check_doc`].
    fn check_entry(
        &self,
        staged: &Staged,
        [doc, head_path]: [&str; 2],
        links: &HashSet<String>,
        report: &mut Report,
    ) -> Result<(), GitError> {
        let Some(bytes) = self.repo.staged_blob(staged, doc)? else {
            return removal::check_missing(self, staged, [doc, head_path], report);
        };
        if links.contains(doc) {
            report.findings.push(symlink_finding(doc, &bytes));
            return Ok(());
        }
        let tpath = transcript_path(doc);
        if links.contains(&tpath) {
            let target = self.repo.staged_blob(staged, &tpath)?.unwrap_or_default();
            report.findings.push(symlink_finding(&tpath, &target));
            return Ok(());
        }
        report.documents += 1;
        let (findings, had_transcript) = document::check_doc(self, staged, doc, head_path, &bytes)?;
        report.transcripts += usize::from(had_transcript);
        report.findings.extend(findings);
        Ok(())
    }

    /// `path` in the reference commit as text (None when absent or not
    /// UTF-8).
    fn head_text(&self, path: &str) -> Result<Option<String>, GitError> {
        Ok(self
            .reference_blob(path)?
            .and_then(|b| String::from_utf8(b).ok()))
    }

    /// The document at `path` as the reference commit leaves it: its
    /// text, or the empty document where the commit holds only its
    /// tombstone (removed with `noma rm`), so a document written over a
    /// tombstone is an edit its transcript must record, not a new one.
    fn head_state(&self, path: &str) -> Result<Option<String>, GitError> {
        if let Some(t) = self.head_text(path)? {
            return Ok(Some(t));
        }
        let tpath = noma_core::transcript::transcript_path(path);
        Ok(self
            .reference_blob(&tpath)?
            .filter(|t| noma_core::transcript::tombstone::removal(t).is_some())
            .map(|_| String::new()))
    }
}

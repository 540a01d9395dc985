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
//! index must not leave its transcript there (`transcript-orphaned`).
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
//! [`crate::merge::succession`] (every op of both kept exactly once, the
//! whole replaying to the staged document). Otherwise, when both parents
//! appended records to one transcript after their merge base, the fork is
//! reported with the first record of each side: both claim the same
//! prior state. Forks are never merged silently.

use crate::merge::unjoin;
use noma_core::diag::shell_word;
use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::cache::BlockCache;
use crate::config::Policy;
use crate::git::repo::{GitError, Repo, Staged};
use crate::git::Oid;
use noma_core::diag::Severity;
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::{
    self, document_path, replay, split_lines, transcript_path, PatchResult, Record,
};

/// One problem found by a hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `error` or `warning`.
    pub severity: Severity,
    /// Whether this finding blocks the commit.
    pub blocking: bool,
    /// Machine-readable code (validator rule code or a guard code).
    pub code: String,
    /// Repository-relative path of the file concerned.
    pub path: String,
    /// 1-based line in that file, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column on that line (validator findings; 1 when only the
    /// line is known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Finding {
    fn error(code: &str, path: &str, line: Option<usize>, message: String) -> Finding {
        Finding {
            severity: Severity::Error,
            blocking: true,
            code: code.to_string(),
            path: path.to_string(),
            line,
            column: None,
            message,
            fix: None,
        }
    }

    fn fix(mut self, hint: impl Into<String>) -> Finding {
        self.fix = Some(hint.into());
        self
    }

    /// The one-line human form, `noma check`'s ([`noma_core::diag::human_line`]):
    /// `ERROR [code] path:line:col: message (fix: hint)`.
    pub fn to_line(&self) -> String {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let mut d = noma_core::diag::Diagnostic::new(self.severity, &self.code, &self.message);
        d.pos = self.line.map(|l| noma_core::diag::Pos {
            line: clamp(l),
            column: clamp(self.column.unwrap_or(1)),
        });
        let mut out = noma_core::diag::human_line(&self.path, &d);
        if let Some(f) = &self.fix {
            out.push_str(&format!(" (fix: {f})"));
        }
        out
    }
}

/// The result of one hook run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Which hook ran (`pre-commit`, `pre-merge-commit`).
    pub hook: String,
    /// Documents checked.
    pub documents: usize,
    /// Transcripts verified.
    pub transcripts: usize,
    /// Every finding, in path order.
    pub findings: Vec<Finding>,
    /// True when a finding blocks the commit.
    pub blocked: bool,
}

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
        // doc path -> its path at HEAD (differs for renames).
        let mut docs: BTreeMap<String, String> = BTreeMap::new();
        let staged = self.staged_against_reference()?;
        for ch in &staged.changes {
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
                continue;
            }
            // A deleted document is kept in the list: its transcript must go too.
            let head = ch.old_path.clone().unwrap_or_else(|| ch.path.clone());
            docs.insert(ch.path.clone(), head);
        }
        // Symlinked documents are refused; the index tells (one read, only
        // when there is something to check).
        let links = if docs.is_empty() {
            Default::default()
        } else {
            let mut paths: Vec<String> = Vec::with_capacity(docs.len() * 2);
            for doc in docs.keys() {
                paths.push(doc.clone());
                paths.push(transcript_path(doc));
            }
            let paths: Vec<&str> = paths.iter().map(String::as_str).collect();
            self.repo.staged_symlinks(&staged, &paths)?
        };
        for (doc, head_path) in &docs {
            let Some(bytes) = self.repo.staged_blob(&staged, doc)? else {
                report
                    .findings
                    .extend(self.orphan(&staged, doc, head_path)?);
                continue;
            };
            let is_link = |p: &str| links.contains(p);
            if is_link(doc) {
                report.findings.push(symlink_finding(doc, &bytes));
                continue;
            }
            let tpath = transcript_path(doc);
            if is_link(&tpath) {
                let target = self.repo.staged_blob(&staged, &tpath)?.unwrap_or_default();
                report.findings.push(symlink_finding(&tpath, &target));
                continue;
            }
            report.documents += 1;
            let (findings, had_transcript) = self.check_doc(&staged, doc, head_path, &bytes)?;
            report.transcripts += usize::from(had_transcript);
            report.findings.extend(findings);
        }
        // Signatures (issue 34), trusted from the reference commit: a
        // forgery blocks the commit, a missing approval never does.
        if report.transcripts > 0 {
            self.check_signatures(&staged, &docs, &mut report.findings)?;
        }
        report.blocked = report.findings.iter().any(|f| f.blocking);
        Ok(report)
    }

    /// The provenance findings of the staged documents (nothing read past
    /// the reference commit's policy when it turns provenance off).
    fn check_signatures(
        &self,
        staged: &Staged,
        docs: &BTreeMap<String, String>,
        out: &mut Vec<Finding>,
    ) -> Result<(), GitError> {
        use crate::provenance::{check, sidecar::sidecar_rel, ALLOWED_SIGNERS_PATH};
        let config = self.reference_blob(crate::config::CONFIG_PATH)?;
        let trust = match check::trust_from(config.as_deref(), || {
            self.reference_blob(ALLOWED_SIGNERS_PATH).ok().flatten()
        }) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok(()),
            Err(e) => {
                out.push(Finding::error(
                    check::TRUST_INVALID,
                    crate::config::CONFIG_PATH,
                    None,
                    e,
                ));
                return Ok(());
            }
        };
        for (doc, head_path) in docs {
            let mut staged_files = std::collections::HashMap::new();
            for p in [
                transcript_path(doc),
                transcript_path(head_path),
                sidecar_rel(doc),
                sidecar_rel(head_path),
            ] {
                let there = self.repo.staged_blob(staged, &p)?.is_some();
                staged_files.insert(p, there);
            }
            if let Some((l, fix)) = check::rename_problem(doc, head_path, &|p| {
                staged_files.get(p).copied().unwrap_or(false)
            }) {
                out.push(Finding::error(l.problem.code, &l.path, None, l.problem.message).fix(fix));
            }
            let t = self.repo.staged_blob(staged, &transcript_path(doc))?;
            let head_t = self.reference_blob(&transcript_path(head_path))?;
            let side = self.repo.staged_blob(staged, &sidecar_rel(doc))?;
            for l in check::hook_problems(
                &trust,
                doc,
                t.as_deref(),
                head_t.as_deref(),
                side.as_deref(),
            ) {
                let line = Some(l.problem.line).filter(|n| *n > 0);
                let mut f = Finding::error(l.problem.code, &l.path, line, l.problem.message);
                // `signatures: warn` reports without blocking.
                if l.problem.level != "error" {
                    f.severity = Severity::Warning;
                    f.blocking = false;
                }
                out.push(f.fix(format!(
                    "sign with the writer's key (noma patch --key, NOMA_SIGNING_KEY) and git add {}",
                    shell_word(&sidecar_rel(doc))
                )));
            }
        }
        Ok(())
    }

    /// A document missing from the index: its transcript must not stay.
    fn orphan(
        &self,
        staged: &Staged,
        doc: &str,
        head_path: &str,
    ) -> Result<Option<Finding>, GitError> {
        let tpath = transcript_path(doc);
        if self.repo.staged_blob(staged, &tpath)?.is_none() {
            return Ok(None); // both gone (or neither there): nothing to check
        }
        let at_head = self.reference_blob(head_path)?.is_some();
        let f = if head_path != doc && at_head {
            Finding::error(
                "transcript-orphaned",
                &tpath,
                None,
                format!("the transcript moved but its document {head_path} did not move along"),
            )
            .fix(format!(
                "git mv {head_path_sh} {doc_sh}",
                head_path_sh = shell_word(head_path),
                doc_sh = shell_word(doc)
            ))
        } else if at_head {
            Finding::error(
                "transcript-orphaned",
                &tpath,
                None,
                format!("{doc} is deleted but its transcript stays"),
            )
            .fix(format!(
                "delete it too: git rm {tpath_sh} (or keep the document: git restore --staged --worktree --source=HEAD {doc_sh})",
                tpath_sh = shell_word(&tpath),
                doc_sh = shell_word(doc),
            ))
        } else if let Some(moved) = self.moved_copy_of(staged, &tpath)? {
            // A merge across a rename git did not detect for the transcript
            // (its records are long unique lines) leaves the other branch's
            // copy at the old path.
            Finding::error(
                "transcript-orphaned",
                &tpath,
                None,
                format!(
                    "the transcript is staged without its document {doc}; it starts with the records of {moved}, so the document moved there and this is an old copy (a merge across the move leaves it): record what it added with `noma record` on the moved document, then remove it"
                ),
            )
            .fix(format!("git rm -q -f {tpath_sh}", tpath_sh = shell_word(&tpath)))
        } else {
            Finding::error(
                "transcript-orphaned",
                &tpath,
                None,
                format!("the transcript is staged without its document {doc}"),
            )
            .fix(format!("git add {doc_sh}", doc_sh = shell_word(doc)))
        };
        Ok(Some(f))
    }

    /// Another staged transcript whose first line is the first line of
    /// the one at `tpath`: the same history under a new path.
    fn moved_copy_of(&self, staged: &Staged, tpath: &str) -> Result<Option<String>, GitError> {
        let first_line = |b: &[u8]| {
            b.split_inclusive(|&c| c == b'\n')
                .next()
                .map(<[u8]>::to_vec)
        };
        let Some(ours) = self
            .repo
            .staged_blob(staged, tpath)?
            .and_then(|b| first_line(&b))
        else {
            return Ok(None);
        };
        for other in self
            .repo
            .index_paths_ending_with(&transcript_path(".noma"))?
        {
            if other == tpath {
                continue;
            }
            let first = self.repo.index_blob(&other)?.and_then(|b| first_line(&b));
            if first.as_deref() == Some(ours.as_slice()) {
                return Ok(Some(other));
            }
        }
        Ok(None)
    }

    fn check_doc(
        &self,
        staged: &Staged,
        path: &str,
        head_path: &str,
        bytes: &[u8],
    ) -> Result<(Vec<Finding>, bool), GitError> {
        if let Some(f) = too_large(path, bytes.len()) {
            return Ok((vec![f], false));
        }
        let mut out = Vec::new();
        let text = match noma_core::doc::source::decode(path, bytes) {
            Ok(t) => t,
            Err(e) => {
                out.push(
                    Finding::error("not-text", path, None, format!("staged content: {e}")).fix(
                        format!(
                            "save it as UTF-8 text, then git add {path_sh}",
                            path_sh = shell_word(path)
                        ),
                    ),
                );
                return Ok((out, false));
            }
        };
        self.validate(path, text, &mut out);
        let tpath = transcript_path(path);
        let head_tpath = transcript_path(head_path);
        let paths = [path, head_path, tpath.as_str()];
        if let Some(found) = self.streamed_append(staged, paths, text)? {
            out.extend(found);
            return Ok((out, true));
        }
        let staged_t = self.repo.staged_blob(staged, &tpath)?;
        let head_t = self.reference_blob(&head_tpath)?;
        let Some(staged_t) = staged_t else {
            if head_t.is_none() {
                // `git commit -a` and `git commit <doc>` leave a new
                // transcript behind: its records would miss the commit.
                if let Some(f) = self.unstaged_transcript(paths, None, text)? {
                    out.push(f);
                    return Ok((out, false));
                }
            }
            if head_t.is_some() {
                let (msg, fix) = if head_path != path {
                    (
                        format!("the document moved from {head_path} but its transcript {head_tpath} did not move along"),
                        format!("git mv {head_tpath_sh} {tpath_sh}",
                        head_tpath_sh = shell_word(&head_tpath),
                        tpath_sh = shell_word(&tpath),
                    ),
                    )
                } else {
                    (
                        "the transcript is deleted while the document remains (transcripts are append-only)".to_string(),
                        format!("git restore --staged --worktree --source=HEAD {tpath_sh}",
                        tpath_sh = shell_word(&tpath),
                    ),
                    )
                };
                out.push(Finding::error("transcript-removed", &tpath, None, msg).fix(fix));
            } else if self.policy.requires_transcript(path) {
                out.push(
                    Finding::error(
                        "transcript-missing",
                        path,
                        None,
                        format!("the policy requires a transcript ({tpath}) for this document; `noma record` starts one with a genesis record"),
                    )
                    // A genesis record makes the transcript replay from
                    // its own content, with or without a committed base.
                    .fix(format!(
                        "noma record {path_sh} && git add {path_sh} {tpath_sh}",
                        path_sh = shell_word(path),
                        tpath_sh = shell_word(&tpath),
                    )),
                );
            }
            return Ok((out, false));
        };
        let cut = head_t.as_ref().is_some_and(|h| !staged_t.starts_with(h));
        if cut && self.undoes_reverted_commit(paths, &staged_t, text)? {
            return Ok((out, true));
        }
        let head_doc = self.head_text(head_path)?;
        let mut found = Vec::new();
        self.check_transcript(paths, head_t, head_doc, &staged_t, text, &mut found)?;
        if found.iter().any(|f| f.blocking) {
            // Looked for only when something failed: it reads every line.
            if let Some(join) = unjoin::find_join(&staged_t) {
                // A fork finding (at a merge) keeps its account of both
                // sides and gains the fix; anything else is this one cause.
                let fix = joined_finding(path, &tpath, join);
                match found.iter_mut().find(|f| f.code == "transcript-fork") {
                    Some(fork) => {
                        fork.fix = fix.fix;
                        out.push(fork.clone());
                    }
                    None => out.push(fix),
                }
                return Ok((out, true));
            }
        }
        let unrecorded = |f: &Finding| f.blocking && f.code == "unrecorded-edit" && f.path == path;
        if found.iter().any(unrecorded) {
            // The records may be in the working tree's transcript, unstaged
            // (`git commit <doc>`): then `git add` is the whole fix.
            if let Some(f) = self.unstaged_transcript(paths, Some(&staged_t), text)? {
                found.retain(|f| !unrecorded(f));
                found.push(f);
            } else if let Some(f) = self.partly_staged(path, &tpath, &staged_t) {
                found.retain(|f| !unrecorded(f));
                found.push(f);
            }
        }
        out.extend(found);
        Ok((out, true))
    }

    /// `git revert -n` of the commit that made the document and transcript
    /// what HEAD holds, then `git commit`: the staged pair is byte for byte
    /// what the reverted commit's parent held, a pair this hook accepted
    /// then. `git revert` without `-n` writes the same bytes and commits
    /// without running the hook, so both are treated alike.
    fn undoes_reverted_commit(
        &self,
        [path, _, tpath]: [&str; 3],
        staged_t: &[u8],
        staged_doc: &str,
    ) -> Result<bool, GitError> {
        let Ok(reverted) = self.repo.resolve("REVERT_HEAD") else {
            return Ok(false);
        };
        let Some(parent) = self.repo.first_parent(reverted) else {
            return Ok(false);
        };
        Ok(
            self.repo.blob_at(parent, tpath)?.as_deref() == Some(staged_t)
                && self.repo.blob_at(parent, path)?.as_deref() == Some(staged_doc.as_bytes()),
        )
    }

    /// The finding for a working-tree transcript that differs from the
    /// staged one (`staged_t`, None when absent) and explains the staged
    /// document on its own: the edit is recorded, only `git add` is missing.
    /// This is the one read of the working tree, and only a check that
    /// would otherwise pass a bare document or report an unrecorded edit
    /// makes it.
    fn unstaged_transcript(
        &self,
        paths: [&str; 3],
        staged_t: Option<&[u8]>,
        staged_doc: &str,
    ) -> Result<Option<Finding>, GitError> {
        let [path, head_path, tpath] = paths;
        let Some(work_t) = self.repo.worktree_file(tpath) else {
            return Ok(None);
        };
        if staged_t == Some(work_t.as_slice()) {
            return Ok(None);
        }
        let head_t = self.reference_blob(&transcript_path(head_path))?;
        let head_doc = self.head_text(head_path)?;
        let mut found = Vec::new();
        self.check_transcript(paths, head_t, head_doc, &work_t, staged_doc, &mut found)?;
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
    fn partly_staged(&self, path: &str, tpath: &str, staged_t: &[u8]) -> Option<Finding> {
        let work = self.repo.worktree_file(path)?;
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

    fn head_text(&self, path: &str) -> Result<Option<String>, GitError> {
        Ok(self
            .reference_blob(path)?
            .and_then(|b| String::from_utf8(b).ok()))
    }

    fn validate(&self, path: &str, text: &str, out: &mut Vec<Finding>) {
        let opts = noma_core::validate::Options {
            ignore_rules: self.policy.file.ignore_rules.clone(),
            ..noma_core::validate::Options::default()
        };
        let doc = noma_core::doc::parse(text);
        for d in noma_core::validate::validate(&doc, &opts) {
            if d.severity == Severity::Info {
                continue;
            }
            let blocking = d.severity == Severity::Error || self.policy.file.strict;
            out.push(Finding {
                severity: d.severity,
                blocking,
                code: d.code,
                path: path.to_string(),
                line: d.pos.map(|p| p.line as usize),
                column: d.pos.map(|p| p.column as usize),
                message: d.message,
                fix: None,
            });
        }
    }

    #[allow(clippy::too_many_arguments)]
    /// `paths` = [document, its path at HEAD, transcript].
    fn check_transcript(
        &self,
        paths: [&str; 3],
        head_t: Option<Vec<u8>>,
        head_doc: Option<String>,
        staged_t: &[u8],
        staged_doc: &str,
        out: &mut Vec<Finding>,
    ) -> Result<(), GitError> {
        let [path, head_path, tpath] = paths;
        let (mut ref_t, mut ref_doc) = (head_t, head_doc);
        if let Some((t, doc)) = self.unjoined(
            path,
            ref_t.as_deref(),
            ref_doc.as_deref(),
            staged_t,
            staged_doc,
        ) {
            // HEAD holds a joined transcript (a merge made without the
            // driver); what `noma repair` makes of it stands in for it.
            ref_t = Some(t);
            ref_doc = Some(doc);
        }
        if let Some((head, theirs)) = self.merge {
            // A side or the merge base may hold the files under the name
            // HEAD has (the other side moved them): the staged path first,
            // then HEAD's.
            let head_tpath = transcript_path(head_path);
            let at = |commit: Oid, p: &str, old: &str| -> Result<Option<Vec<u8>>, GitError> {
                match self.repo.blob_at(commit, p)? {
                    Some(b) => Ok(Some(b)),
                    None => self.repo.blob_at(commit, old),
                }
            };
            let their_t = at(theirs, tpath, &head_tpath)?;
            let their_doc = at(theirs, path, head_path)?.and_then(|b| String::from_utf8(b).ok());
            let base_t = match self.repo.merge_base(head, theirs) {
                Some(b) => at(b, tpath, &head_tpath)?,
                None => None,
            }
            .unwrap_or_default();
            let extends = |t: &Option<Vec<u8>>| {
                t.as_ref()
                    .is_some_and(|t| t.len() > base_t.len() && t.starts_with(&base_t))
            };
            let forked = extends(&ref_t) && extends(&their_t);
            // Linear on top of one parent: that parent's transcript is a
            // prefix and the rest replays from that parent's document.
            let linear_on = |t: &Option<Vec<u8>>, d: &Option<String>| -> Result<bool, GitError> {
                let Some(t) = t else { return Ok(false) };
                if !staged_t.starts_with(t) {
                    return Ok(false);
                }
                Ok(self
                    .verify_tail(paths, Some(t), d.as_deref(), staged_t, staged_doc)?
                    .iter()
                    .all(|f| !f.blocking))
            };
            if !linear_on(&ref_t, &ref_doc)? {
                if linear_on(&their_t, &their_doc)? {
                    ref_t = their_t;
                    ref_doc = their_doc;
                } else if self.succeeds_both(path, [&ref_t, &their_t], staged_t, staged_doc) {
                    // Not an append to either parent, but every op of both
                    // kept once and the whole replays (e.g. a merge resolved
                    // with `noma reconcile`): see crate::merge::succession.
                    return Ok(());
                } else if forked {
                    let mut f = fork_finding(
                        tpath,
                        &base_t,
                        ref_t.as_deref().unwrap_or_default(),
                        their_t.as_deref().unwrap_or_default(),
                    );
                    if [&ref_t, &their_t]
                        .iter()
                        .any(|t| t.as_deref() == Some(staged_t))
                    {
                        // One side's transcript is staged already (a moved
                        // transcript git did not pair, resolved by keeping
                        // one side): recording the merged document on top
                        // of it is the whole fix.
                        f = f.fix(format!(
                            "noma record {path_sh} && git add {path_sh} {tpath_sh}",
                            path_sh = shell_word(path),
                            tpath_sh = shell_word(tpath)
                        ));
                    }
                    out.push(f);
                    return Ok(());
                }
            }
        }
        out.extend(self.verify_tail(
            paths,
            ref_t.as_deref(),
            ref_doc.as_deref(),
            staged_t,
            staged_doc,
        )?);
        Ok(())
    }

    /// When `head_t` is joined ([`unjoin`]) and the staged transcript
    /// extends its linear form (what `noma repair` writes), that form and
    /// the document it replays to. Computed only when the staged transcript
    /// does not simply extend `head_t`.
    fn unjoined(
        &self,
        path: &str,
        head_t: Option<&[u8]>,
        head_doc: Option<&str>,
        staged_t: &[u8],
        staged_doc: &str,
    ) -> Option<(Vec<u8>, String)> {
        let head_t = head_t.filter(|t| !staged_t.starts_with(t))?;
        let join = unjoin::find_join(head_t)?;
        let known = [head_doc, Some(staged_doc)]
            .into_iter()
            .flatten()
            .map(|d| d.as_bytes().to_vec())
            .collect();
        let mut find = crate::merge::doc_finder(Some(self.repo), path, known);
        let r = unjoin::unjoin(head_t, join, head_doc, &mut find).ok()?;
        staged_t
            .starts_with(&r.transcript)
            .then_some((r.transcript, r.doc))
    }

    /// Whether the staged transcript is a successor of both parents'
    /// transcripts under [`crate::merge::succession`] (the one rule the
    /// merge driver and `noma reconcile` use too).
    fn succeeds_both(
        &self,
        path: &str,
        parents: [&Option<Vec<u8>>; 2],
        staged_t: &[u8],
        staged_doc: &str,
    ) -> bool {
        let mut find = crate::merge::doc_finder(Some(self.repo), path, Vec::new());
        parents.iter().all(|p| {
            crate::merge::succession::check(
                p.as_deref().unwrap_or_default(),
                staged_t,
                staged_doc,
                &mut find,
            )
            .is_ok()
        })
    }

    /// Checks that `staged_t` extends `prev_t` and that the new records
    /// replay from `prev_doc` (or a base found in history) to `staged_doc`.
    fn verify_tail(
        &self,
        paths: [&str; 3],
        prev_t: Option<&[u8]>,
        prev_doc: Option<&str>,
        staged_t: &[u8],
        staged_doc: &str,
    ) -> Result<Vec<Finding>, GitError> {
        let [path, _, tpath] = paths;
        let tail = match new_records(path, tpath, prev_t.unwrap_or_default(), staged_t) {
            Ok(t) => t,
            Err(f) => return Ok(vec![*f]),
        };
        match self.verify_new(paths, &tail, prev_t.is_some(), prev_doc, staged_doc)? {
            Tail::Checked(findings) => Ok(findings),
            Tail::Diverged {
                finding,
                first_pre,
                base_is_first_pre,
            } => {
                let off_the_committed_doc = || {
                    prev_t.and_then(crate::merge::final_state).as_deref()
                        == Some(first_pre.as_str())
                        && !base_is_first_pre
                };
                if prev_doc.is_some() && off_the_committed_doc() {
                    // The previous commit holds a document its transcript does not
                    // end at (a rebase, which runs no hooks, merged it block by
                    // block), and the new records go on from where the transcript
                    // ends (`noma record`, as the merge driver advised): the whole
                    // transcript must replay to the staged document, from its base
                    // in history. Only this failure pays for the second replay.
                    return self.verify_tail(paths, None, None, staged_t, staged_doc);
                }
                Ok(vec![finding])
            }
        }
    }

    /// Checks that the records `tail` adds (to a committed transcript when
    /// `has_prev`) replay from `prev_doc` (or a base found in history) to
    /// `staged_doc`.
    fn verify_new(
        &self,
        paths: [&str; 3],
        tail: &NewRecords<'_>,
        has_prev: bool,
        prev_doc: Option<&str>,
        staged_doc: &str,
    ) -> Result<Tail, GitError> {
        let [path, head_path, tpath] = paths;
        if let Some(f) = self.extension_op_finding(path, tpath, &tail.records) {
            return Ok(Tail::Checked(vec![f]));
        }
        let applied: Vec<&(usize, Record)> = tail
            .records
            .iter()
            .filter(|(_, r)| r.patch_result == PatchResult::Applied)
            .collect();
        let (Some((first_line, first)), Some((_, last))) = (applied.first(), applied.last()) else {
            // No new applied record: the document must be what it was.
            return Ok(Tail::Checked(match prev_doc {
                Some(before) if before != staged_doc => {
                    vec![self.unrecorded(path, before, staged_doc, tpath)]
                }
                _ => Vec::new(),
            }));
        };
        let base: Option<String> = match prev_doc {
            Some(d) if has_prev => Some(d.to_string()),
            _ => self.find_base(head_path, &first.pre_sha256, prev_doc)?,
        };
        let Some(base) = base else {
            return Ok(Tail::Checked(self.base_unknown(
                [path, tpath],
                (*first_line, &first.pre_sha256),
                &last.post_sha256,
                !has_prev,
                staged_doc,
            )));
        };
        let after = tail
            .prev_last
            .as_deref()
            .map(|prev_line_sha256| replay::Continuation {
                prev_line_sha256,
                lines_before: tail.offset,
            });
        let rep = replay::replay_after(after, tail.bytes, Some(&base), staged_doc);
        Ok(match rep.divergence {
            None => Tail::Checked(Vec::new()),
            Some(d) => Tail::Diverged {
                finding: divergence_finding([path, tpath], d, prev_doc == Some(staged_doc)),
                first_pre: first.pre_sha256.clone(),
                base_is_first_pre: sha256_hex(base.as_bytes()) == first.pre_sha256,
            },
        })
    }

    /// The check of an append that holds neither transcript (issue 35):
    /// the committed and staged blobs are read side by side, a buffer at a
    /// time, and only the appended records are kept and replayed, from the
    /// committed document. `Some` only when that accepts the commit (or
    /// finds nothing blocking); anything else — a merge, no committed
    /// transcript, a rewritten or torn committed line, a record that does
    /// not replay — returns None and the whole-file check runs, which
    /// names the cause as before. A stream that fails is treated the same.
    fn streamed_append(
        &self,
        staged: &Staged,
        paths: [&str; 3],
        staged_doc: &str,
    ) -> Result<Option<Vec<Finding>>, GitError> {
        let [path, head_path, tpath] = paths;
        let Some(reference) = self.reference.get() else {
            return Ok(None);
        };
        if self.merge.is_some() {
            return Ok(None);
        }
        let (Some(staged_id), Some(head_id)) = (
            self.repo.staged_blob_id(staged, tpath)?,
            self.repo
                .blob_id_at(reference, &transcript_path(head_path))?,
        ) else {
            return Ok(None);
        };
        let ext = if staged_id == head_id {
            // Unchanged: nothing appended (the document alone changed).
            transcript::prefix::Extension {
                lines: 0,
                last_line_sha256: None,
                tail: Vec::new(),
            }
        } else {
            let streams = self
                .repo
                .blob_stream(head_id)
                .and_then(|h| Ok((h, self.repo.blob_stream(staged_id)?)));
            let Ok((mut committed, mut staged_t)) = streams else {
                return Ok(None);
            };
            match transcript::prefix::extension(&mut committed, &mut staged_t) {
                Ok(Some(ext)) => ext,
                Ok(None) | Err(_) => return Ok(None),
            }
        };
        let Ok(tail) = tail_records(path, tpath, ext.lines, ext.last_line_sha256, &ext.tail) else {
            return Ok(None);
        };
        let head_doc = self.head_text(head_path)?;
        match self.verify_new(paths, &tail, true, head_doc.as_deref(), staged_doc)? {
            Tail::Checked(found) if found.iter().all(|f| !f.blocking) => Ok(Some(found)),
            _ => Ok(None),
        }
    }

    /// With `record_text_edits: false`, a new record carrying the
    /// extension op blocks the commit.
    fn extension_op_finding(
        &self,
        path: &str,
        tpath: &str,
        records: &[(usize, Record)],
    ) -> Option<Finding> {
        if self.policy.file.record_text_edits {
            return None;
        }
        let (line, _) = records.iter().find(|(_, r)| {
            noma_core::patch::op_name(&r.op) == Some(noma_core::patch::REPLACE_LINES)
        })?;
        Some(
            Finding::error(
                "transcript-extension-op",
                tpath,
                Some(*line),
                format!(
                    "a new record uses the extension op {}, which {} forbids (record_text_edits: false)",
                    noma_core::patch::REPLACE_LINES,
                    crate::config::CONFIG_PATH
                ),
            )
            .fix(format!(
                "git restore --staged --worktree --source=HEAD {path_sh} {tpath_sh}, then make the edit inside directives (`noma patch --inplace`, or hand edits `noma record` can express as v1.0 block ops)",
                path_sh = shell_word(path),
                tpath_sh = shell_word(tpath),
            )),
        )
    }

    /// No version of the document, under any name, has the first new
    /// record's pre_sha256: the transcript can never replay, so the commit
    /// is blocked with the fix, except in a shallow clone, where the
    /// version may lie beyond the cut (a warning there, an error under
    /// `strict`); only the final hash is compared with the staged document.
    fn base_unknown(
        &self,
        [path, tpath]: [&str; 2],
        (first_line, first_pre): (usize, &str),
        last_post: &str,
        new_transcript: bool,
        staged_doc: &str,
    ) -> Vec<Finding> {
        let mut w = Finding::error(
            "transcript-base-unknown",
            tpath,
            Some(first_line),
            format!(
                "cannot replay: no version of any document in the history has sha256 {first_pre} (the first applied record's pre_sha256){}",
                self.repo.shallow_note()
            ),
        );
        if !self.repo.shallow_note().is_empty() {
            w.severity = Severity::Warning;
            w.blocking = self.policy.file.strict;
        }
        if new_transcript {
            // A new transcript that starts at a never-committed state (made
            // by a tool that writes no genesis record, or copied in): start
            // it over with a genesis record (the old one is kept aside).
            w.message.push_str(
                "; start it over from the document as it is now (the old transcript is kept aside)",
            );
            w = w.fix(format!(
                "mv {tpath_sh} {old_sh} && noma record {path_sh} && git add {tpath_sh}",
                tpath_sh = shell_word(tpath),
                old_sh = shell_word(&format!("{tpath}.old")),
                path_sh = shell_word(path)
            ));
        }
        let mut out = vec![w];
        if last_post != sha256_hex(staged_doc.as_bytes()) {
            out.push(
                Finding::error(
                    "unrecorded-edit",
                    path,
                    None,
                    "the document differs from the state its transcript ends at".into(),
                )
                .fix(format!(
                    "noma record {path_sh} && git add {path_sh} {tpath_sh}",
                    path_sh = shell_word(path),
                    tpath_sh = shell_word(tpath)
                )),
            );
        }
        out
    }

    /// The text whose sha256 is `sha`: the HEAD document, else the first
    /// matching version in the path's history.
    fn find_base(
        &self,
        path: &str,
        sha: &str,
        head_doc: Option<&str>,
    ) -> Result<Option<String>, GitError> {
        if sha == noma_core::doc::hash::EMPTY_SHA256 {
            // A genesis record: the transcript starts from no bytes.
            return Ok(Some(String::new()));
        }
        if let Some(d) = head_doc {
            // A sha256 comparison needs no parse: hash the bytes directly.
            if sha256_hex(d.as_bytes()) == sha {
                return Ok(Some(d.to_string()));
            }
        }
        // By content: the version may have lived under another name
        // (a rename, a copy) or in a merged branch.
        let starts: Vec<Oid> = [self.repo.head_commit(), self.repo.merge_head()]
            .into_iter()
            .flatten()
            .collect();
        let found = self.repo.find_document(&starts, &[path], sha)?;
        Ok(found.and_then(|b| String::from_utf8(b).ok()))
    }

    fn unrecorded(&self, path: &str, before: &str, after: &str, tpath: &str) -> Finding {
        if noma_core::doc::lines::is_crlf_conversion(before.as_bytes(), after.as_bytes()) {
            // Not an edit: a checkout converted it before the -text rules.
            return Finding::error(
                "line-endings-converted",
                path,
                None,
                "the staged document is the committed one with CRLF line endings: git converted it at checkout (core.autocrlf) before the `-text` rules kept documents byte-exact; committing it would change every line".into(),
            )
            .fix(format!(
                "noma hooks install && git restore --staged --worktree --source=HEAD {path_sh}",
                path_sh = shell_word(path)
            ));
        }
        let a = self.cache.doc_info(before);
        let b = self.cache.doc_info(after);
        let (blocks, line) = block_changes(&a.blocks, &b.blocks);
        Finding::error(
            "unrecorded-edit",
            path,
            line,
            format!("changed outside its transcript: {}", describe(&blocks)),
        )
        .fix(format!(
            "noma record {path_sh} && git add {path_sh} {tpath_sh}",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath)
        ))
    }
}

/// What [`Guard::verify_new`] found.
enum Tail {
    /// The findings (none: the new records replay to the staged document).
    Checked(Vec<Finding>),
    /// The replay of the new records diverged.
    Diverged {
        /// Its finding.
        finding: Finding,
        /// The first new applied record's pre_sha256.
        first_pre: String,
        /// The base replay started from has that sha256.
        base_is_first_pre: bool,
    },
}

/// The records a staged transcript adds to the committed one.
struct NewRecords<'t> {
    /// The added bytes.
    bytes: &'t [u8],
    /// Lines of the committed transcript before them.
    offset: usize,
    /// sha256 of the committed transcript's last line.
    prev_last: Option<String>,
    /// The added records with their line numbers in the file.
    records: Vec<(usize, Record)>,
}

/// Reads the records `staged_t` appends to `prev`, or the one finding that
/// stops the check: a rewritten committed line, a torn last line, an
/// unreadable record, a broken chain. Lines are the file's (the chain is
/// checked here rather than left to replay, which counts from the first
/// new record).
fn new_records<'t>(
    path: &str,
    tpath: &str,
    prev: &[u8],
    staged_t: &'t [u8],
) -> Result<NewRecords<'t>, Box<Finding>> {
    let Some(bytes) = staged_t.strip_prefix(prev) else {
        return Err(Box::new(tamper_finding(path, tpath, prev, staged_t)));
    };
    let (prev_lines, _) = split_lines(prev);
    let prev_last = prev_lines.last().map(|l| sha256_hex(l.raw));
    tail_records(path, tpath, prev_lines.len(), prev_last, bytes)
}

/// The records in `bytes`, appended after `offset` committed lines whose
/// last line has sha256 `prev_last`, or the one finding that stops the
/// check (see [`new_records`]).
fn tail_records<'t>(
    path: &str,
    tpath: &str,
    offset: usize,
    prev_last: Option<String>,
    bytes: &'t [u8],
) -> Result<NewRecords<'t>, Box<Finding>> {
    let (lines, torn) = split_lines(bytes);
    if torn.is_some() {
        return Err(Box::new(Finding::error(
            "transcript-torn",
            tpath,
            Some(offset + lines.len() + 1),
            "the last line has no newline (an interrupted append)".into(),
        )
        .fix(format!(
            "noma repair {path_sh} && git add {tpath_sh} (the torn bytes are moved to {tpath}.torn)",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath),
        ))));
    }
    let mut records: Vec<(usize, Record)> = Vec::with_capacity(lines.len());
    let mut prev_sha = prev_last.clone();
    for l in &lines {
        let line = offset + l.number;
        let rec = transcript::parse_record(line, l.raw).map_err(|e| {
            Box::new(Finding::error(
                "transcript-invalid",
                tpath,
                Some(e.line()),
                e.to_string(),
            ))
        })?;
        if let (Some(claimed), Some(actual)) = (&rec.prev_entry_sha256, &prev_sha) {
            if claimed != actual {
                let what = if line == offset + 1 {
                    format!("line {offset} of the committed transcript")
                } else {
                    format!("line {}", line - 1)
                };
                return Err(Box::new(Finding::error(
                    "transcript-tampered",
                    tpath,
                    Some(line),
                    format!(
                        "prev_entry_sha256 does not chain onto {what} (a line was changed, removed or inserted)"
                    ),
                )
                .fix(format!(
                    "git restore --staged --worktree --source=HEAD {path_sh} {tpath_sh}, then redo the edits with `noma patch --inplace`",
                    path_sh = shell_word(path),
                    tpath_sh = shell_word(tpath),
                ))));
            }
        }
        prev_sha = Some(sha256_hex(l.raw));
        records.push((line, rec));
    }
    Ok(NewRecords {
        bytes,
        offset,
        prev_last,
        records,
    })
}

/// The finding for a replay of new records that diverged.
/// `unstaged`: the document in the index is unchanged from HEAD.
fn divergence_finding([path, tpath]: [&str; 2], d: replay::Divergence, unstaged: bool) -> Finding {
    // Lines are the file's: replay_after counts the committed ones.
    let line = (d.line > 0).then_some(d.line);
    let final_state = d.op_id.is_none() && d.expected_sha256.is_some();
    if final_state && unstaged {
        // New records, yet the document in the index is unchanged: the
        // edit they made was not staged (`noma record` would find nothing
        // to record), or it was discarded (`git restore`) and its records
        // must go too. The hook reads only the index, so it names both.
        return Finding::error(
            "unrecorded-edit",
            path,
            None,
            format!(
                "{tpath} has new records but the staged document lacks their change; \
                 if you discarded that change on purpose, drop the records too: \
                 git restore --staged --worktree --source=HEAD {tpath_sh}",
                tpath_sh = shell_word(tpath)
            ),
        )
        .fix(format!("git add {path_sh}", path_sh = shell_word(path)));
    }
    if final_state {
        // The replayed final state is not the staged document.
        let blocks: Vec<String> = d
            .blocks
            .iter()
            .map(|b| format!("{} ({})", b.id, b.change))
            .collect();
        return Finding::error(
            "unrecorded-edit",
            path,
            None,
            format!(
                "changed outside its transcript (after {tpath} line {}): {}",
                line.unwrap_or(0),
                describe(&blocks)
            ),
        )
        .fix(format!(
            "noma record {path_sh} && git add {path_sh} {tpath_sh}",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath)
        ));
    }
    if d.message.contains("pre_sha256 is not the replayed state") {
        // `noma record` only appends: it cannot explain an edit that sits
        // between two records.
        return Finding::error("unrecorded-edit", tpath, line, d.message).fix(format!(
            "git restore --staged --worktree --source=HEAD {path_sh} {tpath_sh}, then redo the edits with `noma patch --inplace` (hand edits: `noma record` before the next patch)",
            path_sh = shell_word(path),
            tpath_sh = shell_word(tpath),
        ));
    }
    Finding::error("transcript-replay", tpath, line, d.message)
}

/// A staged file over the size cap every noma read applies
/// (`NOMA_MAX_FILE_BYTES`): committed, no patch or replay could read it.
fn too_large(path: &str, len: usize) -> Option<Finding> {
    let cap = noma_store::fsio::max_file_bytes();
    (len as u64 > cap).then(|| {
        Finding::error(
            "file-too-large",
            path,
            None,
            format!(
                "staged at {len} bytes, over the {cap}-byte limit noma reads files up to: once committed, no patch, record or replay could read it; raise {} for every noma run, or split the document",
                noma_store::fsio::MAX_FILE_BYTES_ENV
            ),
        )
    })
}

fn describe(blocks: &[String]) -> String {
    if blocks.is_empty() {
        return "no addressable block differs (the change is outside any block with an id)".into();
    }
    let shown: Vec<&str> = blocks.iter().take(10).map(String::as_str).collect();
    let more = blocks.len().saturating_sub(shown.len());
    let mut s = format!("blocks {}", shown.join(", "));
    if more > 0 {
        s.push_str(&format!(" and {more} more"));
    }
    s
}

/// Blocks that differ between two block tables ("id (changed|added|removed)")
/// and the first line of the first one in the new text.
fn block_changes(
    before: &[noma_core::doc::hash::BlockHash],
    after: &[noma_core::doc::hash::BlockHash],
) -> (Vec<String>, Option<usize>) {
    let old: HashMap<&str, &str> = before
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let new: HashMap<&str, &str> = after
        .iter()
        .map(|b| (b.id.as_str(), b.sha256.as_str()))
        .collect();
    let mut out = Vec::new();
    let mut line = None;
    // Innermost blocks are the useful ones: skip a block when a later block
    // (a descendant, in pre-order) also changed under it.
    for b in after {
        let change = match old.get(b.id.as_str()) {
            Some(sha) if *sha == b.sha256 => continue,
            Some(_) => "changed",
            None => "added",
        };
        let has_changed_child = after.iter().any(|c| {
            c.parent.as_deref() == Some(b.id.as_str())
                && old.get(c.id.as_str()).is_none_or(|s| *s != c.sha256)
        });
        if has_changed_child && change == "changed" {
            continue;
        }
        line.get_or_insert(b.lines[0] as usize);
        out.push(format!("{} ({change}, line {})", b.id, b.lines[0]));
    }
    for b in before {
        if !new.contains_key(b.id.as_str()) {
            out.push(format!("{} (removed)", b.id));
        }
    }
    (out, line)
}

/// A document or transcript staged as a symlink. Refused rather than
/// followed: git stores a link as its target path, so the hooks, the
/// merge driver and every clone would see a path where the bytes the
/// transcript hashes should be (and on Windows checkouts without symlink
/// support the link becomes a small text file).
fn symlink_finding(path: &str, target: &[u8]) -> Finding {
    let target = String::from_utf8_lossy(target);
    Finding::error(
        "symlinked-document",
        path,
        None,
        format!(
            "staged as a symlink to {target}; noma documents and transcripts must be regular files"
        ),
    )
    .fix(format!(
        "commit the file itself: git rm --cached {path_sh}, then commit {target} (or copy it over the link and git add {path_sh})",
        path_sh = shell_word(path),
    ))
}

/// Names the first line where `staged` stops repeating `committed`.
fn tamper_finding(path: &str, tpath: &str, committed: &[u8], staged: &[u8]) -> Finding {
    let (a, _) = split_lines(committed);
    let (b, _) = split_lines(staged);
    let mut line = a.len() + 1;
    let mut removed = true;
    for (i, l) in a.iter().enumerate() {
        match b.get(i) {
            Some(m) if m.raw == l.raw => {}
            other => {
                line = i + 1;
                removed = other.is_none();
                break;
            }
        }
    }
    if line > a.len() {
        // Every complete line matches: the committed torn tail was changed.
        removed = false;
    }
    let what = if removed {
        "was removed"
    } else {
        "was rewritten"
    };
    // Keeping the staged document (an older version, or another branch's,
    // checked out with its transcript) is an edit like any other: the
    // committed transcript comes back and the change is recorded on top.
    let keep = format!(
        "git restore --staged --worktree --source=HEAD {tpath_sh} && noma record {path_sh} && git add {path_sh} {tpath_sh}",
        tpath_sh = shell_word(tpath),
        path_sh = shell_word(path),
    );
    let message = format!("committed transcript line {line} {what}; transcripts are append-only");
    let finding =
        |message: String| Finding::error("transcript-tampered", tpath, Some(line), message);
    if removed {
        // No line of its own: an older transcript, as `git checkout REV --
        // <doc> <transcript>` leaves when undoing edits. Nothing is lost.
        return finding(format!(
            "{message}; to keep the staged document, record its change on top of the committed transcript"
        ))
        .fix(keep);
    }
    finding(format!(
        "{message}; if the staged document is what you want (taken from another branch or commit), record its change instead: {keep}"
    ))
    .fix(format!(
        "restore the committed lines (git show HEAD:{tpath_sh}) and append new records only",
        tpath_sh = shell_word(tpath),
    ))
}

/// The finding for a staged transcript whose records two branches joined
/// line by line ([`unjoin`]).
fn joined_finding(path: &str, tpath: &str, join: unjoin::Join) -> Finding {
    Finding::error(
        "transcript-joined",
        tpath,
        Some(join.second_line),
        format!(
            "the records from line {} on are another branch's, joined after this branch's: a merge without noma's merge driver (a clone where `noma hooks install` never ran, a web conflict editor) kept both sides, and the transcript no longer replays; `noma repair` rebases them as the driver would have",
            join.second_line
        ),
    )
    .fix(format!(
        "noma repair {path_sh} && noma record {path_sh} && git add {path_sh} {tpath_sh}",
        path_sh = shell_word(path),
        tpath_sh = shell_word(tpath),
    ))
}

/// Describes a fork: the records after the common prefix on each side.
fn fork_finding(tpath: &str, base: &[u8], ours: &[u8], theirs: &[u8]) -> Finding {
    let (base_lines, _) = split_lines(base);
    let at = base_lines.len();
    let side = |t: &[u8]| -> String {
        let (lines, _) = split_lines(t);
        let new: Vec<Record> = lines
            .iter()
            .skip(at)
            .filter_map(|l| transcript::parse_record(l.number, l.raw).ok())
            .collect();
        match new.first() {
            Some(r) => format!(
                "{} record(s) from line {} (first op_id {}, {} from pre_sha256 {})",
                new.len(),
                at + 1,
                r.op_id,
                r.op_name(),
                transcript::short_sha(&r.pre_sha256)
            ),
            None => "no readable records".into(),
        }
    };
    Finding::error(
        "transcript-fork",
        tpath,
        Some(at + 1),
        format!(
            "both parents appended records after line {at} of the common transcript, claiming the same prior state: HEAD has {}; MERGE_HEAD has {}",
            side(ours),
            side(theirs)
        ),
    )
    .fix("keep one side's transcript, re-apply the other side's ops on top with `noma patch --inplace` (or `noma record`), and stage the linear result")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tamper_names_rewritten_and_removed_lines() {
        let f = tamper_finding("d", "t", b"a\nb\nc\n", b"a\nX\nc\nd\n");
        assert_eq!(f.line, Some(2));
        assert!(f.message.contains("rewritten"));
        let f = tamper_finding("d", "t", b"a\nb\nc\n", b"a\nb\n");
        assert_eq!(f.line, Some(3));
        assert!(f.message.contains("removed"));
    }

    #[test]
    fn finding_line_format() {
        let f = Finding::error("x-y", "d.noma", Some(3), "bad".into()).fix("do it");
        assert_eq!(f.to_line(), "ERROR [x-y] d.noma:3:1: bad (fix: do it)");
        let mut w = Finding::error("w", "d.noma", None, "meh".into());
        w.severity = Severity::Warning;
        assert_eq!(w.to_line(), "WARNING [w] d.noma: meh");
    }

    #[test]
    fn block_changes_prefer_innermost() {
        let a = "# A\n\n::note{id=\"n\"}\nold\n::\n\n::note{id=\"gone\"}\nx\n::\n";
        let b = "# A\n\n::note{id=\"n\"}\nnew\n::\n";
        let c = BlockCache::disabled();
        let (list, line) = block_changes(&c.doc_info(a).blocks, &c.doc_info(b).blocks);
        assert_eq!(line, Some(3));
        assert_eq!(list.len(), 2, "{list:?}");
        assert!(list[0].starts_with("n (changed"));
        assert_eq!(list[1], "gone (removed)");
    }
}

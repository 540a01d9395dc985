//! `noma reconcile`: the per-document checks a CI bot runs on a branch
//! against its base, and what `--write` brings onto the branch.
//!
//! For every `.noma` document whose text or transcript changed between the
//! merge base of HEAD and the base revision and HEAD: the HEAD document is
//! valid; HEAD's transcript is a successor of the merge base's
//! ([`noma_merge::lineage`]: an append, or what merging the base into the
//! branch wrote) and replays to HEAD's exact bytes; and the base
//! revision's newer records re-apply onto the branch without conflict
//! ([`noma_merge::transcript::reconcile_transcripts`] with ours = HEAD). With
//! `write`, that result is written to the work tree: the branch's
//! transcript stays a byte prefix, so the commit passes the pre-commit
//! hook, and it is the same bytes `git merge <base>` on the branch writes.
//! What stops the whole check (no repository, an unknown base, a failed
//! write) is a [`ReconcileError`]; everything about a document is a
//! [`Finding`] in its report.

use changed_blocks::{branch_blocks, innermost};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

use crate::cache::BlockCache;
use crate::git::repo::{GitError, Repo};
use crate::git::Oid;
use noma_core::diag::shell_word;
use noma_core::doc::hash::block_hashes;
use noma_core::transcript::{replay, transcript_path};
use noma_merge::transcript::Reconciled;

mod changed_blocks;
mod own_copies;
mod prefetch;
mod removal;
mod signed;
mod threads;
mod validity;
mod values;

use validity::{base_policy, check_validity};

pub use threads::{Run, AUTO_DOCS_PER_THREAD, AUTO_JOBS_AT_MOST};
pub use values::VALUE_CHARS;

/// One problem (or notable fact) about a document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// `error`, `warning` or `note`.
    pub level: &'static str,
    /// Stable code: a validator rule, or `transcript-rewritten`,
    /// `replay-diverged`, `rebase-conflict`, `not-reconcilable`, …
    pub code: String,
    /// Repository-relative path of the file concerned.
    pub path: String,
    /// 1-based line, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The block concerned, when one applies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<String>,
    /// What is wrong.
    pub message: String,
    /// A rebase conflict's block as the branch (HEAD) has it, narrowed to
    /// what differs and cut at [`VALUE_CHARS`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ours: Option<String>,
    /// The same block as the base revision has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub theirs: Option<String>,
}

/// A block the branch changed and whether it rebases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockStatus {
    /// Canonical id.
    pub id: String,
    /// `changed`, `added` or `removed` on the branch.
    pub change: &'static str,
    /// `ok`, or `conflict` when a rebased op on it conflicts.
    pub rebase: &'static str,
}

/// The report for one document.
#[derive(Debug, Clone, Serialize)]
pub struct DocReport {
    /// Repository-relative path.
    pub path: String,
    /// No validation errors at HEAD.
    pub valid: bool,
    /// The merge base's transcript is a prefix of HEAD's.
    pub append_only: bool,
    /// HEAD's transcript replays to HEAD's document.
    pub replays: bool,
    /// The branch's records re-apply on the base revision without conflict.
    pub rebases: bool,
    /// Records of the branch that would be rebased.
    pub branch_records: usize,
    /// Records the base revision gained since the merge base.
    pub base_records: usize,
    /// Whether `--write` wrote a rebased document and transcript.
    pub written: bool,
    /// Per block the branch changed.
    pub blocks: Vec<BlockStatus>,
    /// With provenance on, each record of the checked range: the actor it
    /// names, the principal whose signature verifies and the approver
    /// (its problems are findings). Empty with provenance off.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub records: Vec<noma_provenance::verify::RecordStatus>,
    /// Everything found.
    pub findings: Vec<Finding>,
    /// The branch removed the document: `recorded` (its transcript ends
    /// with `noma rm`'s removal record, checked like any record) or
    /// `unrecorded` (finding `document-removed`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed: Option<&'static str>,
}

impl DocReport {
    /// True when nothing at error level was found.
    pub fn ok(&self) -> bool {
        self.findings.iter().all(|f| f.level != "error")
    }
}

fn finding(level: &'static str, code: &str, path: &str, message: String) -> Finding {
    Finding {
        level,
        code: code.into(),
        path: path.into(),
        line: None,
        block: None,
        message,
        ours: None,
        theirs: None,
    }
}

fn text(b: &Option<Vec<u8>>) -> Option<&str> {
    b.as_deref().and_then(|b| std::str::from_utf8(b).ok())
}

/// Why `noma reconcile` could not check the branch at all (problems of a
/// document are [`Finding`]s instead).
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// No repository at or above the start directory.
    #[error("{0}")]
    NoRepository(GitError),
    /// HEAD has no commit yet.
    #[error("HEAD has no commit")]
    UnbornHead,
    /// The base revision does not name a commit.
    #[error("{}{shallow}", source.detail())]
    UnknownBase {
        /// The revision as given.
        rev: String,
        /// git's reason.
        source: GitError,
        /// [`Repo::shallow_note_for`]: a depth-1 CI checkout has no base branch.
        shallow: String,
    },
    /// HEAD and the base revision share no history.
    #[error("HEAD and {0} have no merge base{1}")]
    NoMergeBase(String, String),
    /// The documents changed on the branch could not be listed.
    #[error("{}", .0.detail())]
    ChangedDocuments(GitError),
    /// `--write` could not write a document or its transcript.
    #[error("{path}: {source}")]
    Write {
        /// The document's repository-relative path.
        path: String,
        /// The failure.
        source: std::io::Error,
    },
}

/// Checks every document touched on HEAD since its merge base with
/// `base_rev`; with `run.write`, writes the rebased files into the work
/// tree. The reports come in the documents' order however many threads
/// check them (decision `reconcile-checks-documents-in-parallel`).
pub fn check_branch(
    start: &Path,
    base_rev: &str,
    run: Run,
    cache: &BlockCache,
) -> Result<Vec<DocReport>, ReconcileError> {
    let repo = Repo::discover(start).map_err(ReconcileError::NoRepository)?;
    let (branch, docs) = Branch::new((&repo, cache), base_rev, run.write)?;
    let threads = run.threads(docs.len());
    let results = if threads == 1 {
        docs.iter().map(|p| branch.check_document(p)).collect()
    } else {
        threads::in_parallel(&branch, start, &docs, threads)
    };
    // The first error in the documents' order, as a check in order would
    // stop at.
    let mut out = Vec::new();
    for r in results {
        out.extend(r?);
    }
    Ok(out)
}

impl<'r> Branch<'r> {
    /// The revisions HEAD and `base_rev` share, and the documents HEAD
    /// changed since their merge base.
    fn new(
        (repo, cache): (&'r Repo, &'r BlockCache),
        base_rev: &'r str,
        write: bool,
    ) -> Result<(Branch<'r>, Vec<String>), ReconcileError> {
        let head = repo.head_commit().ok_or(ReconcileError::UnbornHead)?;
        let base_tip =
            repo.resolve_base(base_rev)
                .map_err(|source| ReconcileError::UnknownBase {
                    rev: base_rev.to_string(),
                    source,
                    shallow: repo.shallow_note_for(base_rev),
                })?;
        let merge_base = repo.merge_base(head, base_tip).ok_or_else(|| {
            ReconcileError::NoMergeBase(base_rev.to_string(), repo.shallow_note_for(base_rev))
        })?;
        let docs = repo
            .changed_documents(merge_base, head)
            .map_err(ReconcileError::ChangedDocuments)?;
        prefetch::prefetch(repo, [merge_base, head, base_tip], &docs);
        let moved = repo
            .moved_documents(merge_base, head)
            .map_err(ReconcileError::ChangedDocuments)?;
        // A cache the branch commits is the branch's word, not this
        // machine's memory: a forged row would pass a broken history.
        let committed_cache = repo
            .has_path_at(head, crate::cache::CACHE_IGNORE.trim_end_matches('/'))
            .unwrap_or(true);
        let branch = Branch {
            moved,
            base_moved: std::sync::OnceLock::new(),
            repo,
            cache: (!committed_cache).then_some(cache),
            head,
            base_tip,
            merge_base,
            base_rev,
            write,
            workdir: repo.workdir(),
            provenance_off: provenance_off(repo, base_tip),
            policy: base_policy(repo, base_tip),
        };
        Ok((branch, docs))
    }
}

/// Whether the base revision's settings turn provenance off (an
/// unreadable setting is not "off": the whole check reports it).
fn provenance_off(repo: &Repo, base_tip: Oid) -> bool {
    let blob = |p: &str| repo.blob_at(base_tip, p).ok().flatten();
    matches!(
        crate::provenance::check::trust_from(
            blob(noma_provenance::config::CONFIG_PATH).as_deref(),
            || { blob(noma_provenance::ALLOWED_SIGNERS_PATH) }
        ),
        Ok(None)
    )
}

/// What every document's check shares: the repository, the three
/// revisions compared and what `--write` may do.
struct Branch<'r> {
    repo: &'r Repo,
    /// Remembers merge bases' transcripts that replay; None when HEAD
    /// commits a cache directory (see [`Branch::new`]).
    cache: Option<&'r BlockCache>,
    /// Documents the branch moved: HEAD's path -> the merge base's.
    moved: std::collections::HashMap<String, String>,
    /// Documents the base revision moved: the merge base's path -> the
    /// base's, read when a document is missing at the base.
    base_moved: std::sync::OnceLock<std::collections::HashMap<String, String>>,
    head: Oid,
    base_tip: Oid,
    merge_base: Oid,
    /// The base revision as the user named it (for messages).
    base_rev: &'r str,
    write: bool,
    workdir: Option<PathBuf>,
    /// The base revision's settings leave provenance off (its check reads
    /// whole transcripts; off, they can be streamed).
    provenance_off: bool,
    /// The base revision's policy (`strict`, `ignore_rules`).
    policy: noma_provenance::config::Policy,
}

/// One document's transcript and its other versions, as read from the
/// three revisions (`None` = absent there).
struct DocFiles {
    /// The transcript's repository-relative path.
    tpath: String,
    mb_doc: Option<Vec<u8>>,
    mb_t: Option<Vec<u8>>,
    head_t: Option<Vec<u8>>,
    base_t: Option<Vec<u8>>,
}

impl DocFiles {
    /// The merge base's transcript (empty when absent): the part of HEAD's
    /// transcript that is history, not the branch's.
    fn prefix(&self) -> &[u8] {
        self.mb_t.as_deref().unwrap_or_default()
    }

    /// HEAD's transcript (empty when absent).
    fn head_transcript(&self) -> &[u8] {
        self.head_t.as_deref().unwrap_or_default()
    }
}

impl Branch<'_> {
    fn blob(&self, commit: Oid, path: &str) -> Option<Vec<u8>> {
        self.repo.blob_at(commit, path).ok().flatten()
    }

    /// Where the base revision moved the document the merge base holds at
    /// `old` (git's rename detection), if it did: a branch that patched it
    /// under the old name compares with the base's moved files.
    fn base_moved_to(&self, old: &str) -> Option<&str> {
        let moved = self.base_moved.get_or_init(|| {
            let m = self.repo.moved_documents(self.merge_base, self.base_tip);
            m.unwrap_or_default()
                .into_iter()
                .map(|(new, old)| (old, new))
                .collect()
        });
        moved.get(old).map(String::as_str)
    }

    /// `file` (a document path to one of its files' paths) of the
    /// document at the base revision: under `path`, else `old`, else where
    /// the base moved `old` to.
    fn base_file_id(&self, [path, old]: [&str; 2], file: fn(&str) -> String) -> Option<Oid> {
        let id = |p: &str| self.repo.blob_id_at(self.base_tip, &file(p)).ok().flatten();
        id(path)
            .or_else(|| id(old))
            .or_else(|| id(self.base_moved_to(old)?))
    }

    /// The document at the merge base (under its old path `old`) and at
    /// the base revision (under `path`, else `old`): the versions a record's
    /// state is looked for in first. The base's is None when it is the
    /// merge base's blob (the everyday case: read and offered once).
    fn mb_and_base_docs(&self, path: &str, old: &str) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
        let id = |c, p: &str| self.repo.blob_id_at(c, p).ok().flatten();
        let read = |id: Option<Oid>| id.and_then(|id| self.repo.blob(id).ok());
        let mb = id(self.merge_base, old);
        let base = self.base_file_id([path, old], str::to_string);
        let base_doc = if base == mb { None } else { read(base) };
        (read(mb), base_doc)
    }

    /// The report for one document changed on the branch, `None` for the
    /// old path of a document the branch moved, or a document the merge
    /// base never had; `Err` only when `--write` could not write. A
    /// document the branch removed is [`removal`]'s.
    fn check_document(&self, path: &str) -> Result<Option<DocReport>, ReconcileError> {
        match self.blob(self.head, path) {
            Some(head_doc_b) => self.check_text(path, &head_doc_b, true).map(Some),
            None => self.check_removed(path),
        }
    }

    /// Step 1 with the options every entry point builds from the policy
    /// (the base's), datasets read from HEAD.
    fn check_validity(&self, rep: &mut DocReport, path: &str, head_ast: &noma_core::doc::Document) {
        // An unreadable blob is a missing dataset (`dataset-src-missing`).
        let datasets =
            crate::datasets::Datasets::read(path, head_ast, |p| Ok(self.blob(self.head, p)))
                .unwrap_or_default();
        let opts = noma_provenance::config::validate_options(
            &self.policy,
            &Default::default(),
            std::sync::Arc::new(datasets),
        );
        check_validity(rep, head_ast, &opts);
    }

    /// The checks of the document `path` whose HEAD bytes are
    /// `head_doc_b`, validated when `validate` (a removed document's
    /// tombstone ends at the empty text, which is no document to validate).
    fn check_text(
        &self,
        path: &str,
        head_doc_b: &[u8],
        validate: bool,
    ) -> Result<DocReport, ReconcileError> {
        let tpath = transcript_path(path);
        let mut rep = DocReport::unchecked(path);
        let Some(head_doc) = std::str::from_utf8(head_doc_b).ok() else {
            rep.valid = false;
            rep.findings
                .push(finding("error", "not-text", path, "not UTF-8 text".into()));
            return Ok(rep);
        };
        // A document the branch moved is compared with its old path's
        // versions, at the base too unless the base has it under the new
        // name already.
        let old = self.moved.get(path).map_or(path, String::as_str);
        let old_t = transcript_path(old);
        let (mb_doc, base_doc) = self.mb_and_base_docs(path, old);
        let mut find = super::doc_finder(
            Some(self.repo),
            path,
            [&mb_doc, &base_doc]
                .into_iter()
                .flatten()
                .cloned()
                .collect(),
        );
        // 2.-4. in the everyday case, without holding a transcript. Run
        // before validity (which reports first) so that its replay's trees
        // of the two documents are not parsed again.
        let appended = self.appended_records([path, old], text(&mb_doc), head_doc, &mut find);
        let (mb_tree, head_tree) = appended
            .as_ref()
            .map_or((None, None), |(_, t)| (t.via.clone(), t.last.clone()));
        // Parsed once: validity, the blocks changed and (on a divergence)
        // the innermost blocks named all read this tree.
        let head_ast = head_tree.unwrap_or_else(|| Arc::new(noma_core::doc::parse(head_doc)));
        // 1. Validity.
        if validate {
            self.check_validity(&mut rep, path, &head_ast);
        }
        if let Some((a, _)) = appended {
            self.rename_problem(&mut rep, path, old);
            rep.blocks = branch_blocks((text(&mb_doc), mb_tree.as_deref()), head_doc, &head_ast);
            self.report_appended(&mut rep, [path, old], a)?;
            return Ok(rep);
        }
        let files = DocFiles {
            mb_doc,
            mb_t: self.blob(self.merge_base, &old_t),
            head_t: self.blob(self.head, &tpath),
            base_t: self
                .base_file_id([path, old], transcript_path)
                .and_then(|id| self.repo.blob(id).ok()),
            tpath,
        };
        // 2./3. HEAD's transcript continues the merge base's and replays.
        check_history(&mut rep, &files, head_doc, &mut find);
        // Signatures and approvals of the branch's records, trusted from
        // the base revision (a branch cannot trust a key it adds itself).
        self.rename_problem(&mut rep, path, old);
        let read = self.check_signatures(&mut rep, path, &files);
        self.own_copies(&mut rep, path, old);
        self.remember_signed_base([path, old], &files, rep.replays, read);
        // Blocks the branch changed.
        rep.blocks = branch_blocks((text(&files.mb_doc), None), head_doc, &head_ast);
        // 4. Do the base's newer records re-apply onto the branch?
        if rep.append_only && files.head_t.is_some() {
            self.check_rebase(&mut rep, &files, head_doc, &mut find)?;
        }
        Ok(rep)
    }

    /// What the everyday path (the branch only appended) found about the
    /// branch's records of the document `path` (formerly `old`).
    fn report_appended(
        &self,
        rep: &mut DocReport,
        [path, old]: [&str; 2],
        a: Appended,
    ) -> Result<(), ReconcileError> {
        match a {
            Appended::Records(n) => rep.branch_records = n,
            Appended::Signed(n, signed) => {
                rep.branch_records = n;
                report_signed(rep, *signed);
                self.own_copies(rep, path, old);
            }
            Appended::Rebased(s, head_t) => self.report_streamed_rebase(rep, &s, head_t)?,
        }
        Ok(())
    }

    /// The branch records' signatures and approvals, trusted from the base
    /// revision: their problems as findings, and who signed and approved
    /// each record. Also the sidecars the check read.
    fn check_signatures(
        &self,
        rep: &mut DocReport,
        path: &str,
        files: &DocFiles,
    ) -> Option<crate::provenance::check::SidecarsRead> {
        let (signed, read) = crate::provenance::check::branch_check(
            self.repo,
            [self.base_tip, self.head, self.merge_base],
            path,
            files.head_transcript(),
            files.prefix(),
        );
        report_signed(rep, signed);
        read
    }

    /// A moved document whose provenance sidecar did not follow it.
    fn rename_problem(&self, rep: &mut DocReport, path: &str, old: &str) {
        if let Some((l, _)) = crate::provenance::check::rename_problem(path, old, &|p| {
            self.blob(self.head, p).is_some()
        }) {
            rep.findings.push(finding(
                l.problem.level,
                l.problem.code,
                &l.path,
                l.problem.message,
            ));
        }
    }

    /// Steps 2-4 of a branch that only appended to its transcript
    /// ([`super::checkpoint`]), without holding a transcript: when the base
    /// revision left it alone, the branch's record count; when the base
    /// appended too, the base's records re-applied from the streams
    /// ([`super::streamed`]). None when the whole-file checks must run
    /// (they hold the three transcripts). With provenance on at the base,
    /// only from the rows a whole check remembered ([`signed`]). Also the
    /// trees of the merge base's and HEAD's documents that a replay of the
    /// history built on the way.
    fn appended_records(
        &self,
        [path, old]: [&str; 2],
        mb_doc: Option<&str>,
        head_doc: &str,
        find: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Option<(Appended, replay::Trees)> {
        if !self.provenance_off {
            let signed = self.signed_appended([path, old], mb_doc?, head_doc)?;
            return Some((signed, replay::Trees::default()));
        }
        let id = |c, p: &str| self.repo.blob_id_at(c, p).ok().flatten();
        let (tpath, old_t) = (transcript_path(path), transcript_path(old));
        let ids = super::checkpoint::TranscriptIds {
            merge_base: id(self.merge_base, &old_t)?,
            head: id(self.head, &tpath)?,
            base: self.base_file_id([path, old], transcript_path)?,
        };
        let store = (self.repo, self.cache);
        let docs = [mb_doc?, head_doc];
        if ids.base == ids.merge_base {
            let (n, trees) = super::checkpoint::appended_records(store, ids, docs, find)?;
            return Some((Appended::Records(n), trees));
        }
        let blob = |id| super::streamed::Blob(self.repo, id);
        let (mb, head, base) = (blob(ids.merge_base), blob(ids.head), blob(ids.base));
        // Warm, from the checkpoint: each side read once, the merge base never.
        if let Some(p) = super::checkpoint::remembered(self.cache, ids.merge_base, docs[0]) {
            let sha = noma_core::doc::hash::sha256_hex(docs[0].as_bytes());
            let (sides, doc) = (
                [&head as &dyn super::streamed::Source, &base],
                Some(head_doc),
            );
            let s = super::streamed::reconcile_proved(&p, sha, sides, doc, find)?;
            super::checkpoint::branch_proved(&p, &s.ours, docs)?;
            return Some((
                Appended::Rebased(Box::new(s), ids.head),
                replay::Trees::default(),
            ));
        }
        let s = super::streamed::reconcile_streams([&mb, &head, &base], Some(head_doc), find)?;
        let (_, trees) = super::checkpoint::branch_replays(store, ids, &s.ours, docs, find)?;
        Some((Appended::Rebased(Box::new(s), ids.head), trees))
    }

    /// Step 4's report from the streams (see [`Branch::appended_records`]):
    /// what [`Branch::check_rebase`] reports; `--write` writes HEAD's
    /// transcript blob `head_t` and then the records re-applied.
    fn report_streamed_rebase(
        &self,
        rep: &mut DocReport,
        s: &super::streamed::Streamed,
        head_t: Oid,
    ) -> Result<(), ReconcileError> {
        let write = |dest: &Path| -> std::io::Result<()> {
            use noma_store::fsio::contain::{open_write, WriteMode};
            let mut file = open_write(dest, WriteMode::Replace)?;
            std::io::copy(&mut self.repo.blob_stream(head_t)?, &mut file)?;
            std::io::Write::write_all(&mut file, &s.append)
        };
        self.report_rebase(rep, &s.reconciled, !s.append.is_empty(), &write)
    }

    /// Step 4: re-applies the base revision's newer records onto the
    /// branch. The branch's transcript stays a byte prefix (what `git
    /// merge` of the base into the branch writes), so `--write` output
    /// passes the pre-commit hook and later merges into the base cleanly.
    fn check_rebase(
        &self,
        rep: &mut DocReport,
        files: &DocFiles,
        head_doc: &str,
        find: &mut dyn FnMut(&str) -> Option<String>,
    ) -> Result<(), ReconcileError> {
        if let Some(appended) = nothing_to_rebase(files, rep.replays) {
            rep.branch_records = appended;
            return Ok(());
        }
        let res = noma_merge::transcript::reconcile_transcripts(
            files.head_transcript(),
            files.base_t.as_deref().unwrap_or_default(),
            files.mb_t.as_deref(),
            Some(head_doc),
            find,
        );
        let r = match res {
            Ok(r) => r,
            Err(e) => {
                rep.rebases = false;
                rep.findings.push(finding(
                    "error",
                    "not-reconcilable",
                    &rep.path,
                    format!(
                        "{}'s records cannot be re-applied onto the branch: {e}",
                        self.base_rev
                    ),
                ));
                return Ok(());
            }
        };
        let changed = r.transcript != files.head_transcript();
        self.report_rebase(rep, &r, changed, &|dest| {
            noma_store::fsio::contain::write_file(dest, &r.transcript)
        })
    }

    /// Step 4's report of `r`, HEAD's transcript reconciled with the base
    /// revision's; with `--write`, a clean one that `changed` the
    /// transcript is written into the work tree (`write_transcript` writes
    /// the transcript into the file it is given).
    fn report_rebase(
        &self,
        rep: &mut DocReport,
        r: &Reconciled,
        changed: bool,
        write_transcript: &dyn Fn(&Path) -> std::io::Result<()>,
    ) -> Result<(), ReconcileError> {
        rep.branch_records = r.ours_new;
        rep.base_records = r.theirs_new;
        for c in &r.conflicts {
            rep.rebases = false;
            let mut f = finding("error", "rebase-conflict", &rep.path, c.describe());
            f.block = Some(c.block.clone());
            let (ours, theirs) = values::conflict_values(&r.ours_doc, &r.theirs_doc, &c.block);
            (f.ours, f.theirs) = (Some(ours), Some(theirs));
            rep.findings.push(f);
            for b in rep.blocks.iter_mut().filter(|b| b.id == c.block) {
                b.rebase = "conflict";
            }
        }
        if self.write && changed && r.conflicts.is_empty() {
            if let Some(wd) = &self.workdir {
                let path = &rep.path;
                // Each file is written only as a regular file in the tree;
                // a refusal names the file it is about.
                let named = |p: &str| {
                    let p = p.to_string();
                    move |e: std::io::Error| std::io::Error::new(e.kind(), format!("{p}: {e}"))
                };
                let (tp, sp) = (
                    transcript_path(path),
                    noma_provenance::sidecar::sidecar_rel(path),
                );
                noma_store::fsio::atomic_write(&wd.join(path), r.doc.as_bytes())
                    .and_then(|_| write_transcript(&wd.join(&tp)).map_err(named(&tp)))
                    // The base's records come with their signatures.
                    .and_then(|_| {
                        noma_provenance::sidecar::union_into_file(
                            &wd.join(&sp),
                            self.blob(self.base_tip, &sp),
                        )
                        .map_err(named(&sp))
                    })
                    .map_err(|source| ReconcileError::Write {
                        path: path.clone(),
                        source,
                    })?;
                rep.written = true;
            }
        }
        Ok(())
    }
}

/// What [`Branch::appended_records`] found without holding a transcript.
enum Appended {
    /// The branch's record count; the base revision left the transcript alone.
    Records(usize),
    /// The base revision's records re-applied onto the branch, and HEAD's
    /// transcript blob (the merged transcript's first bytes).
    Rebased(Box<super::streamed::Streamed>, Oid),
    /// Provenance on: the branch's record count and its records' check.
    Signed(usize, Box<crate::provenance::check::BranchCheck>),
}

/// The signature check's problems as findings, and its records' statuses.
fn report_signed(rep: &mut DocReport, signed: crate::provenance::check::BranchCheck) {
    for l in signed.problems {
        let mut f = finding(l.problem.level, l.problem.code, &l.path, l.problem.message);
        f.line = (l.problem.line > 0).then_some(l.problem.line);
        rep.findings.push(f);
    }
    rep.records = signed.records;
}

impl DocReport {
    /// A report for `path` before any check ran: everything holds.
    fn unchecked(path: &str) -> DocReport {
        DocReport {
            path: path.to_string(),
            valid: true,
            append_only: true,
            replays: true,
            rebases: true,
            branch_records: 0,
            base_records: 0,
            written: false,
            blocks: Vec::new(),
            records: Vec::new(),
            findings: Vec::new(),
            removed: None,
        }
    }
}

/// Step 4's everyday answer without its analysis: the base tip's
/// transcript is the merge base's, byte for byte (the base did not touch
/// this document's history since the fork), and HEAD's extends it with
/// records that replay (`replays`, from step 3). The full analysis would
/// then find no base record to re-apply and return HEAD's transcript
/// unchanged, after parsing every record of the three versions, which is
/// most of what the PR check costs on a long transcript. Returns the
/// branch's record count, as the analysis counts them (lines after the
/// base's), or None when the analysis must run.
fn nothing_to_rebase(files: &DocFiles, replays: bool) -> Option<usize> {
    let (mb, base, head) = (
        files.mb_t.as_deref()?,
        files.base_t.as_deref()?,
        files.head_t.as_deref()?,
    );
    // A base with no line, or lines that differ, is where the analysis
    // pairs genesis records or finds the fork: it must run.
    let plain = replays
        && !base.is_empty()
        && base == mb
        && base.ends_with(b"\n")
        && head.ends_with(b"\n")
        && head.starts_with(base);
    plain.then(|| {
        noma_core::transcript::split_lines(&head[base.len()..])
            .0
            .len()
    })
}

/// Steps 2 and 3: HEAD's transcript is a successor of the merge base's
/// (append-only, or what merging or rebasing produce: see `noma_merge::lineage`),
/// or its appended records replay to HEAD's bytes; a document changed
/// without any transcript gets a note.
fn check_history(
    rep: &mut DocReport,
    files: &DocFiles,
    head_doc: &str,
    find: &mut dyn FnMut(&str) -> Option<String>,
) {
    if files.head_t.is_none() && files.mb_t.is_some() {
        // A guarded document's history may not be dropped, even while
        // the document stays.
        rep.append_only = false;
        rep.findings.push(finding(
            "error",
            removal::TRANSCRIPT_REMOVED,
            &files.tpath,
            "the transcript, which the merge base has, is deleted while the document stays (transcripts are append-only)".into(),
        ));
    }
    let (prefix, head_tb) = (files.prefix(), files.head_transcript());
    let succ = (!head_tb.starts_with(prefix))
        .then(|| noma_merge::lineage::check(prefix, head_tb, head_doc, find));
    if let Some(Err(v)) = &succ {
        rep.append_only = false;
        let diverged = v.kind == "replay" || v.kind == "base-unknown";
        let code = if diverged {
            "replay-diverged"
        } else {
            "transcript-rewritten"
        };
        let mut f = finding("error", code, &files.tpath, v.message.clone());
        f.line = Some(v.line);
        rep.findings.push(f);
        if diverged {
            rep.replays = false;
        } else {
            // Lines of the merge base missing from HEAD say nothing about
            // whether HEAD's transcript replays: "replays" is what `noma
            // replay` says of it, whatever else failed.
            check_whole_replay(rep, files, head_doc, find);
        }
    } else if succ.is_some() {
        // Checked (and replayed) by the succession rule.
    } else if files.head_t.is_some() {
        check_appended_records(rep, files, head_doc);
        if rep.replays && files.mb_t.is_some() {
            check_whole_replay(rep, files, head_doc, find);
        }
    } else if files.mb_doc.as_deref() != Some(head_doc.as_bytes()) && files.mb_t.is_none() {
        rep.findings.push(finding(
            "note",
            "no-transcript",
            &rep.path,
            "changed without a transcript; only the block-level merge applies".into(),
        ));
    }
    removal::restored_removal(rep, files, head_doc);
}

/// Whether `transcript`'s first record is a genesis record (from the empty
/// document) that writes exactly `doc`.
fn genesis_writes(transcript: &[u8], doc: Option<&[u8]>) -> bool {
    let (Some(doc), Some(end)) = (doc, transcript.iter().position(|&b| b == b'\n')) else {
        return false;
    };
    let Ok(first) = noma_core::transcript::parse_record(1, &transcript[..=end]) else {
        return false;
    };
    first.pre_sha256 == noma_core::doc::hash::sha256_hex(b"")
        && first.post_sha256 == noma_core::doc::hash::sha256_hex(doc)
}

/// Step 3: the records the branch appended replay, from the merge base's
/// document, to HEAD's exact bytes; a divergence is reported at the
/// innermost blocks it names (or at the transcript line when it names none).
fn check_appended_records(rep: &mut DocReport, files: &DocFiles, head_doc: &str) {
    let prefix = files.prefix();
    let tail = files
        .head_transcript()
        .get(prefix.len()..)
        .unwrap_or_default();
    // The tail's first record chains onto the prefix's last line.
    let (lines, _) = noma_core::transcript::split_lines(prefix);
    let prev_last = lines
        .last()
        .map(|l| noma_core::doc::hash::sha256_hex(l.raw));
    let after = prev_last
        .as_deref()
        .map(|prev_line_sha256| replay::Continuation {
            prev_line_sha256,
            lines_before: lines.len(),
        });
    // `noma record` of a committed document edited since its commit opens
    // the transcript with a genesis record from the empty document; one
    // that writes exactly the merge base's document starts where the
    // merge base is, so replaying from the empty document checks the same.
    let start = if prefix.is_empty() && genesis_writes(tail, files.mb_doc.as_deref()) {
        Some("")
    } else {
        text(&files.mb_doc)
    };
    let r = replay::replay_after(after, tail, start, head_doc);
    let Some(d) = r.divergence else { return };
    rep.replays = false;
    if let Some(join) = noma_merge::joined::find_join(files.head_transcript()) {
        // Two branches' records kept one after the other: one cause, one fix.
        let advice = noma_merge::joined::advice(&rep.path, join);
        let mut f = finding("error", "transcript-joined", &files.tpath, advice);
        f.line = Some(join.second_line);
        rep.findings.push(f);
        return;
    }
    // Lines are the file's: replay_after counts the prefix's.
    let line = (d.line > 0).then_some(d.line);
    let fix = unrecorded_edit_fix(&d, &rep.path, &files.tpath);
    if d.blocks.is_empty() {
        let message = format!("{}{fix}", d.message);
        let mut f = finding("error", "replay-diverged", &files.tpath, message);
        f.line = line;
        rep.findings.push(f);
    }
    let ids: Vec<&str> = d.blocks.iter().map(|b| b.id.as_str()).collect();
    let head = block_hashes(head_doc, &noma_core::doc::parse(head_doc));
    let keep = innermost(
        &ids,
        head.iter().map(|h| (h.id.as_str(), h.parent.as_deref())),
    );
    for b in d.blocks.iter().filter(|b| keep.contains(b.id.as_str())) {
        let mut f = finding(
            "error",
            "replay-diverged",
            &rep.path,
            format!("{} (block {} {}){fix}", d.message, b.id, b.change),
        );
        f.block = Some(b.id.clone());
        rep.findings.push(f);
    }
}

/// The next step for a document edited after its last record (the records
/// replay, but to other bytes than HEAD's): the hook's fix, `noma record`.
/// Empty for any other divergence, which no new record would mend.
fn unrecorded_edit_fix(d: &replay::Divergence, path: &str, tpath: &str) -> String {
    if !d.is_unrecorded_edit() {
        return String::new();
    }
    let (path_sh, tpath_sh) = (shell_word(path), shell_word(tpath));
    format!("; an edit made after the last record: noma record {path_sh} && git add {path_sh} {tpath_sh}, then commit")
}

/// Step 3, for the records before the branch's: "replays" means what `noma
/// replay` says, so a transcript the base branch holds that does not
/// replay (its first state found nowhere, a record changed past the hook)
/// fails here too, even when the branch's own records replay on top of the
/// merge base's document.
fn check_whole_replay(
    rep: &mut DocReport,
    files: &DocFiles,
    head_doc: &str,
    find: &mut dyn FnMut(&str) -> Option<String>,
) {
    let t = files.head_transcript();
    let base = replay::first_applied_pre_sha256(t).and_then(|sha| find(&sha));
    let r = replay::replay(t, base.as_deref(), head_doc);
    let Some(d) = r.divergence else { return };
    rep.replays = false;
    let mut f = finding(
        "error",
        "replay-diverged",
        &files.tpath,
        format!(
            "the transcript does not replay from its start (records the branch did not write): {}",
            d.message
        ),
    );
    f.line = (d.line > 0).then_some(d.line);
    rep.findings.push(f);
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_merge::test_support::{body, extend, find, BASE};
    use noma_testutil::git;

    fn files(mb_t: &[u8], base_t: &[u8], head_t: &[u8]) -> DocFiles {
        DocFiles {
            tpath: "d.noma.patches".into(),
            mb_doc: None,
            mb_t: Some(mb_t.to_vec()),
            head_t: Some(head_t.to_vec()),
            base_t: Some(base_t.to_vec()),
        }
    }

    /// The shortcut answers what the full analysis answers wherever it
    /// answers at all: HEAD's transcript unchanged, the branch's records
    /// counted, nothing of the base's re-applied.
    #[test]
    fn nothing_to_rebase_agrees_with_the_full_analysis() {
        let (mb_doc, mb_t) = extend(BASE, b"", &[body("a", "A1"), body("b", "B1")]);
        for n in 0..4 {
            let ops: Vec<_> = (0..n).map(|k| body("a", &format!("A{}", k + 2))).collect();
            let (head_doc, head_t) = if n == 0 {
                (mb_doc.clone(), mb_t.clone())
            } else {
                extend(&mb_doc, &mb_t, &ops)
            };
            let fast = nothing_to_rebase(&files(&mb_t, &mb_t, &head_t), true);
            let mut finder = |sha: &str| {
                find(sha).or_else(|| {
                    (noma_core::doc::hash::sha256_hex(mb_doc.as_bytes()) == sha)
                        .then(|| mb_doc.clone())
                })
            };
            let full = noma_merge::transcript::reconcile_transcripts(
                &head_t,
                &mb_t,
                Some(&mb_t),
                Some(&head_doc),
                &mut finder,
            )
            .expect("reconciles");
            assert_eq!(fast, Some(full.ours_new), "{n} branch records");
            assert_eq!(full.theirs_new, 0);
            assert!(full.conflicts.is_empty());
            assert_eq!(full.transcript, head_t, "nothing to write");
        }
    }

    #[test]
    fn nothing_to_rebase_leaves_every_other_case_to_the_analysis() {
        let (mb_doc, mb_t) = extend(BASE, b"", &[body("a", "A1")]);
        let (_, head_t) = extend(&mb_doc, &mb_t, &[body("b", "B1")]);
        let (_, base_t) = extend(&mb_doc, &mb_t, &[body("a", "A2")]);
        assert_eq!(
            nothing_to_rebase(&files(&mb_t, &mb_t, &head_t), true),
            Some(1)
        );
        // The base moved on, the branch's records do not replay, no base
        // transcript, a torn last line, HEAD not extending the base.
        assert_eq!(
            nothing_to_rebase(&files(&mb_t, &base_t, &head_t), true),
            None
        );
        assert_eq!(
            nothing_to_rebase(&files(&mb_t, &mb_t, &head_t), false),
            None
        );
        assert_eq!(nothing_to_rebase(&files(b"", b"", &head_t), true), None);
        let torn = [head_t.as_slice(), b"{\"op"].concat();
        assert_eq!(nothing_to_rebase(&files(&mb_t, &mb_t, &torn), true), None);
        assert_eq!(
            nothing_to_rebase(&files(&mb_t, &mb_t, &base_t[..10]), true),
            None
        );
    }

    /// How the topic branch of [`fork`] goes on from main's two records.
    #[derive(Debug, Clone, Copy)]
    enum Topic {
        /// Appends this many records.
        Append(usize),
        /// Appends a record whose op_id main's first record has.
        ReusedOpId,
        /// Changes the document without a record.
        UnrecordedEdit,
        /// Appends one record while main appends one too.
        BaseMoved,
        /// Appends one record while main changes the same block.
        BaseMovedClash,
        /// Appends one record while main appends a record whose op_id
        /// the history holds.
        BaseMovedReusedOpId,
        /// Appends one record onto a history whose first op was changed
        /// (committed on main past the hook).
        TamperedHistory,
    }

    fn commit(d: &Path, doc: &str, t: &[u8], msg: &str) {
        std::fs::write(d.join("d.noma"), doc).expect("write");
        std::fs::write(d.join("d.noma.patches"), t).expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", msg]);
    }

    /// main: BASE, then two records; `topic` forks from there.
    fn fork(d: &Path, topic: Topic) {
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("d.noma"), BASE).expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "base"]);
        let (d1, mut t1) = extend(BASE, b"", &[body("a", "A1"), body("b", "B1")]);
        if let Topic::TamperedHistory = topic {
            let at = t1.windows(4).position(|w| w == b"\"A1\"").expect("op");
            t1[at + 2] = b'X';
        }
        commit(d, &d1, &t1, "two records");
        git(d, &["checkout", "-q", "-b", "topic"]);
        let more =
            |n: usize| -> Vec<_> { (0..n).map(|k| body("b", &format!("B{}", k + 2))).collect() };
        match topic {
            Topic::Append(n) => {
                let (d2, t2) = extend(&d1, &t1, &more(n));
                commit(d, &d2, &t2, "topic");
            }
            Topic::TamperedHistory => {
                // Re-derive the document the tampered op leaves, so the
                // branch's own record starts where the file says.
                let (d2, t2) = extend(&d1, &t1, &more(1));
                commit(d, &d2, &t2, "topic");
            }
            Topic::ReusedOpId => {
                let (d2, t2) = extend(&d1, &t1, &more(1));
                let first = noma_core::transcript::parse_transcript(&t1)
                    .expect("parses")
                    .entries[0]
                    .record
                    .op_id
                    .clone();
                let own = noma_core::transcript::parse_transcript(&t2)
                    .expect("parses")
                    .entries[2]
                    .record
                    .op_id
                    .clone();
                let (head, tail) = t2.split_at(t1.len());
                let tail = String::from_utf8(tail.to_vec())
                    .unwrap()
                    .replace(&own, &first);
                commit(d, &d2, &[head, tail.as_bytes()].concat(), "topic");
            }
            Topic::UnrecordedEdit => commit(d, &d1.replace("B1", "B9"), &t1, "topic"),
            Topic::BaseMoved | Topic::BaseMovedClash | Topic::BaseMovedReusedOpId => {
                let (d2, t2) = extend(&d1, &t1, &more(1));
                commit(d, &d2, &t2, "topic");
                git(d, &["checkout", "-q", "main"]);
                let block = if let Topic::BaseMovedClash = topic {
                    "b"
                } else {
                    "a"
                };
                let (dm, mut tm) = extend(&d1, &t1, &[body(block, "M2")]);
                if let Topic::BaseMovedReusedOpId = topic {
                    let ids = |t: &[u8]| -> Vec<String> {
                        let p = noma_core::transcript::parse_transcript(t).expect("parses");
                        p.entries.into_iter().map(|e| e.record.op_id).collect()
                    };
                    let (old, new) = (ids(&t1)[0].clone(), ids(&tm)[2].clone());
                    let (head, tail) = tm.split_at(t1.len());
                    let tail = String::from_utf8(tail.to_vec())
                        .unwrap()
                        .replace(&new, &old);
                    tm = [head, tail.as_bytes()].concat();
                }
                commit(d, &dm, &tm, "main moves");
                git(d, &["checkout", "-q", "topic"]);
            }
        }
    }

    /// The streamed check answers where it is meant to, and its report is
    /// the whole-file check's, byte for byte, in every case.
    #[test]
    fn the_streamed_history_check_agrees_with_the_whole_file_check() {
        let cases = [
            (Topic::Append(1), Some(1)),
            (Topic::Append(3), Some(3)),
            (Topic::ReusedOpId, None),
            (Topic::UnrecordedEdit, None),
            (Topic::BaseMoved, Some(1)),
            (Topic::BaseMovedClash, Some(1)),
            (Topic::BaseMovedReusedOpId, None),
            (Topic::TamperedHistory, None),
        ];
        for (topic, streamed) in cases {
            let tmp = tempfile::tempdir().expect("tempdir");
            fork(tmp.path(), topic);
            let repo = Repo::discover(tmp.path()).expect("repo");
            let cache = BlockCache::disabled();
            let (mut branch, docs) = Branch::new((&repo, &cache), "main", false).expect("branch");
            assert_eq!(docs, ["d.noma"], "{topic:?}");
            assert!(branch.provenance_off);
            let head_doc = std::fs::read_to_string(tmp.path().join("d.noma")).expect("read");
            let mb_doc =
                String::from_utf8(branch.blob(branch.merge_base, "d.noma").unwrap()).unwrap();
            let mut finder = crate::doc_finder(Some(&repo), "d.noma", Vec::new());
            let got = branch.appended_records(["d.noma"; 2], Some(&mb_doc), &head_doc, &mut finder);
            // The trees handed out are what parsing the two documents gives.
            if let Some((_, trees)) = &got {
                let parse = noma_core::doc::parse;
                assert!(trees.via.as_deref().is_none_or(|t| *t == parse(&mb_doc)));
                assert!(trees.last.as_deref().is_none_or(|t| *t == parse(&head_doc)));
                if matches!(topic, Topic::Append(_)) {
                    assert!(trees.via.is_some() && trees.last.is_some(), "{topic:?}");
                }
            }
            assert_eq!(records(got), streamed, "{topic:?}");
            let fast = branch
                .check_document("d.noma")
                .expect("checks")
                .expect("report");
            branch.provenance_off = false; // forces the whole-file check
            let whole = branch
                .check_document("d.noma")
                .expect("checks")
                .expect("report");
            let json = |r: &DocReport| serde_json::to_string_pretty(r).expect("json");
            assert_eq!(json(&fast), json(&whole), "{topic:?}");
            assert_eq!(
                fast.replays,
                streamed.is_some() || matches!(topic, Topic::BaseMovedReusedOpId),
                "{topic:?}: {}",
                json(&fast)
            );
            let conflicts = matches!(topic, Topic::BaseMovedClash);
            assert_eq!(fast.rebases, !conflicts, "{topic:?}: {}", json(&fast));
        }
    }

    /// The blocks the branch changed, compared by their bytes, are those
    /// whose block hashes differ, innermost first, whatever the line ends.
    #[test]
    fn branch_blocks_are_the_blocks_whose_hashes_differ() {
        let base = "# A\n\n::claim{id=\"c\"}\nx\n::\n\n## B\n\n::claim{id=\"d\"}\ny\n::\n";
        let heads = [
            base.to_string(),
            base.replace("x\n", "x2\n"),
            base.replace("## B", "## B2"),
            format!("{base}\n::claim{{id=\"e\"}}\nz\n::\n"),
            base.replace("::claim{id=\"d\"}\ny\n::\n", ""),
            base.replace('\n', "\r\n"),
            String::new(),
        ];
        let parse = noma_core::doc::parse;
        for mb in [base.to_string(), base.replace('\n', "\r\n"), String::new()] {
            for head in &heads {
                let head_ast = parse(head);
                let hashes = block_hashes(head, &head_ast);
                let diffs = replay::diff_hashes(&block_hashes(&mb, &parse(&mb)), &hashes);
                let ids: Vec<&str> = diffs.iter().map(|b| b.id.as_str()).collect();
                let keep = innermost(
                    &ids,
                    hashes.iter().map(|h| (h.id.as_str(), h.parent.as_deref())),
                );
                let want: Vec<(String, &str)> = diffs
                    .iter()
                    .filter(|b| keep.contains(b.id.as_str()))
                    .map(|b| {
                        let change = match b.change {
                            "missing" => "removed",
                            "extra" => "added",
                            _ => "changed",
                        };
                        (b.id.clone(), change)
                    })
                    .collect();
                let mb_tree = parse(&mb);
                for tree in [None, Some(&mb_tree)] {
                    let got: Vec<(String, &str)> =
                        branch_blocks((Some(&mb), tree), head, &head_ast)
                            .into_iter()
                            .map(|b| (b.id, b.change))
                            .collect();
                    assert_eq!(got, want, "{mb:?} -> {head:?}");
                }
            }
        }
    }

    /// The branch's record count [`Branch::appended_records`] found.
    fn records(a: Option<(Appended, replay::Trees)>) -> Option<usize> {
        a.map(|(a, _)| match a {
            Appended::Records(n) => n,
            Appended::Rebased(s, _) => s.reconciled.ours_new,
            Appended::Signed(n, _) => n,
        })
    }

    /// `--write` of a base that moved on: the streamed check writes the
    /// whole check's bytes (HEAD's transcript, then main's record
    /// re-applied). (tests/it/reconcile_cli.rs streams the blobs through
    /// `git cat-file` too.)
    #[test]
    fn the_streamed_rebase_writes_what_the_whole_rebase_writes() {
        let tmp = tempfile::tempdir().expect("tempdir");
        fork(tmp.path(), Topic::BaseMoved);
        let repo = Repo::discover(tmp.path()).expect("repo");
        let cache = BlockCache::disabled();
        let head_t = std::fs::read(tmp.path().join("d.noma.patches")).expect("read");
        let mut written = Vec::new();
        for whole in [false, true] {
            git(tmp.path(), &["checkout", "-q", "--", "."]);
            let (mut branch, _) = Branch::new((&repo, &cache), "main", true).expect("branch");
            branch.provenance_off = !whole;
            let rep = branch.check_document("d.noma").expect("checks");
            let rep = rep.expect("report");
            assert!(rep.written && rep.rebases, "{rep:?}");
            assert_eq!((rep.branch_records, rep.base_records), (1, 1));
            let read = |p: &str| std::fs::read(tmp.path().join(p)).expect("read");
            let (doc, t) = (read("d.noma"), read("d.noma.patches"));
            assert!(t.starts_with(&head_t) && t.len() > head_t.len());
            written.push((doc, t));
        }
        assert_eq!(written[0], written[1], "streamed and whole write the same");
    }

    /// The history's replay is remembered by blob id and document, and a
    /// remembered one is not replayed again: even a broken history passes
    /// once the cache says it replays (which only a hand-made row can).
    #[test]
    fn the_history_replay_is_remembered_in_the_cache() {
        for topic in [Topic::Append(2), Topic::TamperedHistory, Topic::ReusedOpId] {
            let tmp = tempfile::tempdir().expect("tempdir");
            fork(tmp.path(), topic);
            let repo = Repo::discover(tmp.path()).expect("repo");
            let cache = BlockCache::open(tmp.path());
            let (branch, _) = Branch::new((&repo, &cache), "main", false).expect("branch");
            let mb_t = repo
                .blob_id_at(branch.merge_base, "d.noma.patches")
                .unwrap()
                .unwrap();
            let mb_doc =
                String::from_utf8(branch.blob(branch.merge_base, "d.noma").unwrap()).unwrap();
            let key = (
                mb_t.as_bytes(),
                noma_core::doc::hash::sha256_hex(mb_doc.as_bytes()),
            );
            let head_doc = std::fs::read_to_string(tmp.path().join("d.noma")).expect("read");
            let check = || {
                let mut finder = crate::doc_finder(Some(&repo), "d.noma", Vec::new());
                records(branch.appended_records(
                    ["d.noma"; 2],
                    Some(&mb_doc),
                    &head_doc,
                    &mut finder,
                ))
            };
            match topic {
                Topic::TamperedHistory => {
                    assert_eq!(check(), None);
                    assert!(
                        !cache.replay_known(key.0, &key.1),
                        "a failed replay is not remembered"
                    );
                    cache.remember_replay(key.0, &key.1);
                    assert_eq!(check(), Some(1), "the remembered answer is used");
                    // Unless the branch commits a cache: then it is not
                    // this machine's memory.
                    std::fs::write(tmp.path().join(".noma/cache/forged"), "x").unwrap();
                    git(tmp.path(), &["add", "-f", ".noma/cache/forged"]);
                    git(tmp.path(), &["commit", "-q", "-m", "forged cache"]);
                    let (branch, _) = Branch::new((&repo, &cache), "main", false).expect("branch");
                    assert!(branch.cache.is_none());
                    let mut finder = crate::doc_finder(Some(&repo), "d.noma", Vec::new());
                    let got = branch.appended_records(
                        ["d.noma"; 2],
                        Some(&mb_doc),
                        &head_doc,
                        &mut finder,
                    );
                    assert!(got.is_none());
                }
                Topic::ReusedOpId => {
                    // Remembered or not, a reused op_id is the whole
                    // check's to name.
                    assert_eq!(check(), None);
                    cache.remember_replay(key.0, &key.1);
                    assert_eq!(check(), None);
                }
                _ => {
                    assert!(!cache.replay_known(key.0, &key.1));
                    assert_eq!(check(), Some(2));
                    assert!(cache.replay_known(key.0, &key.1));
                    assert_eq!(check(), Some(2));
                }
            }
        }
    }

    /// A check that writes nothing, threads as the machine allows.
    const READ: Run = Run {
        write: false,
        jobs: None,
    };

    #[test]
    fn repository_level_failures_keep_their_messages() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        let e = check_branch(d, "main", READ, &BlockCache::disabled()).unwrap_err();
        assert!(matches!(e, ReconcileError::UnbornHead), "{e:?}");
        assert_eq!(e.to_string(), "HEAD has no commit");
        std::fs::write(d.join("a.noma"), "# A\n").expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "one"]);
        let e = check_branch(d, "nope", READ, &BlockCache::disabled()).unwrap_err();
        assert!(matches!(e, ReconcileError::UnknownBase { .. }), "{e:?}");
        assert!(e.to_string().starts_with("`nope` is not a revision"), "{e}");
        // A second root commit shares no history with main.
        git(d, &["checkout", "-q", "--orphan", "other"]);
        git(d, &["commit", "-q", "-m", "two"]);
        let e = check_branch(d, "main", READ, &BlockCache::disabled()).unwrap_err();
        assert_eq!(e.to_string(), "HEAD and main have no merge base");
        git(d, &["checkout", "-q", "main"]);
        assert!(check_branch(d, "main", READ, &BlockCache::disabled())
            .expect("reports")
            .is_empty());
    }
}

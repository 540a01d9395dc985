//! Replay with git history: where `noma replay`'s base comes from, and the
//! replay of a document and transcript as committed at a revision.
//!
//! # Where the base comes from
//!
//! Replay starts from the document as it was before the first applied
//! record (that record's `pre_sha256`):
//!
//! 1. `--base PATH` when given;
//! 2. the document itself, when its sha256 is that `pre_sha256` (a
//!    transcript that has not moved the document yet), or the empty
//!    document for a genesis record (left to the replay itself);
//! 3. otherwise the version of the document in its git history whose
//!    sha256 is that `pre_sha256`: the usual case of a transcript started
//!    after the document was first committed. The history searched is the
//!    one reachable from HEAD and every ref ([`doc_finder`]),
//!    bounded by [`crate::git::HISTORY_LIMIT`] commits, by content: under
//!    the document's current path first, then under any name (a document
//!    moved or copied since).
//!
//! Outside a repository, or when no version has that sha256, the replay
//! reports the divergence and the [`BaseLookup`] says why. The lookup
//! happens here, in the git shell; the engine (`noma_store::engine`)
//! reads no repository.
//!
//! [`replay_at_rev`] replays the document and its transcript *as committed
//! at a revision* (paths follow git's `REV:path` rule), with the base
//! searched in the history reachable from that revision; nothing is read
//! from the working tree, so no pending write is reported.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::git::blob::{self, BlobError};
use crate::git::repo::Repo;
use noma_core::doc::hash::sha256_hex;
use noma_core::transcript::replay::{self, Report};
use noma_store::engine::{self, EngineError};

/// A base looked up in git (serialised as `noma replay`'s `base_lookup`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaseLookup {
    /// The sha256 the base must have (the first applied record's pre_sha256).
    pub sha256: String,
    /// Whether a version with that sha256 was found.
    pub found: bool,
    /// What was searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub searched: Option<String>,
    /// Why git could not be searched (outside a repository, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_searched: Option<String>,
}

/// Where a base was looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Searched {
    /// The work tree's repository, every ref; `shallow` notes a shallow
    /// clone's missing history (empty when complete).
    AllRefs {
        /// The repository's shallow-clone note.
        shallow: String,
    },
    /// The history reachable from one revision.
    From(String),
}

impl std::fmt::Display for Searched {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Searched::AllRefs { shallow } => write!(
                f,
                "the git history reachable from HEAD and every ref (by content, under any name){shallow}"
            ),
            Searched::From(rev) => write!(
                f,
                "the git history reachable from {rev} (by content, under any name)"
            ),
        }
    }
}

/// Why no history was searched for a base.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotSearched {
    /// The document is not in a repository.
    #[error("not in a git repository")]
    NoRepository,
    /// The document is outside the repository's working tree.
    #[error("{} is not in the repository's working tree", .0.display())]
    OutsideWorkTree(PathBuf),
    /// The revision names no commit.
    #[error("{0} is not a commit")]
    NotACommit(String),
}

/// Why a revision's document and transcript could not be replayed.
#[derive(Debug, thiserror::Error)]
pub enum RevError {
    /// The revision has the document but no transcript at that path.
    #[error("{spec}: no transcript at that revision (the document {document} is there; name another with --transcript)")]
    NoTranscript {
        /// The transcript's `REV:path`.
        spec: String,
        /// The document's `REV:path`.
        document: String,
    },
    /// A `REV:path` could not be read.
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// The repository could not be opened or searched.
    #[error(transparent)]
    Git(#[from] crate::git::repo::GitError),
    /// The transcript's blob id does not parse.
    #[error(transparent)]
    Oid(#[from] crate::git::ParseOidError),
    /// The transcript's blob cannot be read.
    #[error("{spec}: cannot read: {error}")]
    Read {
        /// The transcript's `REV:path`.
        spec: String,
        /// What the system said.
        error: std::io::Error,
    },
}

impl BaseLookup {
    fn new(sha256: String, found: bool, searched: Result<Searched, NotSearched>) -> BaseLookup {
        let (searched, not_searched) = match searched {
            Ok(s) => (Some(s.to_string()), None),
            Err(r) => (None, Some(r.to_string())),
        };
        BaseLookup {
            sha256,
            found,
            searched,
            not_searched,
        }
    }
}

/// What [`replay_at_rev`] read (serialised as `noma replay`'s `rev`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RevRead {
    /// The revision as given.
    pub rev: String,
    /// The commit it names; `None` for a tree-ish that is no commit.
    pub commit: Option<String>,
    /// The document's `REV:path`.
    pub document: String,
    /// The transcript's `REV:path`.
    pub transcript: String,
}

/// The sha256 of the base replay needs from outside, if any: the first
/// applied record's `pre_sha256`, unless the document itself is at that
/// state or it is the empty document's (a genesis record, which replay
/// starts from the empty text). None too when the records cannot be read
/// up to the first applied one (replay reports that line).
pub(crate) fn wanted_base(first_pre: Option<&str>, doc: &str) -> Option<String> {
    let pre = first_pre?;
    (pre != sha256_hex(doc.as_bytes()) && pre != sha256_hex(b"")).then(|| pre.to_string())
}

/// The version of the working-tree document `doc` whose sha256 is `sha`,
/// from its git history, and what was searched (Err: why nothing was).
/// The versions where its transcript (`transcript`, default
/// [`engine::default_transcript_path`]) started are tried first
/// ([`Repo::transcript_start_documents`]): a transcript's first record
/// usually starts there, and the search by content reads every version.
pub(crate) fn find_in_worktree_history(
    doc: &Path,
    transcript: Option<&Path>,
    sha: &str,
) -> (Option<String>, Result<Searched, NotSearched>) {
    let dir = match doc.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    find_in_repo_history(Repo::discover(dir).ok().as_ref(), doc, transcript, sha)
}

/// [`find_in_worktree_history`] in the repository `repo` (None: not in
/// one), for a caller that reads more of it with the same handle (whose
/// object cache then serves the commits this search read).
pub(crate) fn find_in_repo_history(
    repo: Option<&Repo>,
    doc: &Path,
    transcript: Option<&Path>,
    sha: &str,
) -> (Option<String>, Result<Searched, NotSearched>) {
    let Some(repo) = repo else {
        return (None, Err(NotSearched::NoRepository));
    };
    let Some(rel) = relative_path(repo, doc) else {
        return (None, Err(NotSearched::OutsideWorkTree(doc.to_path_buf())));
    };
    let tpath: PathBuf =
        transcript.map_or_else(|| engine::default_transcript_path(doc), Into::into);
    let known = relative_path(repo, &tpath)
        .and_then(|t| {
            repo.transcript_start_documents(&rel, &t, crate::git::HISTORY_LIMIT)
                .ok()
        })
        .unwrap_or_default();
    let found = doc_finder(Some(repo), &rel, known)(sha);
    let shallow = repo.shallow_note().to_string();
    (found, Ok(Searched::AllRefs { shallow }))
}

/// The version of a document in the repository's history whose sha256 is
/// `sha`: at `path` first, else under any name (a rename, a copy), by
/// [`Repo::find_document`].
pub fn find_version(repo: &Repo, path: &str, sha: &str) -> Option<Vec<u8>> {
    repo.find_document(&repo.history_starts(), &[path], sha)
        .ok()
        .flatten()
}

/// A document finder for replay and the reconciliation: the given versions first,
/// then the path's history in `repo`.
pub fn doc_finder<'a>(
    repo: Option<&'a Repo>,
    path: &'a str,
    known: Vec<Vec<u8>>,
) -> impl FnMut(&str) -> Option<String> + 'a {
    move |sha: &str| {
        if sha == noma_core::doc::hash::EMPTY_SHA256 {
            // A genesis record's state: the empty document.
            return Some(String::new());
        }
        known
            .iter()
            .find(|d| sha256_hex(d) == sha)
            .cloned()
            .or_else(|| repo.and_then(|r| find_version(r, path, sha)))
            .and_then(|b| String::from_utf8(b).ok())
    }
}

/// `doc`'s repository-relative path, also when it is absent (a removed
/// document, whose tombstone replays from its history): its directory's
/// path and its name.
fn relative_path(repo: &Repo, doc: &Path) -> Option<String> {
    if let Some(rel) = repo.relative_path(doc) {
        return Some(rel);
    }
    let name = doc.file_name()?.to_str()?;
    let dir = doc
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let root = std::fs::canonicalize(repo.workdir()?).ok()?;
    if std::fs::canonicalize(dir).ok()? == root {
        return Some(name.to_string());
    }
    Some(format!("{}/{name}", repo.relative_path(dir)?))
}

/// Replays the working-tree document `doc` against its transcript
/// (`transcript`, default [`engine::default_transcript_path`]) through
/// [`engine::replay_file`], from `base` when given, else from the version
/// [`wanted_base`] asks for, found by [`find_in_worktree_history`]. Returns
/// the pending-write notes, the report, and the lookup when one was made.
pub fn replay_worktree(
    doc: &Path,
    transcript: Option<&Path>,
    base: Option<&Path>,
) -> Result<(Vec<String>, Report, Option<BaseLookup>), EngineError> {
    let mut lookup: Option<BaseLookup> = None;
    let mut find = |first_pre: Option<&str>, text: &str| -> Option<String> {
        let sha = wanted_base(first_pre, text)?;
        let (found, searched) = find_in_worktree_history(doc, transcript, &sha);
        lookup = Some(BaseLookup::new(sha, found.is_some(), searched));
        found
    };
    let (notes, report) = engine::replay_file(doc, transcript, base, &mut find)?;
    Ok((notes, report, lookup))
}

/// Replays the document `doc` and its transcript (`transcript`, default
/// [`engine::default_transcript_path`]) as committed at `rev`, paths taken
/// relative to `cwd` by git's `REV:path` rule. Err: a message naming what
/// could not be read.
pub fn replay_at_rev(
    cwd: &Path,
    rev: &str,
    doc: &Path,
    transcript: Option<&Path>,
) -> Result<(Report, Option<BaseLookup>, RevRead), RevError> {
    let doc_read = blob::read_rev_text(cwd, rev, doc);
    let tpath: PathBuf =
        transcript.map_or_else(|| engine::default_transcript_path(doc), Into::into);
    // The transcript is read a line at a time from its blob, never whole.
    let tfile = match blob::locate_rev_path(cwd, rev, &tpath) {
        Ok(f) => f,
        Err(e) => {
            return Err(match (e, doc_read) {
                (BlobError::NotFound { spec, .. }, Ok((dfile, _))) => RevError::NoTranscript {
                    spec,
                    document: dfile.spec,
                },
                (_, Err(d)) => RevError::Blob(d),
                (other, _) => RevError::Blob(other),
            })
        }
    };
    let repo = Repo::open_from(cwd)?;
    // A tree-ish that is no commit has no history to search.
    let commit = repo.resolve(rev).ok();
    let id: crate::git::Oid = tfile.oid.parse()?;
    let unreadable = |error| RevError::Read {
        spec: tfile.spec.clone(),
        error,
    };
    let mut reader = repo.blob_reader(id).map_err(unreadable)?;
    let (dfile, text) = match doc_read {
        Ok(read) => read,
        // A removed document: its tombstone replays to the empty text.
        Err(BlobError::NotFound { spec, .. })
            if noma_core::transcript::tombstone::removal_in(&mut reader)
                .is_ok_and(|r| r.is_some()) =>
        {
            (removed_document(spec, &tfile), String::new())
        }
        Err(e) => return Err(e.into()),
    };
    std::io::Seek::rewind(&mut reader).map_err(unreadable)?;
    let first_pre = replay::first_applied_pre_sha256_in(&mut reader);
    std::io::Seek::rewind(&mut reader).map_err(unreadable)?;
    let lookup = match wanted_base(first_pre.as_deref(), &text) {
        None => None,
        Some(sha) => {
            let found = match commit {
                Some(c) => repo
                    .find_document(&[c], &[dfile.path.as_str()], &sha)?
                    .and_then(|b| String::from_utf8(b).ok()),
                None => None,
            };
            Some((sha, found))
        }
    };
    let base = lookup.as_ref().and_then(|(_, f)| f.clone());
    let report = replay::replay_reader(&mut reader, base.as_deref(), &text);
    let lookup = lookup.map(|(sha256, found)| {
        let searched = match commit {
            Some(_) => Ok(Searched::From(rev.to_string())),
            None => Err(NotSearched::NotACommit(rev.to_string())),
        };
        BaseLookup::new(sha256, found.is_some(), searched)
    });
    let read = RevRead {
        rev: rev.to_string(),
        commit: commit.map(|c| c.to_string()),
        document: dfile.spec,
        transcript: tfile.spec,
    };
    Ok((report, lookup, read))
}

/// The committed file a tombstone `tfile` stands for: the document
/// `spec` names, removed, with no blob and no bytes.
fn removed_document(spec: String, tfile: &blob::RevFile) -> blob::RevFile {
    let path = noma_core::transcript::document_path(&tfile.path).unwrap_or(&tfile.path);
    blob::RevFile {
        oid: String::new(),
        spec,
        path: path.to_string(),
        bytes: Vec::new(),
    }
}

/// How to repair a transcript two branches were joined into (a merge
/// without the driver, which diverges where the second begins), or `None`
/// when the transcript (`transcript`, default
/// [`engine::default_transcript_path`]) cannot be read or shows no join.
pub fn join_advice(doc: &Path, transcript: Option<&Path>) -> Option<String> {
    let tpath: PathBuf =
        transcript.map_or_else(|| engine::default_transcript_path(doc), Into::into);
    let t = noma_store::fsio::read_regular(&tpath).ok()?;
    let join = noma_merge::joined::find_join(&t)?;
    Some(noma_merge::joined::advice(&doc.to_string_lossy(), join))
}

#[cfg(test)]
mod tests {
    use super::*;
    use noma_testutil::git;

    #[test]
    fn the_base_is_wanted_only_when_neither_the_document_nor_empty() {
        let doc = "# A\n";
        let other = sha256_hex(b"# B\n");
        assert_eq!(wanted_base(None, doc), None);
        assert_eq!(wanted_base(Some(&sha256_hex(doc.as_bytes())), doc), None);
        assert_eq!(wanted_base(Some(&sha256_hex(b"")), doc), None);
        assert_eq!(wanted_base(Some(&other), doc), Some(other));
    }

    #[test]
    fn outside_a_repository_nothing_is_searched() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let doc = tmp.path().join("a.noma");
        std::fs::write(&doc, "# A\n").expect("write");
        // Fails rather than passing vacuously where the temp dir sits in a repository.
        assert!(
            Repo::discover(tmp.path()).is_err(),
            "{} is inside a git repository",
            tmp.path().display()
        );
        let (found, searched) = find_in_worktree_history(&doc, None, &sha256_hex(b"# B\n"));
        assert_eq!(found, None);
        assert_eq!(searched, Err(NotSearched::NoRepository));
        assert_eq!(
            NotSearched::NoRepository.to_string(),
            "not in a git repository"
        );
    }

    #[test]
    fn a_committed_version_is_found_by_content_even_under_an_old_name() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let d = tmp.path();
        git(d, &["init", "-q", "-b", "main"]);
        std::fs::write(d.join("old.noma"), "# Old\n").expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "one"]);
        git(d, &["mv", "old.noma", "new.noma"]);
        std::fs::write(d.join("new.noma"), "# New\n").expect("write");
        git(d, &["add", "-A"]);
        git(d, &["commit", "-q", "-m", "two"]);
        let doc = d.join("new.noma");
        let (found, searched) = find_in_worktree_history(&doc, None, &sha256_hex(b"# Old\n"));
        assert_eq!(found.as_deref(), Some("# Old\n"));
        let searched = searched.expect("searched").to_string();
        assert!(
            searched.starts_with("the git history reachable from HEAD"),
            "{searched}"
        );
        let (found, _) = find_in_worktree_history(&doc, None, &sha256_hex(b"# Never\n"));
        assert_eq!(found, None);
    }

    #[test]
    fn a_lookup_records_why_nothing_was_searched() {
        let l = BaseLookup::new("s".into(), false, Err(NotSearched::NotACommit("t".into())));
        assert_eq!(
            (l.searched, l.not_searched),
            (None, Some("t is not a commit".to_string()))
        );
        let l = BaseLookup::new("s".into(), true, Ok(Searched::From("v1".into())));
        assert_eq!(
            (l.searched, l.not_searched),
            (
                Some("the git history reachable from v1 (by content, under any name)".to_string()),
                None
            )
        );
    }
}
